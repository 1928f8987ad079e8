package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/seqd/seqd/testenv"
)

// devZKWarmup is how long a throwaway ZooKeeper is loaded before the first
// case, while its JVM compiles.
const devZKWarmup = 3 * time.Second

// StartDevZK starts a throwaway standalone ZooKeeper, behind a delay proxy
// that adds cfg.RTT of round trip when it is set, and points cfg at it: its
// servers, its process (for its CPU) and its own client address (for its
// request counters, asked directly). It says what it started on progress.
// An error is ErrUnavailable, or ctx's.
func StartDevZK(ctx context.Context, cfg *Config, progress io.Writer) (stop func(), err error) {
	zkc, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unavailablef("start ZooKeeper: %w", err)
	}
	cfg.Servers = zkc.Servers()
	cfg.ZKWarmup = devZKWarmup
	for _, m := range zkc.Members {
		cfg.ZKPIDs = append(cfg.ZKPIDs, m.PID())
		cfg.ZKStats = append(cfg.ZKStats, m.ClientAddr)
	}
	fmt.Fprintf(progress, "ZooKeeper (throwaway, standalone) on %s\n", zkc.ConnectString())
	if cfg.RTT <= 0 {
		return zkc.Stop, nil
	}
	proxy := testenv.NewProxy("zookeeper")
	proxy.SetMaxConns(4*cfg.Clients + 16) // every client of a case, the daemon, the run's own
	addr, err := proxy.Forward(zkc.Servers()[0])
	if err != nil {
		zkc.Stop()
		return nil, unavailablef("the delay proxy: %w", err)
	}
	// All of the round trip on the way there: one timer per chunk, not two
	// half as long (Go's timers overshoot short waits by up to a
	// millisecond on some hosts).
	proxy.DelayOneWay(testenv.ToTarget, cfg.RTT)
	cfg.Servers = []string{addr}
	cfg.RTTMeasured = addedRTT(addr, zkc.Servers()[0])
	fmt.Fprintf(progress, "a delay proxy on %s adds %v of round trip to it (measured: %v)\n", addr, cfg.RTT, cfg.RTTMeasured.Round(10*time.Microsecond))
	return func() {
		proxy.Close()
		zkc.Stop()
	}, nil
}

// addedRTT is what the proxy at via adds to a round trip with the server
// at direct, probed with a srvr four-letter word.
func addedRTT(via, direct string) time.Duration {
	return testenv.AddedRTT(via, direct, func(addr string) error {
		_, err := testenv.FourLetter(addr, "srvr", 2*time.Second)
		return err
	})
}

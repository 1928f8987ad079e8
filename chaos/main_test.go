package chaos

import (
	"flag"
	"os"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("chaos.seed", 0, "seed of the run (0: from the clock, printed)")

var runSeed uint64

// chaosSeed is the run's seed: -chaos.seed, or one drawn once per run.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	if runSeed == 0 {
		runSeed = *seedFlag
		if runSeed == 0 {
			runSeed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
		}
	}
	t.Logf("seed %d (rerun with -args -chaos.seed=%d)", runSeed, runSeed)
	return runSeed
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(clientEnv); cfg != "" {
		os.Exit(clientMain(cfg))
	}
	code := m.Run()
	// The seqd binary built for the run is tens of megabytes: leave nothing
	// behind in the temporary directory.
	if buildOnce.dir != "" {
		os.RemoveAll(buildOnce.dir)
	}
	os.Exit(code)
}

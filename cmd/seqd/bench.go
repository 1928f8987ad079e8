package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/bench"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/zklock"
)

// Bounds of the bench's flags.
const (
	minBenchDuration = 10 * time.Millisecond
	maxBenchDuration = time.Hour
	maxBenchClients  = 1000
	maxBenchRTT      = time.Second
	maxBenchRounds   = 1000
	maxBenchScale    = 1000000
)

func benchCommand() *cli.Command {
	flags := []cli.Flag{
		zkFlag(true),
		&cli.BoolFlag{Name: "dev", EnvVars: []string{"SEQD_DEV"},
			Usage: "start a throwaway local ZooKeeper and measure on it, with its CPU and requests per cycle (--zk and --addr are then ignored)"},
		&cli.DurationFlag{Name: "rtt", EnvVars: []string{"SEQD_RTT"},
			Usage: fmt.Sprintf("with --dev: put ZooKeeper behind a delay proxy adding `RTT` of round trip (e.g. 1ms, as to an ensemble on other machines), for every case and the daemon; up to %v", maxBenchRTT)},
		&cli.IntFlag{Name: "clients", Value: 16, EnvVars: []string{"SEQD_CLIENTS"},
			Usage: fmt.Sprintf("`N` clients side by side in the many-clients cases, 1..%d (the one-client cases always run)", maxBenchClients)},
		&cli.DurationFlag{Name: "duration", Value: 5 * time.Second, EnvVars: []string{"SEQD_DURATION"},
			Usage: "measure each case for `DURATION` (10ms..1h), after a warm-up of a fifth of it (at most 1s)"},
		&cli.StringFlag{Name: "cases", EnvVars: []string{"SEQD_CASES"},
			Usage: "which to run, comma-separated: raw (create+delete), gozk (go-zookeeper's zk.Lock), zklock, session (zklock, all clients on one session), http (the daemon); default all"},
		&cli.BoolFlag{Name: "latency", EnvVars: []string{"SEQD_LATENCY"},
			Usage: "measure the latency figures instead of throughput: hand-over on a hot lock, loss detection (session expired → holder told) and crash to successor, each holder and daemon a process of its own"},
		&cli.StringFlag{Name: "scale", EnvVars: []string{"SEQD_SCALE"},
			Usage: fmt.Sprintf("measure what held leases cost a daemon instead of throughput: for each `N` (comma-separated, 1..%d) a fresh daemon, a process of its own, is given N leases by --clients clients, which renew them all for --duration; prints RSS, heap and goroutines per lease and renewals per second", maxBenchScale)},
		&cli.IntFlag{Name: "rounds", Value: 5, EnvVars: []string{"SEQD_ROUNDS"},
			Usage: fmt.Sprintf("with --latency: `N` rounds of each loss and crash figure (each a session timeout or a TTL long), 1..%d; hand-overs are ten times as many", maxBenchRounds)},
		&cli.BoolFlag{Name: "json", EnvVars: []string{"SEQD_JSON"},
			Usage: "print the report as JSON instead of a table"},
		&cli.StringFlag{Name: "addr", EnvVars: []string{"SEQD_ADDR"},
			Usage: "a running daemon's address for the http cases (default: a `seqd serve` started as a process of its own on --zk, as a sidecar runs)"},
		&cli.BoolFlag{Name: "in-process", EnvVars: []string{"SEQD_IN_PROCESS"},
			Usage: "run the http cases' daemon inside the bench's own process instead of as a process of its own (for profiling: not how it is deployed)"},
		&cli.StringFlag{Name: "cpu-profile", EnvVars: []string{"SEQD_CPU_PROFILE"},
			Usage: "write the CPU profile of the daemon the bench starts to `FILE` (with --in-process: of the bench's process); read it with go tool pprof"},
		&cli.StringFlag{Name: "root", Value: zklock.DefaultRoot, EnvVars: []string{"SEQD_ROOT"},
			Usage: "with --addr: the daemon's --root, from under which the bench removes its lock nodes at the end"},
		sessionTimeoutFlag(),
	}
	flags = append(flags, clientSecurityFlags()...)
	flags = append(flags, zkSecurityFlags()...)
	return &cli.Command{
		Name:   "bench",
		Usage:  "measure lock cycles per second and their latency: raw ZooKeeper, zk.Lock, zklock and the daemon's HTTP API, side by side",
		Flags:  flags,
		Before: noArguments,
		Action: func(c *cli.Context) error {
			cfg, err := benchConfig(c)
			if err != nil {
				return err
			}
			if c.Bool("dev") {
				stopOnClosedStderr(c)
				stop, err := bench.StartDevZK(c.Context, &cfg, c.App.ErrWriter)
				switch {
				case c.Context.Err() != nil:
					return interrupted(c.Context, "bench")
				case err != nil:
					return withCode(ExitUnavailable, err)
				}
				defer stop()
			}
			if c.Bool("latency") {
				return benchLatency(c, cfg)
			}
			if c.IsSet("scale") {
				return benchScale(c, cfg)
			}
			rep, err := bench.Run(c.Context, cfg)
			if rep != nil && len(rep.Results) > 0 {
				return printBench(c, rep, err)
			}
			return benchError(c, err)
		},
	}
}

// benchError is how a bench run's error exits.
func benchError(c *cli.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case c.Context.Err() != nil:
		return interrupted(c.Context, "bench")
	case errors.Is(err, bench.ErrUnavailable):
		return withCode(ExitUnavailable, err)
	}
	// The daemon's refusals (401, 403, 503, unreachable) exit as they do
	// for the client commands.
	return clientError(c, err)
}

// benchLatency runs the latency figures and prints what was measured.
func benchLatency(c *cli.Context, cfg bench.Config) error {
	o := bench.LatencyOptions{FaultRounds: c.Int("rounds"), Handovers: 10 * c.Int("rounds")}
	if c.IsSet("session-timeout") {
		o.SessionTimeout = cfg.SessionTimeout
	}
	rep, err := bench.RunLatency(c.Context, cfg, o)
	if rep != nil && len(rep.Figures) > 0 {
		return printBench(c, rep, err)
	}
	return benchError(c, err)
}

// printBench prints what a run measured, as a table or with --json as
// JSON, and exits with err, the run's error (or the print's).
func printBench(c *cli.Context, rep interface {
	WriteTable(io.Writer) error
	WriteJSON(io.Writer) error
}, err error) error {
	write := rep.WriteTable
	if c.Bool("json") {
		write = rep.WriteJSON
	}
	if perr := write(c.App.Writer); err == nil {
		err = perr
	}
	return benchError(c, err)
}

// benchScale runs the scale figures and prints what was measured.
func benchScale(c *cli.Context, cfg bench.Config) error {
	sizes, _ := scaleSizes(c.String("scale")) // checked by benchConfig
	rep, err := bench.RunScale(c.Context, cfg, bench.ScaleOptions{Sizes: sizes, Clients: cfg.Clients, Renewing: cfg.Duration})
	if rep != nil && len(rep.Results) > 0 {
		return printBench(c, rep, err)
	}
	return benchError(c, err)
}

// scaleSizes parses --scale.
func scaleSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxBenchScale {
			return nil, usageErrorf("--scale %q: give lease counts 1..%d, comma-separated (e.g. 10000,100000)", s, maxBenchScale)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// benchConfig checks the command line before anything is touched: every
// mistake is a usage error.
func benchConfig(c *cli.Context) (bench.Config, error) {
	var cfg bench.Config
	n := c.Int("clients")
	if n < 1 || n > maxBenchClients {
		return cfg, usageErrorf("--clients %d is out of range: give 1..%d", n, maxBenchClients)
	}
	d, err := durationFlag(c, "duration", minBenchDuration, maxBenchDuration)
	if err != nil {
		return cfg, err
	}
	st, err := durationFlag(c, "session-timeout", minSessionTimeout, maxSessionTimeout)
	if err != nil {
		return cfg, err
	}
	if r := c.Int("rounds"); r < 1 || r > maxBenchRounds {
		return cfg, usageErrorf("--rounds %d is out of range: give 1..%d", r, maxBenchRounds)
	}
	if c.Bool("latency") {
		for _, f := range []string{"addr", "in-process", "cases", "clients", "duration", "cpu-profile"} {
			if c.IsSet(f) {
				return cfg, usageErrorf("--%s does not go with --latency: the latency figures start their own daemons and seqd lock processes, one holder at a time", f)
			}
		}
	} else if c.IsSet("rounds") {
		return cfg, usageErrorf("--rounds is for --latency")
	}
	if c.IsSet("scale") {
		if _, err := scaleSizes(c.String("scale")); err != nil {
			return cfg, err
		}
		for _, f := range []string{"latency", "addr", "in-process", "cases", "cpu-profile"} {
			if c.IsSet(f) {
				return cfg, usageErrorf("--%s does not go with --scale: the scale figures start a daemon of their own for each size", f)
			}
		}
	}
	kinds, err := bench.ParseKinds(c.String("cases"))
	if err != nil {
		return cfg, usageErrorf("--cases %q: %v", c.String("cases"), err)
	}
	zkSec, err := parseZKSecurity(c)
	if err != nil {
		return cfg, err
	}
	cfg = bench.Config{
		Kinds:          kinds,
		Clients:        n,
		Duration:       d,
		SessionTimeout: st,
		Auth:           zkSec.auth,
		ACL:            zkSec.acl,
		TLS:            zkSec.tls,
		Progress:       c.App.ErrWriter,
		Live:           termtext.IsTerminal(c.App.ErrWriter),
	}
	rtt, err := durationFlag(c, "rtt", 0, maxBenchRTT)
	if err != nil {
		return cfg, err
	}
	if rtt > 0 && !c.Bool("dev") {
		return cfg, usageErrorf("--rtt needs --dev: the bench puts its delay proxy in front of the ZooKeeper it starts")
	}
	cfg.RTT = rtt
	cfg.InProcess = c.Bool("in-process")
	cfg.CPUProfile = c.String("cpu-profile")
	if !cfg.InProcess {
		if cfg.DaemonCommand, err = daemonCommand(c); err != nil {
			return cfg, err
		}
	}
	if c.Bool("dev") {
		if c.IsSet("zk") || c.IsSet("addr") {
			fmt.Fprintln(c.App.ErrWriter, "--dev: measuring on a throwaway ZooKeeper with a daemon the bench starts; --zk and --addr are ignored")
		}
		return cfg, nil
	}
	if cfg.Servers, err = splitServers(c.String("zk")); err != nil {
		return cfg, err
	}
	if s := c.String("addr"); s != "" {
		for _, f := range []string{"in-process", "cpu-profile"} {
			if c.IsSet(f) {
				return cfg, usageErrorf("--%s is for a daemon the bench starts, not for a running one (--addr)", f)
			}
		}
		if cfg.Daemon, err = daemonAddr(s); err != nil {
			return cfg, err
		}
		if cfg.DaemonToken, err = apiToken(c); err != nil {
			return cfg, err
		}
		if cfg.DaemonTLS, err = daemonTLS(c); err != nil {
			return cfg, err
		}
		cfg.DaemonRoot = c.String("root")
	}
	return cfg, nil
}

// daemonCommand is how the bench runs the daemon as a process of its own:
// this very binary's serve, with the ZooKeeper security flags given to the
// bench.
func daemonCommand(c *cli.Context) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, withCode(ExitUnavailable, fmt.Errorf("find the seqd binary to run the daemon: %w", err))
	}
	cmd := []string{exe, "serve"}
	for _, f := range []string{"zk-auth-file", "zk-acl", "zk-tls-ca-file", "zk-tls-cert-file", "zk-tls-key-file"} {
		if v := c.String(f); v != "" {
			cmd = append(cmd, "--"+f, v)
		}
	}
	return cmd, nil
}

// daemonTLS is the client TLS configuration from --cacert, --cert and
// --key, nil without them.
func daemonTLS(c *cli.Context) (*tls.Config, error) {
	if c.String("cacert") == "" && c.String("cert") == "" && c.String("key") == "" {
		return nil, nil
	}
	cfg, err := security.ClientTLS(c.String("cacert"), c.String("cert"), c.String("key"))
	if err != nil {
		return nil, usageErrorf("TLS: %v", err)
	}
	return cfg, nil
}

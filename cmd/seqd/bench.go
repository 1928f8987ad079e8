package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/bench"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/zklock"
)

// Bounds of the bench's flags.
const (
	minBenchDuration = 10 * time.Millisecond
	maxBenchDuration = time.Hour
	maxBenchClients  = 1000
)

func benchCommand() *cli.Command {
	flags := []cli.Flag{
		zkFlag(true),
		&cli.BoolFlag{Name: "dev", EnvVars: []string{"SEQD_DEV"},
			Usage: "start a throwaway local ZooKeeper and measure on it (--zk and --addr are then ignored)"},
		&cli.IntFlag{Name: "clients", Value: 16, EnvVars: []string{"SEQD_CLIENTS"},
			Usage: fmt.Sprintf("`N` clients side by side in the many-clients cases, 1..%d (the one-client cases always run)", maxBenchClients)},
		&cli.DurationFlag{Name: "duration", Value: 5 * time.Second, EnvVars: []string{"SEQD_DURATION"},
			Usage: "measure each case for `DURATION` (10ms..1h), after a warm-up of a fifth of it (at most 1s)"},
		&cli.StringFlag{Name: "cases", EnvVars: []string{"SEQD_CASES"},
			Usage: "which to run, comma-separated: raw (create+delete), gozk (go-zookeeper's zk.Lock), zklock, http (the daemon); default all"},
		&cli.BoolFlag{Name: "json", EnvVars: []string{"SEQD_JSON"},
			Usage: "print the report as JSON instead of a table"},
		&cli.StringFlag{Name: "addr", EnvVars: []string{"SEQD_ADDR"},
			Usage: "a running daemon's base URL for the http cases (default: a daemon started in process on loopback, on --zk)"},
		&cli.StringFlag{Name: "root", Value: zklock.DefaultRoot, EnvVars: []string{"SEQD_ROOT"},
			Usage: "with --addr: the daemon's --root, from under which the bench removes its lock nodes at the end"},
		sessionTimeoutFlag(),
	}
	flags = append(flags, clientSecurityFlags()...)
	flags = append(flags, zkSecurityFlags()...)
	return &cli.Command{
		Name:  "bench",
		Usage: "measure lock cycles per second and their latency: raw ZooKeeper, zk.Lock, zklock and the daemon's HTTP API, side by side",
		Flags: flags,
		Action: func(c *cli.Context) error {
			cfg, err := benchConfig(c)
			if err != nil {
				return err
			}
			if c.Bool("dev") {
				zkc, err := testenv.Start(c.Context, testenv.Options{})
				if err != nil {
					if c.Context.Err() != nil {
						return interrupted(c.Context, "bench")
					}
					return withCode(ExitUnavailable, fmt.Errorf("start ZooKeeper: %w", err))
				}
				defer zkc.Stop()
				cfg.Servers = zkc.Servers()
				fmt.Fprintf(c.App.ErrWriter, "ZooKeeper (throwaway, standalone) on %s\n", zkc.ConnectString())
			}
			rep, err := bench.Run(c.Context, cfg)
			if rep != nil && len(rep.Results) > 0 {
				var perr error
				if c.Bool("json") {
					perr = rep.WriteJSON(c.App.Writer)
				} else {
					perr = rep.WriteTable(c.App.Writer)
				}
				if err == nil {
					err = perr
				}
			}
			switch {
			case err == nil:
				return nil
			case c.Context.Err() != nil:
				return interrupted(c.Context, "bench")
			case errors.Is(err, bench.ErrUnavailable):
				return withCode(ExitUnavailable, err)
			}
			// The daemon's refusals (401, 403, 503, unreachable) exit as
			// they do for the client commands.
			return clientError(c, err)
		},
	}
}

// benchConfig checks the command line before anything is touched: every
// mistake is a usage error.
func benchConfig(c *cli.Context) (bench.Config, error) {
	var cfg bench.Config
	if c.NArg() > 0 {
		return cfg, usageErrorf("bench takes no arguments, got %q", c.Args().Slice())
	}
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
		Live:           isTerminal(c.App.ErrWriter),
	}
	if c.Bool("dev") {
		if c.IsSet("zk") || c.IsSet("addr") {
			fmt.Fprintln(c.App.ErrWriter, "--dev: measuring on a throwaway ZooKeeper with a daemon in process; --zk and --addr are ignored")
		}
		return cfg, nil
	}
	if cfg.Servers, err = splitServers(c.String("zk")); err != nil {
		return cfg, err
	}
	if s := c.String("addr"); s != "" {
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

// isTerminal reports whether w is a terminal, where progress lines are
// rewritten in place.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

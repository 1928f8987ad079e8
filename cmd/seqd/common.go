package main

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/seqd/seqd/zklock"
)

// Flags shared by the commands that talk to ZooKeeper.

// zkFlag is --zk; with a default, or (serve) without one: the action then
// insists on it, since urfave/cli's own "Required" error is not a usage error.
func zkFlag(withDefault bool) *cli.StringFlag {
	f := &cli.StringFlag{Name: "zk", Usage: "ZooKeeper servers, host:port[,host:port…]", EnvVars: []string{"SEQD_ZK"}}
	if withDefault {
		f.Value = "127.0.0.1:2181"
	}
	return f
}

// The roots of the three kinds, one flag each, the same in every command:
// --root (locks), --semaphore-root and --election-root. They must not nest.
func rootFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "root", Value: zklock.DefaultRoot, Usage: "znode under which lock nodes live", EnvVars: []string{"SEQD_ROOT"}}
}

func semaphoreRootFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "semaphore-root", Value: zklock.DefaultSemaphoreRoot, Usage: "znode under which semaphore nodes live", EnvVars: []string{"SEQD_SEMAPHORE_ROOT"}}
}

func electionRootFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "election-root", Value: zklock.DefaultElectionRoot, Usage: "znode under which election nodes live", EnvVars: []string{"SEQD_ELECTION_ROOT"}}
}

// checkRoots refuses roots of c's command that nest (exit 64).
func checkRoots(c *cli.Context, flags ...string) error {
	var roots []zklock.Root
	for _, f := range flags {
		roots = append(roots, zklock.Root{What: "--" + f, Path: c.String(f)})
	}
	if err := zklock.CheckRoots(roots...); err != nil {
		return usageErrorf("%s", userMessage(err))
	}
	return nil
}

func sessionTimeoutFlag() *cli.DurationFlag {
	return &cli.DurationFlag{Name: "session-timeout", Value: zklock.DefaultSessionTimeout, EnvVars: []string{"SEQD_SESSION_TIMEOUT"},
		Usage: "ZooKeeper session `TIMEOUT` to ask for, 1s..10m (the server may negotiate another)"}
}

// Session timeouts ZooKeeper can be asked for.
const (
	minSessionTimeout = time.Second
	maxSessionTimeout = 10 * time.Minute
)

func tokenModeFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "token-mode", Value: "zxid", Usage: "token mode: zxid (czxid of the contender) or version (dense per-lock counter)", EnvVars: []string{"SEQD_TOKEN_MODE"}}
}

// tokenMode reads --token-mode.
func tokenMode(c *cli.Context) (zklock.TokenMode, error) {
	s := c.String("token-mode")
	mode, err := zklock.ParseTokenMode(s)
	if err != nil {
		return 0, usageErrorf("--token-mode %q is not a token mode: want zxid or version", s)
	}
	return mode, nil
}

// durationFlag reads the duration flag name and checks that it lies in
// lo..hi (hi 0: no upper bound). Every command validates its durations
// here, so that a bad one reads the same everywhere: exit 64 and a sentence.
// lockDelayFlag is --lock-delay, with the command's own usage.
func lockDelayFlag(usage string) cli.Flag {
	return &cli.DurationFlag{Name: "lock-delay", Usage: usage, EnvVars: []string{"SEQD_LOCK_DELAY"}}
}

func durationFlag(c *cli.Context, name string, lo, hi time.Duration) (time.Duration, error) {
	d := c.Duration(name)
	var rng string
	switch {
	case hi > 0:
		rng = termtext.Duration(lo) + ".." + termtext.Duration(hi)
	case lo > 0:
		rng = termtext.Duration(lo) + " or more"
	default:
		rng = "0 or a duration like 30s"
	}
	switch {
	case d < 0:
		return 0, usageErrorf("--%s %s is negative; give %s", name, termtext.Duration(d), rng)
	case d == 0 && lo > 0:
		return 0, usageErrorf("--%s must be more than zero; give %s", name, rng)
	case d < lo || (hi > 0 && d > hi):
		return 0, usageErrorf("--%s %s is out of range: give %s", name, termtext.Duration(d), rng)
	}
	return d, nil
}

func logFormatFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json", EnvVars: []string{"SEQD_LOG_FORMAT"}}
}

// splitServers parses the --zk list.
func splitServers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(p); err != nil {
			return nil, usageErrorf("--zk %q: %q is not host:port", s, p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, usageErrorf("--zk is empty: give host:port[,host:port…]")
	}
	return out, nil
}

// newLogger makes the process logger on w, logging level and above.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", format)
}

// logLevel parses --log-level.
func logLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usageErrorf("--log-level %q: want debug, info, warn or error", s)
}

// The token floor flags: where tokens start on a root that records no mark
// yet, and the file that remembers what was issued (see seqd floor).
func tokenFloorFlag() *cli.Uint64Flag {
	return &cli.Uint64Flag{Name: "token-floor", EnvVars: []string{"SEQD_TOKEN_FLOOR"},
		Usage: "`N` a root that records no token mark yet starts from: its tokens are N + zxid (or N + version); after rebuilding ZooKeeper, give at least the highest token issued"}
}

func floorFileFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "floor-file", EnvVars: []string{"SEQD_FLOOR_FILE"},
		Usage: "`FILE` recording the highest token issued on each root (fsynced before a grant is answered); with it, a root whose tokens would go back (ZooKeeper restored or rebuilt) is refused until its floor is raised with seqd floor"}
}

// tokenFloors reads --token-floor and opens --floor-file (nil without it).
func tokenFloors(c *cli.Context) (uint64, *zklock.Floors, error) {
	floor := c.Uint64("token-floor")
	if floor > zklock.MaxTokenFloor {
		return 0, nil, usageErrorf("--token-floor %d is above the highest floor, %d", floor, uint64(zklock.MaxTokenFloor))
	}
	path := c.String("floor-file")
	if path == "" {
		return floor, nil, nil
	}
	f, err := zklock.OpenFloors(path)
	if err != nil {
		return 0, nil, usageErrorf("--floor-file: %v", userMessage(err))
	}
	return floor, f, nil
}

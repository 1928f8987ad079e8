package main

// seqd lock and seqd campaign: their flags and command lines.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/cmd/seqd/internal/underlock"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/runlock"
	"github.com/seqd/seqd/zklock"
)

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding a lock; kill it if the lock is lost",
		ArgsUsage: "NAME... -- CMD [ARG...]",
		Description: `Waits for the lock NAME, runs CMD in its own process group with SEQD_LOCK,
SEQD_TOKEN and SEQD_SEQUENCER in its environment, forwards SIGINT, SIGTERM,
SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to that group, and releases the lock as
soon as CMD exits, exiting with CMD's status. While CMD runs the lock is
watched: once it is lost, or ZooKeeper has been silent for so long that it
could expire the session, the whole group is sent --kill-signal, SIGKILL
after --kill-grace, and seqd exits 76.

With several names (seqd lock A B C -- CMD), seqd takes every lock at once,
all or nothing, without deadlock whatever sets other holders take at once;
CMD gets SEQD_SEQUENCERS (every lock's sequencer, separated by spaces) and
SEQD_LOCK, SEQD_TOKEN and SEQD_SEQUENCER of the first lock, and is killed if
any of the locks is lost. The first "--" ends the names.

With -n N, NAME is a semaphore (under --semaphore-root) and CMD runs while at
most N holders hold it.

Exit status: CMD's own (128+N if signal N ended it); 64 usage error; 69
ZooKeeper unreachable; 75 not acquired within --wait; 76 lock lost while
CMD ran; 77 ZooKeeper refused the nodes (give --zk-auth-file); 126/127 CMD
could not be run; 128+N a signal N arrived while waiting.`,
		Flags: runnerFlags(rootFlag(), semaphoreRootFlag(),
			&cli.IntFlag{Name: "n", EnvVars: []string{"SEQD_N"},
				Usage: "a semaphore: run CMD while at most `N` holders (seqd lock -n, Curator's InterProcessSemaphoreV2) hold NAME"},
			lockDelayFlag("if seqd loses the lock uncleanly (killed, session lost), nobody gets it for this long (up to 1m); exiting releases it at once"),
		),
		Action: func(c *cli.Context) error {
			if err := checkRoots(c, "root", "semaphore-root"); err != nil {
				return err
			}
			cfg, err := parseLockConfig(c, fence.KindLock, "root")
			if err != nil {
				return err
			}
			return runUnder(c, cfg)
		},
	}
}

// campaignCommand is `seqd campaign NAME --value V -- CMD`: `seqd lock`'s
// runner, with leadership of an election instead of a lock.
func campaignCommand() *cli.Command {
	return &cli.Command{
		Name:      "campaign",
		Usage:     "run a command while leader of an election; kill it if leadership is lost",
		ArgsUsage: "NAME -- CMD [ARG...]",
		Description: `Campaigns in the election NAME with --value as the leader's published value,
and once elected runs CMD as seqd lock does, with SEQD_ELECTION, SEQD_TERM (also
SEQD_TOKEN), SEQD_SEQUENCER and SEQD_LOCK_SOCKET in its environment. When
leadership is lost, or ZooKeeper has been silent for so long that it could
expire the session, CMD's process group is killed before another candidate
can be elected, and seqd exits 76. When CMD exits, seqd resigns at once.
Exit statuses as for seqd lock.`,
		Flags: runnerFlags(electionRootFlag(), &cli.StringFlag{Name: "value", Usage: "the value published while leader (an address, a pod name); default the host name", EnvVars: []string{"SEQD_VALUE"}}),
		Action: func(c *cli.Context) error {
			cfg, err := parseLockConfig(c, fence.KindElection, "election-root")
			if err != nil {
				return err
			}
			cfg.Value = c.String("value")
			if cfg.Value == "" {
				cfg.Value, _ = os.Hostname()
			}
			return runUnder(c, cfg)
		},
	}
}

// runnerFlags are the flags of seqd lock and seqd campaign.
func runnerFlags(extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		zkFlag(true),
		sessionTimeoutFlag(),
		tokenModeFlag(),
		tokenFloorFlag(),
		floorFileFlag(),
		&cli.DurationFlag{Name: "wait", EnvVars: []string{"SEQD_WAIT"},
			DefaultText: "wait as long as it takes",
			Usage:       "give up waiting after this `DURATION` and exit 75; 0 tries once"},
		&cli.StringFlag{Name: "kill-signal", Value: "TERM", EnvVars: []string{"SEQD_KILL_SIGNAL"},
			Usage: "`SIGNAL` sent to CMD's process group when the lock is lost (name or number)"},
		&cli.DurationFlag{Name: "kill-grace", Value: 10 * time.Second, EnvVars: []string{"SEQD_KILL_GRACE"},
			Usage: "SIGKILL the process group this `DURATION` after --kill-signal"},
		&cli.BoolFlag{Name: "shell", EnvVars: []string{"SEQD_SHELL"},
			Usage: "run CMD through sh -c (its words joined by spaces)"},
		&cli.BoolFlag{Name: "verbose", EnvVars: []string{"SEQD_VERBOSE"},
			Usage: "print the token and timings on stderr"},
		signingKeyFlag(),
	}, append(zkSecurityFlags(), extra...)...)
}

// tracesFlushTimeout bounds how long seqd lock, its command done, waits
// for its span to be exported.
const tracesFlushTimeout = 5 * time.Second

// runUnder runs cfg's command under its lock or leadership.
func runUnder(c *cli.Context, cfg underlock.Config) error {
	// The run's span goes where OpenTelemetry's environment variables say
	// (the console exporter writes to stderr: stdout is the command's).
	// A flush that fails is not reported: the command's status is what
	// seqd lock reports.
	tracer, stopTracing, err := serving.StartTracing(c.Context, os.Getenv, c.App.ErrWriter, tracesFlushTimeout, nil)
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer stopTracing()
	cfg.Tracer = tracer
	err = underlock.RunProcess(c.Context, cfg, underlock.IO{Stdin: c.App.Reader, Stdout: c.App.Writer, Stderr: c.App.ErrWriter})
	if na := (*underlock.NoAuthError)(nil); errors.As(err, &na) {
		return withCode(ExitAuth, zkNoAuth(na.What, cfg.Root, cfg.Auth))
	}
	if nz := (*underlock.NoZooKeeperError)(nil); errors.As(err, &nz) {
		return withCode(ExitUnavailable, fmt.Errorf("%w: %s", nz, zkHint))
	}
	return err
}

// parseLockConfig checks the whole command line before ZooKeeper is touched:
// every mistake is a usage error (exit 64), and a CMD that cannot be found is
// 127 (as in a shell) rather than a lock taken for nothing. kind is the
// command's (lock's -n makes it a semaphore), and rootFlag names its root.
func parseLockConfig(c *cli.Context, kind fence.Kind, rootFlag string) (underlock.Config, error) {
	cfg := underlock.Config{Kind: kind, Root: c.String(rootFlag), OpenWarning: noAuthWarning}
	var err error
	if cfg.Names, cfg.Argv, err = lockArgs(c.Args().Slice()); err != nil {
		return cfg, err
	}
	cfg.Name = cfg.Names[0]
	// NewMultiMutex validates the names and the root and does no I/O: it
	// never touches the (absent) session.
	if _, err := zklock.NewMultiMutex(nil, cfg.Names, zklock.WithRoot(cfg.Root)); err != nil {
		return cfg, usageErrorf("%s: %v", c.Command.Name, userMessage(err))
	}
	if len(cfg.Names) > 1 && kind != fence.KindLock {
		return cfg, usageErrorf("%s takes one NAME, not %d", c.Command.Name, len(cfg.Names))
	}
	if cfg.Servers, err = splitServers(c.String("zk")); err != nil {
		return cfg, err
	}
	zs, err := parseZKSecurity(c)
	if err != nil {
		return cfg, err
	}
	cfg.Auth, cfg.ACL, cfg.TLS = zs.auth, zs.acl, zs.tls
	if cfg.TokenFloor, cfg.Floors, err = tokenFloors(c); err != nil {
		return cfg, err
	}
	if cfg.Mode, err = tokenMode(c); err != nil {
		return cfg, err
	}
	if cfg.SessionTimeout, err = durationFlag(c, "session-timeout", minSessionTimeout, maxSessionTimeout); err != nil {
		return cfg, err
	}
	if cfg.Wait, err = durationFlag(c, "wait", 0, 0); err != nil {
		return cfg, err
	}
	// --wait 0 tries once, as everywhere; without --wait the wait is
	// endless.
	cfg.TryOnce = c.IsSet("wait") && cfg.Wait == 0
	if cfg.LockDelay, err = durationFlag(c, "lock-delay", 0, zklock.MaxLockDelay); err != nil {
		return cfg, err
	}
	if err := lockLimit(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.KillGrace, err = durationFlag(c, "kill-grace", 0, 0); err != nil {
		return cfg, err
	}
	if cfg.KillSignal, err = runlock.ParseSignal(c.String("kill-signal")); err != nil {
		return cfg, usageErrorf("lock: --kill-signal: %v", err)
	}
	cfg.Verbose = c.Bool("verbose")
	if cfg.Signer, err = signer(c); err != nil {
		return cfg, err
	}
	cfg.Path, cfg.Args, err = underlock.Program(cfg.Argv, c.Bool("shell"))
	return cfg, err
}

// lockLimit reads -n: a semaphore lives under --semaphore-root, takes zxid
// tokens only and has no lock-delay.
func lockLimit(c *cli.Context, cfg *underlock.Config) error {
	if !c.IsSet("n") {
		return nil
	}
	if len(cfg.Names) > 1 {
		return usageErrorf("lock: -n takes one semaphore NAME, not %d: several locks at once are exclusive locks", len(cfg.Names))
	}
	if err := zklock.ValidateSemaphoreName(cfg.Name); err != nil {
		return usageErrorf("lock: -n: %v", userMessage(err))
	}
	cfg.Limit = c.Int("n")
	switch {
	case cfg.Limit < 1 || cfg.Limit > zklock.MaxSemaphoreLimit:
		return usageErrorf("lock: -n %d is out of range: give 1..%d", cfg.Limit, zklock.MaxSemaphoreLimit)
	case cfg.Mode != zklock.TokenZxid:
		return usageErrorf("lock: -n takes zxid tokens only, not --token-mode %s", cfg.Mode)
	case cfg.LockDelay != 0:
		return usageErrorf("lock: -n and --lock-delay do not go together: a semaphore has no lock-delay")
	}
	cfg.Kind, cfg.Root = fence.KindSemaphore, c.String("semaphore-root")
	return nil
}

// lockArgs splits `NAME... -- CMD [ARG...]`, or `NAME CMD [ARG...]`: the
// first "--" ends the names; without one, NAME is the only name.
func lockArgs(args []string) (names, argv []string, err error) {
	if len(args) == 0 {
		return nil, nil, usageErrorf("lock: no lock NAME given; usage: seqd lock [flags] NAME... -- CMD [ARG...]")
	}
	end := slices.Index(args, "--")
	switch {
	case end == 0:
		return nil, nil, usageErrorf("lock: no lock NAME before \"--\"; usage: seqd lock [flags] NAME... -- CMD [ARG...]")
	case end > 0:
		names, argv = args[:end], args[end+1:]
	default:
		names, argv = args[:1], args[1:]
	}
	for _, name := range names {
		if strings.HasPrefix(name, "-") {
			return nil, nil, usageErrorf("lock: %q is not a lock name; flags go before NAME, and CMD after \"--\"", name)
		}
	}
	if end < 0 && len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
		return nil, nil, usageErrorf("lock: %q after NAME: flags go before NAME, and CMD after \"--\"", argv[0])
	}
	if len(argv) == 0 {
		return nil, nil, usageErrorf("lock: no command given; usage: seqd lock [flags] %s -- CMD [ARG...]", strings.Join(names, " "))
	}
	return names, argv, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/internal/runlock"
	"github.com/seqd/seqd/zklock"
)

// forwardedSignals reach the command's process group while it runs; while
// seqd waits for the lock, any of them withdraws the contender and ends seqd
// with 128+signal, and the command is never started.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

const (
	// lockReleaseTimeout bounds the release once the command has exited.
	lockReleaseTimeout = 5 * time.Second
	// minDialTimeout: a ZooKeeper that has not given us a session by then
	// (or by the session timeout, if longer) counts as unreachable.
	minDialTimeout = 5 * time.Second
	// signalSettle bounds how long seqd looks for the signal behind a
	// cancelled context (main's NotifyContext and our own channel are fed by
	// the same delivery, in an order nobody promises).
	signalSettle = time.Second
)

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding a lock; kill it if the lock is lost",
		ArgsUsage: "NAME -- CMD [ARG...]",
		Description: `Waits for the lock NAME, runs CMD in its own process group with SEQD_LOCK,
SEQD_TOKEN and SEQD_SEQUENCER in its environment, forwards SIGINT, SIGTERM,
SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to that group, and releases the lock as
soon as CMD exits, exiting with CMD's status. While CMD runs the lock is
watched: once it is lost, or ZooKeeper has been silent for so long that it
could expire the session, the whole group is sent --kill-signal, SIGKILL
after --kill-grace, and seqd exits 76.

Exit status: CMD's own (128+N if signal N ended it); 64 usage error; 69
ZooKeeper unreachable; 75 not acquired within --timeout; 76 lock lost while
CMD ran; 126/127 CMD could not be run; 128+N a signal N arrived while waiting.`,
		Flags: append([]cli.Flag{
			zkFlag(true),
			rootFlag(),
			&cli.StringFlag{Name: "session-timeout", Value: zklock.DefaultSessionTimeout.String(), EnvVars: []string{"SEQD_SESSION_TIMEOUT"},
				Usage: "ZooKeeper session `TIMEOUT` to ask for (the server may negotiate another)"},
			tokenModeFlag(),
			&cli.StringFlag{Name: "timeout", Value: "0", EnvVars: []string{"SEQD_LOCK_TIMEOUT"},
				Usage: "give up waiting after this `DURATION` and exit 75; 0 waits forever"},
			&cli.StringFlag{Name: "kill-signal", Value: "TERM", EnvVars: []string{"SEQD_KILL_SIGNAL"},
				Usage: "`SIGNAL` sent to CMD's process group when the lock is lost (name or number)"},
			&cli.StringFlag{Name: "kill-grace", Value: "10s", EnvVars: []string{"SEQD_KILL_GRACE"},
				Usage: "SIGKILL the process group this `DURATION` after --kill-signal"},
			&cli.BoolFlag{Name: "shell", EnvVars: []string{"SEQD_SHELL"},
				Usage: "run CMD through sh -c (its words joined by spaces)"},
			&cli.BoolFlag{Name: "verbose", EnvVars: []string{"SEQD_VERBOSE"},
				Usage: "print the token and timings on stderr"},
		}, zkSecurityFlags()...),
		Action: func(c *cli.Context) error {
			cfg, err := parseLockConfig(c)
			if err != nil {
				return err
			}
			sigs := make(chan os.Signal, 16)
			signal.Notify(sigs, forwardedSignals...)
			defer signal.Stop(sigs)
			// seqd must never stop while it holds the lock: stopped, it
			// could not notice the loss nor signal the command. Ctrl-Z and
			// background terminal I/O would stop it by default, so those
			// signals are caught and dropped. (Caught, not ignored: the
			// command gets the default actions back when it is exec'd.)
			jobControl := make(chan os.Signal, 4)
			signal.Notify(jobControl, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
			defer signal.Stop(jobControl)
			return runLock(c.Context, cfg, lockIO{c.App.Reader, c.App.Writer, c.App.ErrWriter}, sigs, zklock.WallClock())
		},
	}
}

// lockConfig is a validated `seqd lock` command line.
type lockConfig struct {
	name           string
	argv           []string // CMD as given
	path           string   // the program to exec (argv[0] resolved, or sh)
	args           []string // its arguments, argv[0] included
	servers        []string
	root           string
	sessionTimeout time.Duration
	mode           zklock.TokenMode
	timeout        time.Duration
	killSignal     syscall.Signal
	killGrace      time.Duration
	verbose        bool
	zk             zkSecurity
}

type lockIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// parseLockConfig checks the whole command line before ZooKeeper is touched:
// every mistake is a usage error (exit 64), and a CMD that cannot be found is
// 127 (as in a shell) rather than a lock taken for nothing.
func parseLockConfig(c *cli.Context) (lockConfig, error) {
	var cfg lockConfig
	args := c.Args().Slice()
	if len(args) == 0 {
		return cfg, usageErrorf("lock: no lock NAME given; usage: seqd lock [flags] NAME -- CMD [ARG...]")
	}
	cfg.name, args = args[0], args[1:]
	if strings.HasPrefix(cfg.name, "-") {
		return cfg, usageErrorf("lock: %q is not a lock name; flags go before NAME", cfg.name)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		return cfg, usageErrorf("lock: %q after NAME: flags go before NAME, and CMD after \"--\"", args[0])
	}
	if len(args) == 0 {
		return cfg, usageErrorf("lock: no command given; usage: seqd lock [flags] %s -- CMD [ARG...]", cfg.name)
	}
	cfg.argv = args

	cfg.root = c.String("root")
	// NewMutex validates the name and the root and does no I/O: it never
	// touches the (absent) session.
	if _, err := zklock.NewMutex(nil, cfg.name, zklock.WithRoot(cfg.root)); err != nil {
		return cfg, usageErrorf("lock: %v", err)
	}
	var err error
	if cfg.servers, err = splitServers(c.String("zk")); err != nil {
		return cfg, err
	}
	if cfg.zk, err = parseZKSecurity(c); err != nil {
		return cfg, err
	}
	if cfg.mode, err = zklock.ParseTokenMode(c.String("token")); err != nil {
		return cfg, usageErrorf("lock: --token: %v", err)
	}
	durations := []struct {
		flag     string
		dst      *time.Duration
		positive bool
	}{
		{"session-timeout", &cfg.sessionTimeout, true},
		{"timeout", &cfg.timeout, false},
		{"kill-grace", &cfg.killGrace, false},
	}
	for _, d := range durations {
		if *d.dst, err = parseDuration(c.String(d.flag), d.positive); err != nil {
			return cfg, usageErrorf("lock: --%s: %v", d.flag, err)
		}
	}
	if cfg.killSignal, err = runlock.ParseSignal(c.String("kill-signal")); err != nil {
		return cfg, usageErrorf("lock: --kill-signal: %v", err)
	}
	cfg.verbose = c.Bool("verbose")

	if c.Bool("shell") {
		cfg.path, cfg.args = "/bin/sh", []string{"sh", "-c", strings.Join(args, " ")}
		return cfg, nil
	}
	cfg.path, err = exec.LookPath(args[0])
	if err != nil {
		return cfg, commandError(err)
	}
	cfg.args = args
	return cfg, nil
}

// parseDuration reads a Go duration.
func parseDuration(s string, positive bool) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write it like 30s, 1m30s or 500ms", s)
	}
	switch {
	case d < 0:
		return 0, fmt.Errorf("%q is negative", s)
	case positive && d == 0:
		return 0, fmt.Errorf("%q must be more than zero", s)
	}
	return d, nil
}

// commandError maps a command that cannot be run to a shell's statuses:
// 127 not found, 126 found but not executable.
func commandError(err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return withCode(127, fmt.Errorf("lock: %w", err))
	}
	return withCode(126, fmt.Errorf("lock: %w", err))
}

// runLock waits for the lock, runs the command under it and releases it. sigs
// carries the forwarded signals; clk measures the kill grace.
func runLock(ctx context.Context, cfg lockConfig, stdio lockIO, sigs <-chan os.Signal, clk zklock.Clock) error {
	say := func(format string, args ...any) {
		fmt.Fprintf(stdio.stderr, "seqd: lock %s: "+format+"\n", append([]any{cfg.name}, args...)...)
	}
	verbose := func(format string, args ...any) {
		if cfg.verbose {
			say(format, args...)
		}
	}
	level := slog.LevelError
	if cfg.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stdio.stderr, &slog.HandlerOptions{Level: level})).With("lock", cfg.name)

	// Waiting — dialling included — ends at the first signal: the contender
	// is withdrawn and the command never starts.
	waitCtx, cancelWait := context.WithCancelCause(ctx)
	defer cancelWait(nil)
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	var waitSig syscall.Signal // written by the watcher, read after endWait
	go func() {
		defer close(watchDone)
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				waitSig = s
				cancelWait(errors.New(runlock.SignalName(s) + " received"))
			}
		case <-stopWatch:
		}
	}()
	endWait := func() {
		close(stopWatch)
		<-watchDone
	}
	// shutdown reports the signal that ended the wait, if any, also one that
	// arrived just as the wait ended: the command must not start after it. A
	// context cancelled from outside is main's signal context: find the
	// signal on our own channel, which received it too.
	shutdown := func() (syscall.Signal, bool) {
		if waitSig != 0 {
			return waitSig, true
		}
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				return s, true
			}
		default:
		}
		if ctx.Err() == nil {
			return 0, false
		}
		t := time.NewTimer(signalSettle)
		defer t.Stop()
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				return s, true
			}
		case <-t.C:
		}
		return syscall.SIGTERM, true
	}
	interrupted := func(sig syscall.Signal) error {
		verbose("%s while waiting: the command was not started", runlock.SignalName(sig))
		return childStatus(128 + int(sig))
	}

	start := time.Now()
	dialCtx, cancelDial := context.WithTimeout(waitCtx, max(cfg.sessionTimeout, minDialTimeout))
	cfg.zk.warnIfOpen(logger) // shown with --verbose
	sess, err := zklock.Dial(dialCtx, cfg.servers, zklock.Options{
		SessionTimeout: cfg.sessionTimeout,
		Logger:         logger,
		Clock:          clk,
		Auth:           cfg.zk.auth,
		ACL:            cfg.zk.acl,
		TLS:            cfg.zk.tls,
	})
	cancelDial()
	if err != nil {
		endWait()
		if sig, ok := shutdown(); ok {
			return interrupted(sig)
		}
		return withCode(ExitUnavailable, fmt.Errorf("lock %s: %w", cfg.name, err))
	}
	defer sess.Close()
	verbose("session 0x%x with %s (timeout %v negotiated) after %v", sess.ID(), strings.Join(cfg.servers, ","), sess.Timeout(), ms(time.Since(start)))

	m, err := zklock.NewMutex(sess, cfg.name, zklock.WithRoot(cfg.root), zklock.WithTokenMode(cfg.mode), zklock.WithData(ownerData()))
	if err != nil {
		endWait()
		return usageErrorf("lock: %v", err)
	}
	acqCtx, cancelAcq := waitCtx, context.CancelFunc(func() {})
	if cfg.timeout > 0 {
		acqCtx, cancelAcq = context.WithTimeout(waitCtx, cfg.timeout)
	}
	waitStart := time.Now()
	grant, err := m.Acquire(acqCtx)
	cancelAcq()
	endWait()
	if sig, ok := shutdown(); ok {
		if grant != nil {
			releaseGrant(ctx, grant, verbose, say)
		}
		return interrupted(sig)
	}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		return withCode(ExitTimeout, fmt.Errorf("lock %s was not acquired within %v: another holder kept it", cfg.name, cfg.timeout))
	case errors.Is(err, zklock.ErrUnavailable), errors.Is(err, zklock.ErrSessionExpired), errors.Is(err, zklock.ErrLockLost):
		return withCode(ExitUnavailable, fmt.Errorf("lock %s was not acquired: %w", cfg.name, err))
	default:
		return fmt.Errorf("lock %s was not acquired: %w", cfg.name, err)
	}
	verbose("acquired: token %d, sequencer %s, contender %s, waited %v", grant.Token, grant.Sequencer(), grant.Path, ms(time.Since(waitStart)))
	select {
	case <-grant.Lost():
		// The command never ran: not 76 (lost while it ran) but the lock
		// could not be held, as when ZooKeeper is unavailable.
		return withCode(ExitUnavailable, fmt.Errorf("lock %s (token %d) was lost before the command could start: %v", cfg.name, grant.Token, grant.Err()))
	default:
	}

	cmd := exec.Command(cfg.path)
	cmd.Args = cfg.args
	cmd.Env = append(cmd.Environ(),
		"SEQD_LOCK="+cfg.name,
		"SEQD_TOKEN="+strconv.FormatUint(grant.Token, 10),
		"SEQD_SEQUENCER="+grant.Sequencer(),
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.stdin, stdio.stdout, stdio.stderr
	var term *os.File
	if f, ok := stdio.stdin.(*os.File); ok && runlock.ForegroundTerminal(f) {
		term = f // an interactive run: CMD gets the terminal
	}
	runStart := time.Now()
	res, err := runlock.Run(cmd, runlock.Options{
		Terminal:   term,
		Lost:       grant.Lost(),
		Signals:    sigs,
		KillSignal: cfg.killSignal,
		KillGrace:  cfg.killGrace,
		Clock:      clk,
		Logger:     logger,
		OnLost: func(pgid int) {
			heard := sess.LastHeard()
			say("lost (token %d): %v; sent %s to process group %d, SIGKILL follows in %v; zookeeper last answered at %s, %v before the loss (session timeout %v)",
				grant.Token, grant.Err(), runlock.SignalName(cfg.killSignal), pgid, cfg.killGrace,
				heard.Format(time.RFC3339Nano), ms(clk.Now().Sub(heard)), sess.Timeout())
		},
	})
	if err != nil {
		releaseGrant(ctx, grant, verbose, say)
		return commandError(err)
	}
	ran := ms(time.Since(runStart))
	if res.Lost {
		releaseGrant(ctx, grant, verbose, say)
		how := fmt.Sprintf("status %d", res.Status)
		if res.Killed {
			how += fmt.Sprintf(", SIGKILL after the %v grace", cfg.killGrace)
		}
		return withCode(ExitLockLost, fmt.Errorf("lock %s (token %d) was lost while the command ran; it ended with %s", cfg.name, grant.Token, how))
	}
	if res.Stragglers {
		say("the command left processes behind in its group; they were sent %s before the release", runlock.SignalName(cfg.killSignal))
	}
	verbose("the command exited with status %d after %v", res.Status, ran)
	releaseGrant(ctx, grant, verbose, say)
	return childStatus(res.Status)
}

// releaseGrant deletes the contender on a context that outlives ctx (which a
// forwarded SIGTERM may have cancelled). If ZooKeeper cannot be reached,
// closing the session removes the node, or ZooKeeper does when it expires it.
func releaseGrant(ctx context.Context, g *zklock.Grant, verbose, say func(string, ...any)) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
	defer cancel()
	start := time.Now()
	switch err := g.Release(rctx); {
	case err == nil:
		verbose("released token %d in %v", g.Token, ms(time.Since(start)))
	case errors.Is(err, zklock.ErrLockLost):
		// Already reported, or lost after the command ended: nothing to do.
		verbose("token %d was already lost at release: %v", g.Token, err)
	default:
		say("could not release token %d (%v); its node goes when the session ends", g.Token, err)
	}
}

// ownerData is stored in the contender node, so that whoever looks at the lock
// can tell who holds it.
func ownerData() []byte {
	host, _ := os.Hostname()
	return fmt.Appendf(nil, "seqd lock pid=%d host=%s", os.Getpid(), host)
}

// ms rounds a duration for people.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/fence"
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
ZooKeeper unreachable; 75 not acquired within --wait; 76 lock lost while
CMD ran; 126/127 CMD could not be run; 128+N a signal N arrived while waiting.`,
		Flags: runnerFlags(rootFlag(),
			&cli.IntFlag{Name: "n", EnvVars: []string{"SEQD_N"},
				Usage: "a semaphore: run CMD while at most `N` holders (seqd lock -n, Curator's InterProcessSemaphoreV2) hold NAME"},
			lockDelayFlag("if seqd loses the lock uncleanly (killed, session lost), nobody gets it for this long (up to 1m); exiting releases it at once"),
		),
		Action: func(c *cli.Context) error {
			cfg, err := parseLockConfig(c)
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
	root := &cli.StringFlag{Name: "root", Value: zklock.DefaultElectionRoot, Usage: "znode under which election nodes live", EnvVars: []string{"SEQD_ROOT"}}
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
		Flags: runnerFlags(root, &cli.StringFlag{Name: "value", Usage: "the value published while leader (an address, a pod name); default the host name", EnvVars: []string{"SEQD_VALUE"}}),
		Action: func(c *cli.Context) error {
			cfg, err := parseLockConfig(c)
			if err != nil {
				return err
			}
			cfg.election, cfg.value = true, c.String("value")
			if cfg.value == "" {
				cfg.value, _ = os.Hostname()
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
		&cli.DurationFlag{Name: "wait", EnvVars: []string{"SEQD_WAIT"},
			Usage: "give up waiting after this `DURATION` and exit 75; 0 waits forever"},
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

// runUnder runs cfg's command under its lock or leadership.
func runUnder(c *cli.Context, cfg lockConfig) error {
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
	wait           time.Duration
	lockDelay      time.Duration
	limit          int // -n: a semaphore of this many holders; 0 for a lock
	killSignal     syscall.Signal
	killGrace      time.Duration
	verbose        bool
	signer         *fence.Signer // signs SEQD_SEQUENCER, if set
	election       bool          // seqd campaign: leadership instead of a lock
	value          string        // the leader's value, with election
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
	var err error
	if cfg.name, cfg.argv, err = lockArgs(c.Args().Slice()); err != nil {
		return cfg, err
	}
	cfg.root = c.String("root")
	// NewMutex validates the name and the root and does no I/O: it never
	// touches the (absent) session.
	if _, err := zklock.NewMutex(nil, cfg.name, zklock.WithRoot(cfg.root)); err != nil {
		return cfg, usageErrorf("lock: %v", err)
	}
	if cfg.servers, err = splitServers(c.String("zk")); err != nil {
		return cfg, err
	}
	if cfg.zk, err = parseZKSecurity(c); err != nil {
		return cfg, err
	}
	if cfg.mode, err = tokenMode(c); err != nil {
		return cfg, err
	}
	if cfg.sessionTimeout, err = durationFlag(c, "session-timeout", minSessionTimeout, maxSessionTimeout); err != nil {
		return cfg, err
	}
	if cfg.wait, err = durationFlag(c, "wait", 0, 0); err != nil {
		return cfg, err
	}
	if cfg.lockDelay, err = durationFlag(c, "lock-delay", 0, zklock.MaxLockDelay); err != nil {
		return cfg, err
	}
	if err := lockLimit(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.killGrace, err = durationFlag(c, "kill-grace", 0, 0); err != nil {
		return cfg, err
	}
	if cfg.killSignal, err = runlock.ParseSignal(c.String("kill-signal")); err != nil {
		return cfg, usageErrorf("lock: --kill-signal: %v", err)
	}
	cfg.verbose = c.Bool("verbose")
	if cfg.signer, err = signer(c); err != nil {
		return cfg, err
	}
	cfg.path, cfg.args, err = lockProgram(cfg.argv, c.Bool("shell"))
	return cfg, err
}

// lockLimit reads -n: a semaphore lives beside the lock root (where a
// daemon with the same --root keeps its semaphores), takes zxid tokens only
// and has no lock-delay.
func lockLimit(c *cli.Context, cfg *lockConfig) error {
	if !c.IsSet("n") {
		return nil
	}
	cfg.limit = c.Int("n")
	switch {
	case cfg.limit < 1 || cfg.limit > zklock.MaxSemaphoreLimit:
		return usageErrorf("lock: -n %d is out of range: give 1..%d", cfg.limit, zklock.MaxSemaphoreLimit)
	case cfg.mode != zklock.TokenZxid:
		return usageErrorf("lock: -n takes zxid tokens only, not --token-mode %s", cfg.mode)
	case cfg.lockDelay != 0:
		return usageErrorf("lock: -n and --lock-delay do not go together: a semaphore has no lock-delay")
	}
	cfg.root = zklock.SemaphoreRoot(cfg.root)
	return nil
}

// lockArgs splits `NAME [--] CMD [ARG...]`.
func lockArgs(args []string) (name string, argv []string, err error) {
	if len(args) == 0 {
		return "", nil, usageErrorf("lock: no lock NAME given; usage: seqd lock [flags] NAME -- CMD [ARG...]")
	}
	name, args = args[0], args[1:]
	if strings.HasPrefix(name, "-") {
		return "", nil, usageErrorf("lock: %q is not a lock name; flags go before NAME", name)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		return "", nil, usageErrorf("lock: %q after NAME: flags go before NAME, and CMD after \"--\"", args[0])
	}
	if len(args) == 0 {
		return "", nil, usageErrorf("lock: no command given; usage: seqd lock [flags] %s -- CMD [ARG...]", name)
	}
	return name, args, nil
}

// lockProgram resolves the program to exec and its arguments (argv[0]
// included): argv itself, or with shell its words joined for sh -c.
func lockProgram(argv []string, shell bool) (path string, args []string, err error) {
	if shell {
		return "/bin/sh", []string{"sh", "-c", strings.Join(argv, " ")}, nil
	}
	path, err = exec.LookPath(argv[0])
	if err != nil {
		return "", nil, commandError(err)
	}
	return path, argv, nil
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
	r := newLockRun(ctx, cfg, stdio, sigs, clk)
	// Waiting — dialling included — ends at the first signal: the contender
	// is withdrawn and the command never starts.
	w := watchWait(ctx, sigs)
	defer w.cancel(nil)
	defer w.end()
	sess, err := r.connect(w)
	if err != nil {
		return err
	}
	defer sess.Close()
	grant, err := r.acquire(w, sess)
	if err != nil {
		return err
	}
	return r.supervise(sess, grant)
}

// lockRun is one `seqd lock` run: its configuration and what it reports to.
type lockRun struct {
	ctx    context.Context // main's: cancelled by SIGINT or SIGTERM
	cfg    lockConfig
	stdio  lockIO
	sigs   <-chan os.Signal
	clk    zklock.Clock
	logger *slog.Logger
}

func newLockRun(ctx context.Context, cfg lockConfig, stdio lockIO, sigs <-chan os.Signal, clk zklock.Clock) *lockRun {
	level := slog.LevelError
	if cfg.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stdio.stderr, &slog.HandlerOptions{Level: level}))
	return &lockRun{ctx: ctx, cfg: cfg, stdio: stdio, sigs: sigs, clk: clk, logger: logger}
}

// say prints a line about the lock on stderr.
func (r *lockRun) say(format string, args ...any) {
	fmt.Fprintf(r.stdio.stderr, "seqd: lock %s: "+format+"\n", append([]any{r.cfg.name}, args...)...)
}

// verbose says it with --verbose only.
func (r *lockRun) verbose(format string, args ...any) {
	if r.cfg.verbose {
		r.say(format, args...)
	}
}

// interrupted is the status of a run that a signal ended while it waited.
func (r *lockRun) interrupted(sig syscall.Signal) error {
	r.verbose("%s while waiting: the command was not started", runlock.SignalName(sig))
	return childStatus(128 + int(sig))
}

func (r *lockRun) release(g *zklock.Grant) { releaseGrant(r.ctx, g, r.verbose, r.say) }

// waitWatch ends the wait for the lock at the first forwarded signal.
type waitWatch struct {
	ctx    context.Context // the wait's: cancelled by a signal
	cancel context.CancelCauseFunc
	outer  context.Context // main's
	sigs   <-chan os.Signal
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	sig    syscall.Signal // written by the watcher, read after end
}

func watchWait(ctx context.Context, sigs <-chan os.Signal) *waitWatch {
	w := &waitWatch{outer: ctx, sigs: sigs, stop: make(chan struct{}), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(w.done)
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				w.sig = s
				w.cancel(errors.New(runlock.SignalName(s) + " received"))
			}
		case <-w.stop:
		}
	}()
	return w
}

// end stops watching; signals go to the command from then on.
func (w *waitWatch) end() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
	})
}

// signal reports the signal that ended the wait, if any, also one that
// arrived just as the wait ended: the command must not start after it. A
// context cancelled from outside is main's signal context: find the signal
// on our own channel, which received it too. Call it after end.
func (w *waitWatch) signal() (syscall.Signal, bool) {
	if w.sig != 0 {
		return w.sig, true
	}
	select {
	case sig := <-w.sigs:
		if s, ok := sig.(syscall.Signal); ok {
			return s, true
		}
	default:
	}
	if w.outer.Err() == nil {
		return 0, false
	}
	t := time.NewTimer(signalSettle)
	defer t.Stop()
	select {
	case sig := <-w.sigs:
		if s, ok := sig.(syscall.Signal); ok {
			return s, true
		}
	case <-t.C:
	}
	return syscall.SIGTERM, true
}

// connect dials ZooKeeper; no session within max(session timeout,
// minDialTimeout) is exit 69.
func (r *lockRun) connect(w *waitWatch) (*zklock.Session, error) {
	start := time.Now()
	sess, err := dialLock(w.ctx, r.cfg, r.logger, r.clk)
	if err != nil {
		w.end()
		if sig, ok := w.signal(); ok {
			return nil, r.interrupted(sig)
		}
		return nil, withCode(ExitUnavailable, fmt.Errorf("lock %s: %w", r.cfg.name, err))
	}
	r.verbose("session 0x%x with %s (timeout %v negotiated) after %v", sess.ID(), strings.Join(r.cfg.servers, ","), sess.Timeout(), ms(time.Since(start)))
	return sess, nil
}

func dialLock(waitCtx context.Context, cfg lockConfig, logger *slog.Logger, clk zklock.Clock) (*zklock.Session, error) {
	dialCtx, cancelDial := context.WithTimeout(waitCtx, max(cfg.sessionTimeout, minDialTimeout))
	cfg.zk.warnIfOpen(logger) // shown with --verbose
	defer cancelDial()
	return zklock.Dial(dialCtx, cfg.servers, zklock.Options{
		SessionTimeout: cfg.sessionTimeout,
		Logger:         logger,
		Clock:          clk,
		Auth:           cfg.zk.auth,
		ACL:            cfg.zk.acl,
		TLS:            cfg.zk.tls,
	})
}

// contender returns how to wait for the lock, or for leadership.
func (r *lockRun) contender(sess *zklock.Session) (func(context.Context) (*zklock.Grant, error), error) {
	cfg := r.cfg
	if cfg.election {
		e, err := zklock.NewElection(sess, cfg.name, zklock.WithRoot(cfg.root), zklock.WithTokenMode(cfg.mode))
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (*zklock.Grant, error) {
			l, err := e.Campaign(ctx, []byte(cfg.value))
			if err != nil {
				return nil, err
			}
			return l.Grant, nil
		}, nil
	}
	m, err := r.newLock(sess)
	if err != nil {
		return nil, err
	}
	return m.Acquire, nil
}

// acquire waits for the lock (for ever, or --wait) and checks that it is
// still held before the command starts.
func (r *lockRun) acquire(w *waitWatch, sess *zklock.Session) (*zklock.Grant, error) {
	cfg := r.cfg
	take, err := r.contender(sess)
	if err != nil {
		w.end()
		return nil, usageErrorf("lock: %v", err)
	}
	acqCtx, cancelAcq := w.ctx, context.CancelFunc(func() {})
	if cfg.wait > 0 {
		acqCtx, cancelAcq = context.WithTimeout(w.ctx, cfg.wait)
	}
	waitStart := time.Now()
	grant, err := take(acqCtx)
	cancelAcq()
	w.end()
	if sig, ok := w.signal(); ok {
		if grant != nil {
			r.release(grant)
		}
		return nil, r.interrupted(sig)
	}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		return nil, withCode(ExitTimeout, fmt.Errorf("lock %s was not acquired within %v: another holder kept it", cfg.name, cfg.wait))
	case errors.Is(err, zklock.ErrUnavailable), errors.Is(err, zklock.ErrSessionExpired), errors.Is(err, zklock.ErrLockLost):
		return nil, withCode(ExitUnavailable, fmt.Errorf("lock %s was not acquired: %w", cfg.name, err))
	default:
		return nil, fmt.Errorf("lock %s was not acquired: %w", cfg.name, err)
	}
	r.verbose("acquired: token %d, sequencer %s, contender %s, waited %v", grant.Token, grant.Sequencer(), grant.Path, ms(time.Since(waitStart)))
	select {
	case <-grant.Lost():
		// The command never ran: not 76 (lost while it ran) but the lock
		// could not be held, as when ZooKeeper is unavailable.
		return nil, withCode(ExitUnavailable, fmt.Errorf("lock %s (token %d) was lost before the command could start: %s", cfg.name, grant.Token, userMessage(grant.Err())))
	default:
	}
	return grant, nil
}

// newLock is the lock to wait for: a mutex, or with -n a semaphore.
func (r *lockRun) newLock(sess *zklock.Session) (interface {
	Acquire(context.Context) (*zklock.Grant, error)
}, error) {
	cfg := r.cfg
	if cfg.limit > 0 {
		return zklock.NewSemaphore(sess, cfg.name, cfg.limit, zklock.WithRoot(cfg.root), zklock.WithData(ownerData(cfg.argv)))
	}
	return zklock.NewMutex(sess, cfg.name, zklock.WithRoot(cfg.root), zklock.WithTokenMode(cfg.mode), zklock.WithData(ownerData(cfg.argv)), zklock.WithLockDelay(cfg.lockDelay))
}

// supervise runs the command under the grant until it exits, killing its
// process group if the lock is lost, and releases the lock.
func (r *lockRun) supervise(sess *zklock.Session, grant *zklock.Grant) error {
	cfg := r.cfg
	sock, err := startLockSocket(grant, r.sequencer(grant))
	if err != nil {
		r.release(grant)
		return fmt.Errorf("the lock socket: %w", err)
	}
	defer sock.close()
	cmd := r.command(grant, sock.path)
	var term *os.File
	if f, ok := r.stdio.stdin.(*os.File); ok && runlock.ForegroundTerminal(f) {
		term = f // an interactive run: CMD gets the terminal
	}
	runStart := time.Now()
	res, err := runlock.Run(cmd, runlock.Options{
		Terminal:   term,
		Lost:       grant.Lost(),
		Signals:    r.sigs,
		KillSignal: cfg.killSignal,
		KillGrace:  cfg.killGrace,
		Clock:      r.clk,
		Logger:     r.logger,
		OnLost:     func(pgid int) { r.reportLoss(sess, grant, pgid) },
	})
	if err != nil {
		r.release(grant)
		return commandError(err)
	}
	return r.finish(grant, res, ms(time.Since(runStart)))
}

// sequencer is the grant's sequencer, signed with --signing-key-file.
func (r *lockRun) sequencer(grant *zklock.Grant) string {
	if r.cfg.signer != nil {
		return r.cfg.signer.Sign(grant.Name, grant.Token)
	}
	return grant.Sequencer()
}

// command is CMD with the lock, the token, the sequencer and the lock
// socket in its environment.
func (r *lockRun) command(grant *zklock.Grant, socket string) *exec.Cmd {
	cmd := exec.Command(r.cfg.path)
	cmd.Args = r.cfg.args
	cmd.Env = append(cmd.Environ(),
		"SEQD_LOCK="+r.cfg.name,
		"SEQD_TOKEN="+strconv.FormatUint(grant.Token, 10),
		"SEQD_SEQUENCER="+r.sequencer(grant),
		"SEQD_LOCK_SOCKET="+socket,
	)
	if r.cfg.election {
		term := strconv.FormatUint(grant.Token, 10)
		cmd.Env = append(cmd.Env, "SEQD_ELECTION="+r.cfg.name, "SEQD_TERM="+term)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdio.stdin, r.stdio.stdout, r.stdio.stderr
	return cmd
}

// reportLoss says, as the kill signal goes out, which token was lost and
// when ZooKeeper last answered.
func (r *lockRun) reportLoss(sess *zklock.Session, grant *zklock.Grant, pgid int) {
	heard := sess.LastHeard()
	r.say("lost (token %d): %s; sent %s to process group %d, SIGKILL follows in %v; zookeeper last answered at %s, %v before the loss (session timeout %v)",
		grant.Token, userMessage(grant.Err()), runlock.SignalName(r.cfg.killSignal), pgid, r.cfg.killGrace,
		heard.Format(time.RFC3339Nano), ms(r.clk.Now().Sub(heard)), sess.Timeout())
}

// finish releases the lock once the command has exited and picks seqd's
// status: 76 if the lock was lost while it ran, else the command's own.
func (r *lockRun) finish(grant *zklock.Grant, res runlock.Result, ran time.Duration) error {
	if res.Lost {
		r.release(grant)
		how := fmt.Sprintf("status %d", res.Status)
		if res.Killed {
			how += fmt.Sprintf(", SIGKILL after the %v grace", r.cfg.killGrace)
		}
		return withCode(ExitLockLost, fmt.Errorf("lock %s (token %d) was lost while the command ran; it ended with %s", r.cfg.name, grant.Token, how))
	}
	if res.Stragglers {
		r.say("the command left processes behind in its group; they were sent %s before the release", runlock.SignalName(r.cfg.killSignal))
	}
	r.verbose("the command exited with status %d after %v", res.Status, ran)
	r.release(grant)
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
		verbose("token %d was already lost at release: %s", g.Token, userMessage(err))
	default:
		say("could not release token %d (%s); its node goes when the session ends", g.Token, userMessage(err))
	}
}

// ownerData is stored in the contender node, so that whoever looks at the
// lock (seqd status, GET /v1/locks/{name}) can tell who holds it: the same
// JSON keys the daemon writes for its leases, owner user@host:pid and the
// command run under the lock.
func ownerData(argv []string) []byte {
	host, _ := os.Hostname()
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	data, _ := json.Marshal(struct {
		Owner   string `json:"owner"`
		Command string `json:"command"`
	}{fmt.Sprintf("%s@%s:%d", who, host, os.Getpid()), strings.Join(argv, " ")})
	return data
}

// ms rounds a duration for people.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

package underlock

// The run of seqd lock and seqd campaign: connect, wait for the grant, run
// the command under it, kill it on loss, release.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
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

// RunProcess is Run for the seqd process itself: the forwarded signals
// are the process's, and the kill grace is measured on the wall clock.
func RunProcess(ctx context.Context, cfg Config, stdio IO) error {
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
	return Run(ctx, cfg, stdio, sigs, zklock.WallClock())
}

// Run waits for the lock, runs the command under it and releases it. sigs
// carries the forwarded signals; clk measures the kill grace.
func Run(ctx context.Context, cfg Config, stdio IO, sigs <-chan os.Signal, clk zklock.Clock) (err error) {
	r := newLockRun(ctx, cfg, stdio, sigs, clk)
	r.span = startSpan(cfg, os.Getenv)
	defer func() { endSpan(r.span, err) }()
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
	h, err := r.acquire(w, sess)
	if err != nil {
		return err
	}
	return r.supervise(sess, h)
}

// hold is what the command runs under: the grant of one lock, semaphore
// slot or leadership, or of a set of locks (seqd lock A B -- CMD).
type hold struct {
	grant interface {
		Lost() <-chan struct{}
		Err() error
		SafeFor() time.Duration
		Release(context.Context) error
	}
	locks []zklock.HeldLock // each lock with its token: one but for a set
}

// single is the hold of g, a grant of cfg's one lock, slot or leadership.
func single(cfg Config, g *zklock.Grant) *hold {
	return &hold{grant: g, locks: []zklock.HeldLock{{Name: cfg.Name, Path: g.Path, Token: g.Token}}}
}

// multi is the hold of a set of locks.
func multi(g *zklock.MultiGrant) *hold { return &hold{grant: g, locks: g.Locks} }

// token is the first lock's token, SEQD_TOKEN.
func (h *hold) token() uint64 { return h.locks[0].Token }

// tokens are the tokens for messages: one, or name@token of each lock.
func (h *hold) tokens() string {
	if len(h.locks) == 1 {
		return fmt.Sprintf("token %d", h.token())
	}
	seqs := make([]string, len(h.locks))
	for i, l := range h.locks {
		seqs[i] = l.Sequencer()
	}
	return "tokens " + strings.Join(seqs, " ")
}

// lockRun is one `seqd lock` run: its configuration and what it reports to.
type lockRun struct {
	ctx    context.Context // main's: cancelled by SIGINT or SIGTERM
	cfg    Config
	stdio  IO
	sigs   <-chan os.Signal
	clk    zklock.Clock
	logger *slog.Logger
	span   trace.Span // the run's; a no-op without a tracer
}

func newLockRun(ctx context.Context, cfg Config, stdio IO, sigs <-chan os.Signal, clk zklock.Clock) *lockRun {
	level := slog.LevelError
	if cfg.Verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stdio.Stderr, &slog.HandlerOptions{Level: level}))
	return &lockRun{ctx: ctx, cfg: cfg, stdio: stdio, sigs: sigs, clk: clk, logger: logger}
}

// say prints a line about the lock on stderr.
func (r *lockRun) say(format string, args ...any) {
	fmt.Fprintf(r.stdio.Stderr, "seqd: %s: "+format+"\n", append([]any{r.what()}, args...)...)
}

// what names what the run holds: lock a, or locks a, b.
func (r *lockRun) what() string {
	if len(r.cfg.Names) > 1 {
		return "locks " + strings.Join(r.cfg.Names, ", ")
	}
	return noun(r.cfg.Kind) + " " + r.cfg.Name
}

// verbose says it with --verbose only.
func (r *lockRun) verbose(format string, args ...any) {
	if r.cfg.Verbose {
		r.say(format, args...)
	}
}

// interrupted is the status of a run that a signal ended while it waited.
func (r *lockRun) interrupted(sig syscall.Signal) error {
	r.verbose("%s while waiting: the command was not started", runlock.SignalName(sig))
	return exit.Child(128 + int(sig))
}

func (r *lockRun) release(h *hold) { releaseGrant(r.ctx, h, r.verbose, r.say) }

// connect dials ZooKeeper; no session within max(session timeout,
// MinDialTimeout) is exit 69.
func (r *lockRun) connect(w *waitWatch) (*zklock.Session, error) {
	start := time.Now()
	sess, err := dialLock(w.ctx, r.cfg, r.logger, r.clk)
	if err != nil {
		w.end()
		if sig, ok := w.signal(); ok {
			return nil, r.interrupted(sig)
		}
		if errors.Is(err, zklock.ErrUnavailable) {
			return nil, exit.With(exit.Unavailable, &NoZooKeeperError{What: r.what(), Servers: r.cfg.Servers, Within: max(r.cfg.SessionTimeout, MinDialTimeout)})
		}
		return nil, exit.With(exit.Unavailable, fmt.Errorf("%s: %w", r.what(), err))
	}
	r.verbose("session 0x%x with %s (timeout %v negotiated) after %v", sess.ID(), strings.Join(r.cfg.Servers, ","), sess.Timeout(), ms(time.Since(start)))
	return sess, nil
}

func dialLock(waitCtx context.Context, cfg Config, logger *slog.Logger, clk zklock.Clock) (*zklock.Session, error) {
	dialCtx, cancelDial := context.WithTimeout(waitCtx, max(cfg.SessionTimeout, MinDialTimeout))
	if cfg.Auth == nil && cfg.OpenWarning != "" {
		logger.Warn(cfg.OpenWarning) // shown with --verbose
	}
	defer cancelDial()
	return zklock.Dial(dialCtx, cfg.Servers, zklock.Options{
		SessionTimeout: cfg.SessionTimeout,
		Logger:         logger,
		Clock:          clk,
		Auth:           cfg.Auth,
		ACL:            cfg.ACL,
		TLS:            cfg.TLS,
		TokenFloor:     cfg.TokenFloor,
		Floors:         cfg.Floors,
	})
}

// contender returns how to take the grant: wait for it, or with --wait 0
// try once.
func (r *lockRun) contender(sess *zklock.Session) (func(context.Context) (*hold, error), error) {
	cfg := r.cfg
	switch {
	case len(cfg.Names) > 1:
		mm, err := zklock.NewMultiMutex(sess, cfg.Names, zklock.WithRoot(cfg.Root), zklock.WithTokenMode(cfg.Mode), zklock.WithData(ownerData(cfg.Argv)), zklock.WithLockDelay(cfg.LockDelay))
		if err != nil {
			return nil, err
		}
		take := pick(cfg.TryOnce, mm.Acquire, mm.TryAcquire)
		return func(ctx context.Context) (*hold, error) {
			g, err := take(ctx)
			if err != nil {
				return nil, err
			}
			return multi(g), nil
		}, nil
	case cfg.Kind == fence.KindElection:
		e, err := zklock.NewElection(sess, cfg.Name, zklock.WithRoot(cfg.Root), zklock.WithTokenMode(cfg.Mode))
		if err != nil {
			return nil, err
		}
		campaign := e.Campaign
		if cfg.TryOnce {
			campaign = e.TryCampaign
		}
		return func(ctx context.Context) (*hold, error) {
			l, err := campaign(ctx, []byte(cfg.Value))
			if err != nil {
				return nil, err
			}
			return single(cfg, l.Grant), nil
		}, nil
	case cfg.Kind == fence.KindSemaphore:
		sem, err := zklock.NewSemaphore(sess, cfg.Name, cfg.Limit, zklock.WithRoot(cfg.Root), zklock.WithData(ownerData(cfg.Argv)))
		if err != nil {
			return nil, err
		}
		return singly(cfg, pick(cfg.TryOnce, sem.Acquire, sem.TryAcquire)), nil
	}
	m, err := zklock.NewMutex(sess, cfg.Name, zklock.WithRoot(cfg.Root), zklock.WithTokenMode(cfg.Mode), zklock.WithData(ownerData(cfg.Argv)), zklock.WithLockDelay(cfg.LockDelay))
	if err != nil {
		return nil, err
	}
	return singly(cfg, pick(cfg.TryOnce, m.Acquire, m.TryAcquire)), nil
}

// singly is take, whose grant is held as cfg's one lock or slot.
func singly(cfg Config, take func(context.Context) (*zklock.Grant, error)) func(context.Context) (*hold, error) {
	return func(ctx context.Context) (*hold, error) {
		g, err := take(ctx)
		if err != nil {
			return nil, err
		}
		return single(cfg, g), nil
	}
}

// pick is try when tryOnce, wait otherwise.
func pick[F any](tryOnce bool, wait, try F) F {
	if tryOnce {
		return try
	}
	return wait
}

// acquire waits for the lock (for ever, or --wait) and checks that it is
// still held before the command starts.
func (r *lockRun) acquire(w *waitWatch, sess *zklock.Session) (*hold, error) {
	cfg := r.cfg
	take, err := r.contender(sess)
	if err != nil {
		w.end()
		return nil, exit.Usagef("lock: %v", err)
	}
	acqCtx, cancelAcq := w.ctx, context.CancelFunc(func() {})
	if cfg.Wait > 0 {
		acqCtx, cancelAcq = context.WithTimeout(w.ctx, cfg.Wait)
	}
	waitStart := time.Now()
	notice := r.noticeWaiting(sess, r.clk.Now())
	h, err := take(acqCtx)
	notice.stop()
	cancelAcq()
	w.end()
	if sig, ok := w.signal(); ok {
		if h != nil {
			r.release(h)
		}
		return nil, r.interrupted(sig)
	}
	if err != nil {
		return nil, r.notAcquired(err, sess)
	}
	r.verbose("acquired: %s, contender %s, waited %v", h.tokens(), h.locks[0].Path, ms(time.Since(waitStart)))
	select {
	case <-h.grant.Lost():
		// The command never ran: not 76 (lost while it ran) but the lock
		// could not be held, as when ZooKeeper is unavailable.
		return nil, exit.With(exit.Unavailable, fmt.Errorf("%s (%s) was lost before the command could start: %s", r.what(), h.tokens(), exit.Message(h.grant.Err())))
	default:
	}
	return h, nil
}

// notAcquired is the error of an acquire that failed with err.
func (r *lockRun) notAcquired(err error, sess *zklock.Session) error {
	cfg := r.cfg
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		ctx, cancel := context.WithTimeout(r.ctx, noticeRead)
		who := r.blockers(ctx, sess)
		cancel()
		if who == "" {
			who = "another holder kept it"
		}
		return exit.With(exit.Timeout, fmt.Errorf("%s %s not acquired within %v: it waited for %s", r.what(), wasWere(len(cfg.Names)), cfg.Wait, who))
	case errors.Is(err, zklock.ErrHeld):
		return exit.With(exit.Timeout, fmt.Errorf("%s %s not acquired at the one try --wait 0 asks for: %s", r.what(), wasWere(len(cfg.Names)), exit.Message(err)))
	case errors.Is(err, zklock.ErrLimitMismatch):
		return exit.With(exit.Usage, fmt.Errorf("%s", exit.Message(err)))
	case errors.Is(err, zk.ErrNoAuth):
		return exit.With(exit.Auth, &NoAuthError{What: r.what(), Err: err})
	case errors.Is(err, zklock.ErrUnavailable), errors.Is(err, zklock.ErrSessionExpired), errors.Is(err, zklock.ErrLockLost):
		return exit.With(exit.Unavailable, fmt.Errorf("%s was not acquired: %w", r.what(), err))
	}
	return fmt.Errorf("%s was not acquired: %w", r.what(), err)
}

// wasWere agrees with the number of locks a run names.
func wasWere(n int) string {
	if n > 1 {
		return "were"
	}
	return "was"
}

// supervise runs the command under the grant until it exits, killing its
// process group if the lock is lost, and releases the lock.
func (r *lockRun) supervise(sess *zklock.Session, h *hold) error {
	cfg := r.cfg
	seqs := r.sequencers(h)
	granted(r.span, h.token())
	sock, err := startLockSocket(h.grant, h.token(), seqs)
	if err != nil {
		r.release(h)
		return fmt.Errorf("the lock socket: %w", err)
	}
	defer sock.close()
	cmd := r.command(h, seqs, sock.path)
	var term *os.File
	if f, ok := r.stdio.Stdin.(*os.File); ok && runlock.ForegroundTerminal(f) {
		term = f // an interactive run: CMD gets the terminal
	}
	runStart := time.Now()
	res, err := runlock.Run(cmd, runlock.Options{
		Terminal:   term,
		Lost:       h.grant.Lost(),
		Signals:    r.sigs,
		KillSignal: cfg.KillSignal,
		KillGrace:  cfg.KillGrace,
		Clock:      r.clk,
		Logger:     r.logger,
		OnLost:     func(pgid int) { r.reportLoss(sess, h, pgid) },
	})
	if err != nil {
		r.release(h)
		return commandError(err)
	}
	return r.finish(h, res, ms(time.Since(runStart)))
}

// sequencers are the hold's sequencers, one per lock, of the run's kind,
// signed with --signing-key-file.
func (r *lockRun) sequencers(h *hold) []string {
	seqs := make([]string, len(h.locks))
	for i, l := range h.locks {
		seq := fence.Sequencer{Kind: r.cfg.Kind, Name: l.Name, Token: l.Token}
		seqs[i] = seq.String()
		if r.cfg.Signer != nil {
			seqs[i] = r.cfg.Signer.Sign(seq)
		}
	}
	return seqs
}

// command is CMD with the lock, the token, the sequencer (the first
// lock's, for a set), every sequencer and the lock socket in its
// environment.
func (r *lockRun) command(h *hold, seqs []string, socket string) *exec.Cmd {
	cmd := exec.Command(r.cfg.Path)
	cmd.Args = r.cfg.Args
	cmd.Env = append(cmd.Environ(),
		"SEQD_LOCK="+r.cfg.Name,
		"SEQD_TOKEN="+strconv.FormatUint(h.token(), 10),
		"SEQD_SEQUENCER="+seqs[0],
		"SEQD_SEQUENCERS="+strings.Join(seqs, " "),
		"SEQD_LOCK_SOCKET="+socket,
	)
	cmd.Env = append(cmd.Env, traceEnv(r.span)...)
	if r.cfg.Kind == fence.KindElection {
		term := strconv.FormatUint(h.token(), 10)
		cmd.Env = append(cmd.Env, "SEQD_ELECTION="+r.cfg.Name, "SEQD_TERM="+term)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdio.Stdin, r.stdio.Stdout, r.stdio.Stderr
	return cmd
}

// reportLoss says, as the kill signal goes out, which token was lost and
// when ZooKeeper last answered.
func (r *lockRun) reportLoss(sess *zklock.Session, h *hold, pgid int) {
	heard := sess.LastHeard()
	r.say("lost (%s): %s; sent %s to process group %d, SIGKILL follows in %v; zookeeper last answered at %s, %v before the loss (session timeout %v)",
		h.tokens(), exit.Message(h.grant.Err()), runlock.SignalName(r.cfg.KillSignal), pgid, r.cfg.KillGrace,
		heard.Format(time.RFC3339Nano), ms(r.clk.Now().Sub(heard)), sess.Timeout())
}

// finish releases the lock once the command has exited and picks seqd's
// status: 76 if the lock was lost while it ran, else the command's own.
func (r *lockRun) finish(h *hold, res runlock.Result, ran time.Duration) error {
	if res.Lost {
		r.release(h)
		how := fmt.Sprintf("status %d", res.Status)
		if res.Killed {
			how += fmt.Sprintf(", SIGKILL after the %v grace", r.cfg.KillGrace)
		}
		return exit.With(exit.LockLost, fmt.Errorf("%s (%s) was lost while the command ran; it ended with %s", r.what(), h.tokens(), how))
	}
	if res.Stragglers {
		r.say("the command left processes behind in its group; they were sent %s before the release", runlock.SignalName(r.cfg.KillSignal))
	}
	r.verbose("the command exited with status %d after %v", res.Status, ran)
	r.release(h)
	return exit.Child(res.Status)
}

// releaseGrant deletes the contender on a context that outlives ctx (which a
// forwarded SIGTERM may have cancelled). If ZooKeeper cannot be reached,
// closing the session removes the node, or ZooKeeper does when it expires it.
func releaseGrant(ctx context.Context, h *hold, verbose, say func(string, ...any)) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
	defer cancel()
	start := time.Now()
	switch err := h.grant.Release(rctx); {
	case err == nil:
		verbose("released %s in %v", h.tokens(), ms(time.Since(start)))
	case errors.Is(err, zklock.ErrLockLost):
		// Already reported, or lost after the command ended: nothing to do.
		verbose("%s already lost at release: %s", h.tokens(), exit.Message(err))
	default:
		say("could not release %s (%s); its nodes go when the session ends", h.tokens(), exit.Message(err))
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

// noun names a kind in messages: lock, semaphore, election.
func noun(k fence.Kind) string {
	if k == fence.KindLock {
		return "lock"
	}
	return string(k)
}

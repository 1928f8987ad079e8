package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Errors of a Session.
var (
	// ErrSessionExpired: ZooKeeper expired the session; every lock it held is
	// gone. Make a new Session.
	ErrSessionExpired = errors.New("zklock: session expired")
	// ErrClosed: the Session was closed.
	ErrClosed = errors.New("zklock: session closed")
	// ErrUnavailable: ZooKeeper could not be reached.
	ErrUnavailable = errors.New("zklock: zookeeper unavailable")
)

// DefaultSessionTimeout is the session timeout asked of ZooKeeper.
const DefaultSessionTimeout = 10 * time.Second

// Options configures Dial. The zero value is usable.
type Options struct {
	// SessionTimeout asked of ZooKeeper (it may negotiate another within its
	// min/max; the negotiated one is what counts). Default 10s.
	SessionTimeout time.Duration
	// LossMargin: a grant is declared lost once ZooKeeper has not answered
	// for SessionTimeout-LossMargin, so that it is lost before ZooKeeper can
	// expire the session and grant the lock to someone else. Default 1/4 of
	// the session timeout.
	LossMargin time.Duration
	// Heartbeat is how often the session proves ZooKeeper is still there
	// when nothing else is talking to it. Default 1/6 of the session
	// timeout.
	Heartbeat time.Duration
	// Logger receives the session's events; default discards.
	Logger *slog.Logger
	// Observer is told of grants, waits, losses, token regressions,
	// connectivity and expiry; nil tells nobody.
	Observer Observer
	// Clock drives loss deadlines; default the wall clock.
	Clock Clock
	// Guard is the token regression guard; share one across the sessions of
	// a process so that it outlives a session. Default a new one.
	Guard *Guard
}

// Session owns one go-zookeeper connection and its ZooKeeper session. When
// ZooKeeper expires the session, Done closes and the Session is finished:
// every grant made on it reports loss, and new work needs a new Session. A
// Session never silently moves its locks to a new ZooKeeper session.
type Session struct {
	conn      *zk.Conn
	requested time.Duration
	timeout   atomic.Int64 // negotiated session timeout, ns
	margin    time.Duration
	heartbeat time.Duration
	log       *slog.Logger
	obs       Observer
	clock     Clock
	guard     *Guard

	// lastHeard is when the latest request that ZooKeeper answered was
	// sent, as an offset from base: base carries the monotonic clock
	// reading, so a wall-clock step cannot stretch a loss deadline.
	base       time.Time
	lastHeard  atomic.Int64
	negotiated chan struct{} // closed once the timeout was read from go-zookeeper
	negOnce    sync.Once
	connected  atomic.Bool
	id         atomic.Int64

	done       chan struct{}
	doneOnce   sync.Once
	doneErr    error
	connClosed chan struct{} // closed once the ZooKeeper session is closed

	// goMu guards starting goroutines against Close's wait for them.
	goMu   sync.Mutex
	noMore bool

	// granted remembers contenders that were granted on this session (a
	// bounded set: cleared when full, which only costs the hand-over
	// shortcut, never safety: a path in it was granted, whatever else).
	grantedMu sync.Mutex
	granted   map[string]struct{}

	mu      sync.Mutex
	cleanup map[orphan]struct{} // contenders still to delete
	wake    chan struct{}       // pokes the janitor

	wg sync.WaitGroup
}

// Dial connects to ZooKeeper (servers are host:port) and waits until a
// session is established or ctx ends.
func Dial(ctx context.Context, servers []string, opts Options) (*Session, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no servers given", ErrUnavailable)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = WallClock()
	}
	if opts.Guard == nil {
		opts.Guard = NewGuard()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	s := &Session{
		requested: opts.SessionTimeout,
		margin:    opts.LossMargin,
		heartbeat: opts.Heartbeat,
		log:       opts.Logger.With("component", "zklock"),
		obs:       opts.Observer,
		clock:     opts.Clock,
		guard:     opts.Guard,
		done:      make(chan struct{}),
		cleanup:   map[orphan]struct{}{},
		granted:   map[string]struct{}{},
		wake:      make(chan struct{}, 1),

		negotiated: make(chan struct{}),
		connClosed: make(chan struct{}),
	}
	s.timeout.Store(int64(opts.SessionTimeout))
	// The session cannot be older than this moment: a safe first "heard".
	s.base = s.clock.Now()

	established := make(chan struct{})
	var estOnce sync.Once
	conn, _, err := zk.Connect(servers, opts.SessionTimeout,
		zk.WithLogger(zkLogger{s}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			s.onState(ev.State)
			if ev.State == zk.StateHasSession {
				estOnce.Do(func() { close(established) })
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s.conn = conn
	select {
	case <-established:
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("%w: no session with %s: %v", ErrUnavailable, strings.Join(servers, ","), ctx.Err())
	}
	// go-zookeeper logs the negotiated timeout just after it announces the
	// session; give it a moment so that Timeout is never the unnegotiated one.
	select {
	case <-s.negotiated:
	case <-time.After(time.Second):
		s.log.Warn("could not read the negotiated session timeout; assuming the requested one", "timeout", opts.SessionTimeout)
	}
	s.id.Store(conn.SessionID())
	s.log.Info("session established", "session", fmt.Sprintf("0x%x", conn.SessionID()), "timeout", s.Timeout())
	s.spawn(s.run)
	return s, nil
}

// onState runs on go-zookeeper's event goroutine: it must not block.
func (s *Session) onState(st zk.State) {
	switch st {
	case zk.StateHasSession:
		s.connected.Store(true)
		s.obs.Connected(true)
	case zk.StateDisconnected, zk.StateConnecting:
		if s.connected.Swap(false) {
			s.log.Warn("disconnected from zookeeper")
		}
		s.obs.Connected(false)
	case zk.StateExpired:
		s.connected.Store(false)
		s.obs.Connected(false)
		s.obs.SessionExpired()
		s.log.Error("zookeeper session expired: every lock of this session is lost", "session", fmt.Sprintf("0x%x", s.id.Load()))
		s.finish(ErrSessionExpired)
	}
}

// finish closes Done once with err and stops the connection (so that
// go-zookeeper does not quietly open a new session under us).
func (s *Session) finish(err error) {
	s.doneOnce.Do(func() {
		s.doneErr = err
		close(s.done)
		go func() { // Close waits on the connection's goroutines; this may run on one of them
			s.conn.Close()
			close(s.connClosed)
		}()
	})
}

// Done closes when the session has expired or was closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session lives, then ErrSessionExpired or ErrClosed.
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.doneErr
	default:
		return nil
	}
}

// ID is the ZooKeeper session id.
func (s *Session) ID() int64 { return s.id.Load() }

// Timeout is the session timeout ZooKeeper negotiated.
func (s *Session) Timeout() time.Duration { return time.Duration(s.timeout.Load()) }

// Connected reports whether the connection to ZooKeeper is up.
func (s *Session) Connected() bool { return s.connected.Load() && s.Err() == nil }

// LastHeard is when the most recent request that ZooKeeper answered was sent
// (a conservative bound on when ZooKeeper last renewed the session).
func (s *Session) LastHeard() time.Time { return s.base.Add(time.Duration(s.lastHeard.Load())) }

// Deadline is the moment after which the session can no longer be trusted to
// exist: LastHeard + Timeout - LossMargin. Grants are declared lost there.
func (s *Session) Deadline() time.Time {
	return s.LastHeard().Add(s.Timeout() - s.lossMargin())
}

// Live reports whether the session may be trusted now: not ended, and its
// Deadline not passed. Request paths check it so that nothing is reported
// held in the window between the deadline and the loss monitor waking.
func (s *Session) Live() bool {
	return s.Err() == nil && !s.overdue(s.clock.Now())
}

// overdue reports whether, at now, ZooKeeper has been silent for long
// enough that it may have expired the session. Silence is measured on the
// monotonic clock and on the wall clock, and the larger counts: monotonic
// time stops while the machine is suspended, wall time can step; a wall
// clock stepping forward only makes a loss early, the safe side.
func (s *Session) overdue(now time.Time) bool {
	heard := s.LastHeard()
	silent := now.Sub(heard)
	if wall := now.Round(0).Sub(heard.Round(0)); wall > silent {
		silent = wall
	}
	return silent >= s.Timeout()-s.lossMargin()
}

func (s *Session) lossMargin() time.Duration {
	if s.margin > 0 {
		return s.margin
	}
	return s.Timeout() / 4
}

func (s *Session) heartbeatEvery() time.Duration {
	if s.heartbeat > 0 {
		return s.heartbeat
	}
	return s.Timeout() / 6
}

// heard records that a request sent at sent was answered.
func (s *Session) heard(sent time.Time) {
	n := int64(sent.Sub(s.base))
	for {
		old := s.lastHeard.Load()
		if n <= old || s.lastHeard.CompareAndSwap(old, n) {
			return
		}
	}
}

// call runs one ZooKeeper request, records when ZooKeeper last answered and
// maps go-zookeeper's connection errors to the package's.
func (s *Session) call(f func() error) error {
	if err := s.Err(); err != nil {
		return err
	}
	sent := s.clock.Now()
	err := f()
	switch {
	case err == nil || isServerAnswer(err):
		s.heard(sent)
		return err
	case errors.Is(err, zk.ErrSessionExpired):
		s.finish(ErrSessionExpired)
		return ErrSessionExpired
	case errors.Is(err, zk.ErrClosing):
		if e := s.Err(); e != nil {
			return e
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// isServerAnswer: errors that ZooKeeper itself sent back (it is alive).
func isServerAnswer(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists) ||
		errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNotEmpty) ||
		errors.Is(err, zk.ErrNoChildrenForEphemerals) || errors.Is(err, zk.ErrNoAuth) ||
		errors.Is(err, zk.ErrBadArguments) || errors.Is(err, zk.ErrInvalidACL)
}

// Close deletes the session's outstanding contenders it can, closes the
// session (ZooKeeper removes its ephemeral nodes at once) and waits for the
// session's goroutines.
func (s *Session) Close() error {
	s.finish(ErrClosed)
	<-s.connClosed // the session is gone: ZooKeeper has removed its nodes
	s.goMu.Lock()
	s.noMore = true
	s.goMu.Unlock()
	s.wg.Wait()
	return nil
}

// spawn runs f in a goroutine the Session waits for on Close; once Close
// has begun it refuses (false), so that Close's Wait never races an Add.
func (s *Session) spawn(f func()) bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.noMore {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

const maxGrantedMemory = 4096

func (s *Session) markGranted(path string) {
	s.grantedMu.Lock()
	defer s.grantedMu.Unlock()
	if len(s.granted) >= maxGrantedMemory {
		clear(s.granted)
	}
	s.granted[path] = struct{}{}
}

func (s *Session) wasGranted(path string) bool {
	s.grantedMu.Lock()
	defer s.grantedMu.Unlock()
	_, ok := s.granted[path]
	return ok
}

// orphan names a contender to delete: by its GUID under its lock node, since
// a create whose reply was lost has no known path.
type orphan struct{ parent, guid string }

// deleteLater hands a contender to the janitor, which deletes it as soon as
// ZooKeeper can be reached (a grant declared lost while ZooKeeper was
// silent, a waiter whose delete failed, a create abandoned mid-flight). No
// orphans.
func (s *Session) deleteLater(parent, guid string) {
	s.mu.Lock()
	s.cleanup[orphan{parent, guid}] = struct{}{}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pendingCleanups counts contenders still to delete.
func (s *Session) pendingCleanups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cleanup)
}

// run is the session's own goroutine: heartbeats and cleanup.
func (s *Session) run() {
	for {
		tc, t := s.clock.NewTimer(s.heartbeatEvery())
		select {
		case <-s.done:
			t.Stop()
			return
		case <-tc:
		case <-s.wake:
			t.Stop()
		}
		s.sweep()
		if s.clock.Now().Sub(s.LastHeard()) >= s.heartbeatEvery() {
			// A cheap read: an answer proves the session is alive at the time
			// it was sent.
			_ = s.call(func() error { _, _, err := s.conn.Exists("/"); return err })
		}
	}
}

// sweep deletes the contenders waiting in the cleanup set.
func (s *Session) sweep() {
	s.mu.Lock()
	todo := make([]orphan, 0, len(s.cleanup))
	for o := range s.cleanup {
		todo = append(todo, o)
	}
	s.mu.Unlock()
	for _, o := range todo {
		if err := s.deleteGUID(o.parent, o.guid); err != nil {
			continue
		}
		s.mu.Lock()
		delete(s.cleanup, o)
		s.mu.Unlock()
	}
}

// deleteGUID deletes the child of parent whose protected name carries guid.
func (s *Session) deleteGUID(parent, guid string) error {
	var children []string
	err := s.call(func() (err error) {
		// Sync first: a create that committed on another server must be
		// seen, or its node would be dropped from the cleanup set unseen.
		if _, err := s.conn.Sync(parent); err != nil {
			return err
		}
		children, _, err = s.conn.Children(parent)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if c, ok := parseContender(ch); ok && c.guid == guid {
			err := s.call(func() error { return s.conn.Delete(parent+"/"+ch, -1) })
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			s.log.Debug("deleted contender", "path", parent+"/"+ch)
		}
	}
	return nil
}

// callCtx is call, abandoned (not cancelled: ZooKeeper requests cannot be)
// when ctx ends. The request still completes in the background; the caller
// must make sure an abandoned write does no harm.
func (s *Session) callCtx(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res := make(chan error, 1)
	if !s.spawn(func() { res <- s.call(f) }) {
		return ErrClosed
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zkLogger sends go-zookeeper's log lines to slog and reads the negotiated
// session timeout from its "authenticated" line (go-zookeeper does not
// export it, and a timeout ZooKeeper lowered must not be taken for the one we
// asked for: losing a lock late is the one thing that must not happen).
type zkLogger struct{ s *Session }

func (l zkLogger) Printf(format string, args ...any) {
	if format == "authenticated: id=%d, timeout=%d" && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.s.timeout.Store(int64(time.Duration(ms) * time.Millisecond))
			l.s.negOnce.Do(func() { close(l.s.negotiated) })
		}
		// Only the first session is ours: after an expiry go-zookeeper may
		// authenticate a new one before it is closed.
		if id, ok := args[0].(int64); ok {
			l.s.id.CompareAndSwap(0, id)
		}
	}
	l.s.log.Debug(fmt.Sprintf(format, args...), "source", "go-zookeeper")
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Session owns one go-zookeeper connection and its ZooKeeper session. When
// ZooKeeper expires the session, Done closes and the Session is finished:
// every grant made on it reports loss, and new work needs a new Session. A
// Session never silently moves its locks to a new ZooKeeper session.
type Session struct {
	conn  *zk.Conn
	log   *slog.Logger
	obs   Observer
	clock Clock
	guard *Guard
	// floors records what the session issues; issued is what it held when
	// the session was dialled: the tokens of an earlier history, that
	// this session's must stay above.
	floors     *Floors
	freshFloor uint64
	issued     map[string]Issued
	acl        []zk.ACL
	// anonymous: no identity, so only world (and ip) ACL entries let the
	// session do anything.
	anonymous bool

	timeout   negotiatedTimeout
	margin    time.Duration
	heartbeat time.Duration

	// lastHeard is when the latest request that ZooKeeper answered was
	// sent, as an offset from base: base carries the monotonic clock
	// reading, so a wall-clock step cannot stretch a loss deadline.
	base      time.Time
	lastHeard atomic.Int64
	connected atomic.Bool
	// conns counts connection changes (up or down), so that what a
	// watch proved on one connection is not trusted on the next.
	conns atomic.Uint64
	id    atomic.Int64

	done       chan struct{}
	doneOnce   sync.Once
	doneErr    error
	connClosed chan struct{} // closed once the ZooKeeper session is closed

	workers   workers
	granted   grantedSet
	modes     claimedModes
	delayDirs delayDirs
	silence   silence
	mon       monitor
	// lookEvery paces the reads of a grant's look (the constant).
	lookEvery time.Duration
	// without turns shortcuts off, for the benchmark that measures them
	// (the package doc lists them); always zero outside it.
	without shortcuts
	grants  liveGrants
	blocked grantedSet // blocking nodes already reported
	janitor janitor
}

// onState runs on go-zookeeper's event goroutine: it must not block.
func (s *Session) onState(st zk.State) {
	s.conns.Add(1)
	switch st {
	case zk.StateHasSession:
		s.connected.Store(true)
		s.obs.Connected(true)
	case zk.StateDisconnected, zk.StateConnecting:
		if s.connected.Swap(false) && s.Err() == nil {
			// Once the session has ended (Close, expiry) the connection
			// going down is expected, not worth a warning.
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

// Connected reports whether the connection to ZooKeeper is up.
func (s *Session) Connected() bool { return s.connected.Load() && s.Err() == nil }

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

// Close closes the session (ZooKeeper removes its ephemeral nodes, so its
// outstanding contenders go with it) and waits for the session's goroutines.
func (s *Session) Close() error {
	s.finish(ErrClosed)
	<-s.connClosed // the session is gone: ZooKeeper has removed its nodes
	s.workers.wait()
	return nil
}

// spawn runs f in a goroutine that Close waits for; once Close has begun it
// refuses (false).
func (s *Session) spawn(f func()) bool { return s.workers.spawn(f) }

// workers are the goroutines a Session starts and Close waits for.
type workers struct {
	mu     sync.Mutex // guards starting goroutines against wait
	closed bool
	wg     sync.WaitGroup
}

// spawn runs f in a goroutine, or refuses (false) once wait has begun, so
// that wait never races an Add.
func (w *workers) spawn(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f()
	}()
	return true
}

// wait refuses new goroutines and waits for the running ones.
func (w *workers) wait() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}

// grantedSet remembers contenders that were granted on this session. It is
// bounded: cleared when full, which only costs the hand-over shortcut, never
// safety: a path in it was granted, whatever else.
type grantedSet struct {
	mu    sync.Mutex
	paths map[string]struct{}
}

const maxGrantedMemory = 4096

func (g *grantedSet) add(path string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.paths) >= maxGrantedMemory {
		clear(g.paths)
	}
	g.paths[path] = struct{}{}
}

func (g *grantedSet) has(path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.paths[path]
	return ok
}

// callCtx runs f, one ZooKeeper request, as call does, on a goroutine of
// the session, and returns f's results through the channel it waits on:
// when ctx ends it returns at once and abandons the request (not cancels:
// ZooKeeper requests cannot be), which still completes in the background
// and whose results nobody reads. The caller must make sure that an
// abandoned write does no harm. f returns its results rather than setting
// the caller's variables, so that an abandoned request cannot write them
// while the caller reads them.
func callCtx[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	if !s.spawn(func() {
		var r result
		r.err = s.call(func() (err error) { r.v, err = f(); return err })
		res <- r
	}) {
		return zero, ErrClosed
	}
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// do is callCtx for a request whose only result is its error.
func (s *Session) do(ctx context.Context, f func() error) error {
	_, err := callCtx(ctx, s, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// read is callCtx for a request that changes nothing, bounded so that a
// caller learns within a fraction of the session timeout that ZooKeeper
// cannot answer, rather than after go-zookeeper's own deadline: it fails at
// once while the session cannot be trusted (ended, or its deadline passed),
// and gives up after readTimeout or at the session's deadline, whichever
// comes first. An abandoned read completes in the background, harmlessly.
func read[T any](ctx context.Context, s *Session, f func() (T, error)) (T, error) {
	var zero T
	if !s.Live() {
		if err := s.Err(); err != nil {
			return zero, err
		}
		return zero, fmt.Errorf("%w: zookeeper has not answered for %v", ErrUnavailable, s.clock.Now().Sub(s.LastHeard()).Round(time.Millisecond))
	}
	d := min(s.readTimeout(), s.Deadline().Sub(s.clock.Now()))
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := callCtx(rctx, s, f)
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		return zero, fmt.Errorf("%w: no answer within %v", ErrUnavailable, d.Round(time.Millisecond))
	}
	return v, err
}

// The results of the requests that answer more than an error, and the
// requests that return them (for callCtx and read).
type (
	// got is what Get answers; ch is GetW's watch.
	got struct {
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	// existence is what Exists answers; ch is ExistsW's watch.
	existence struct {
		ok   bool
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	// listing is what Children answers; ch is ChildrenW's watch.
	listing struct {
		names []string
		stat  *zk.Stat
		ch    <-chan zk.Event
	}
)

func (s *Session) getOp(p string) func() (got, error) {
	return func() (got, error) { d, st, err := s.conn.Get(p); return got{d, st, nil}, err }
}

func (s *Session) getWOp(p string) func() (got, error) {
	return func() (got, error) { d, st, ch, err := s.conn.GetW(p); return got{d, st, ch}, err }
}

func (s *Session) existsOp(p string) func() (existence, error) {
	return func() (existence, error) { ok, st, err := s.conn.Exists(p); return existence{ok, st, nil}, err }
}

func (s *Session) existsWOp(p string) func() (existence, error) {
	return func() (existence, error) { ok, st, ch, err := s.conn.ExistsW(p); return existence{ok, st, ch}, err }
}

func (s *Session) childrenOp(p string) func() (listing, error) {
	return func() (listing, error) { cs, st, err := s.conn.Children(p); return listing{cs, st, nil}, err }
}

func (s *Session) childrenWOp(p string) func() (listing, error) {
	return func() (listing, error) { cs, st, ch, err := s.conn.ChildrenW(p); return listing{cs, st, ch}, err }
}

// readTimeout is the longest a read waits for its answer: a quarter of the
// session timeout, far beyond what a healthy ensemble takes.
func (s *Session) readTimeout() time.Duration { return s.Timeout() / 4 }

// shortcuts names the shortcuts a session can be made to go without (see
// the package doc); only BenchmarkShortcuts sets them.
type shortcuts struct {
	markerProof bool // read the lock-delay marker at every grant
	handOver    bool // read the children after a predecessor of ours went
}

package zklock

// How a session knows whether it can still be trusted: the heartbeat that
// proves it alive when nothing else talked to ZooKeeper, the deadline that
// silence is measured against, the one watcher that tells every grant when
// the deadline passed, and the timeout ZooKeeper negotiated, which every
// deadline is computed from.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// run is the session's own goroutine: it proves the session alive with a
// heartbeat when nothing else talked to ZooKeeper lately, and runs the
// janitor.
func (s *Session) run() {
	for {
		tc, t := s.clock.NewTimer(s.heartbeatEvery())
		select {
		case <-s.done:
			t.Stop()
			return
		case <-tc:
		case <-s.janitor.wake:
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

func (s *Session) heartbeatEvery() time.Duration {
	if s.heartbeat > 0 {
		return s.heartbeat
	}
	return s.Timeout() / 6
}

// Ping asks ZooKeeper for a cheap answer (whether "/" exists), bounded like
// every read: it fails at once while the session cannot be trusted, and
// after a quarter of the session timeout without an answer. An answer moves
// LastHeard, so a caller that pings more often than the heartbeat learns
// sooner that ZooKeeper has stopped answering.
func (s *Session) Ping(ctx context.Context) error {
	_, err := read(ctx, s, s.existsOp("/"))
	return err
}

// A session's deadline: how long ZooKeeper has been silent, measured from
// the moment the latest answered request was sent, against the negotiated
// timeout less the loss margin.

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
	return s.silentFor(now) >= s.Timeout()-s.lossMargin()
}

func (s *Session) lossMargin() time.Duration {
	if s.margin > 0 {
		return s.margin
	}
	return s.Timeout() / 4
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

// One watcher per session tells every grant when ZooKeeper has been silent
// past the session's deadline, so that a grant needs no timer of its own:
// with many grants, their timers' wake-ups cost more than the grants.

// silence is the signal: a channel closed once the session is found
// overdue. A new one replaces it when ZooKeeper is heard again.
type silence struct {
	mu sync.Mutex
	ch chan struct{}
}

// closedChan is closed from the start.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// silent returns a channel that closes once the session is overdue: at
// once (closed) if it is now.
func (s *Session) silent() <-chan struct{} {
	s.silence.mu.Lock()
	defer s.silence.mu.Unlock()
	if s.overdue(s.clock.Now()) {
		return closedChan
	}
	if s.silence.ch == nil {
		s.silence.ch = make(chan struct{})
	}
	return s.silence.ch
}

// watchSilence wakes at the session's deadline, and at least every
// heartbeat interval (its timer runs on the monotonic clock, which a
// suspended machine does not advance; overdue also reads the wall clock),
// and closes the signal once the session is overdue. It runs until the
// session ends, apart from the heartbeat, whose request may block.
func (s *Session) watchSilence() {
	for {
		wake := s.Deadline()
		if hb := s.clock.Now().Add(s.heartbeatEvery()); hb.Before(wake) {
			wake = hb
		}
		tc, t := s.clock.TimerAt(wake)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-tc:
		}
		s.silence.mu.Lock()
		if s.silence.ch != nil && s.overdue(s.clock.Now()) {
			close(s.silence.ch)
			s.silence.ch = nil // the next waiter, once heard again, gets a new one
		}
		s.silence.mu.Unlock()
		if silent := s.silentFor(s.clock.Now()); silent >= giveUpAfter*s.Timeout() {
			s.giveUp(silent)
			return
		}
	}
}

// giveUpAfter is how many session timeouts of silence end a session on
// this side. ZooKeeper has expired it by then, unless it lost its quorum
// for as long, and every grant of it was declared lost at its deadline; but
// go-zookeeper keeps redialling it for ever, and an ensemble restored from
// an older copy, or rebuilt, refuses it outright (the session has seen a
// later zxid than the ensemble's own), so it would never learn of the
// expiry, and its owner would never dial the new session it needs.
const giveUpAfter = 2

// silentFor is how long ZooKeeper has been silent at now, on the monotonic
// or the wall clock, whichever counts more.
func (s *Session) silentFor(now time.Time) time.Duration {
	heard := s.LastHeard()
	silent := now.Sub(heard)
	if wall := now.Round(0).Sub(heard.Round(0)); wall > silent {
		silent = wall
	}
	return silent
}

// giveUp ends the session as expired after silent without an answer.
func (s *Session) giveUp(silent time.Duration) {
	s.obs.Connected(false)
	s.obs.SessionExpired()
	s.log.Error("zookeeper silent for twice the session timeout: the session is given up as expired, every lock of it is lost",
		"session", fmt.Sprintf("0x%x", s.id.Load()), "silent", silent.Round(time.Millisecond), "session_timeout", s.Timeout())
	s.finish(ErrSessionExpired)
}

// negotiatedTimeout is the session timeout ZooKeeper granted. ZooKeeper
// clamps the one asked for into its [minSessionTimeout, maxSessionTimeout]
// (by default 2 and 20 ticks), and go-zookeeper does not export the result:
// it is read from go-zookeeper's log line instead. A timeout ZooKeeper
// lowered must not be taken for the one asked for: every loss deadline is
// computed from it, and losing a lock late is the one thing that must not
// happen.
type negotiatedTimeout struct {
	ns    atomic.Int64  // the negotiated timeout; the requested one until known
	known chan struct{} // closed once the negotiated timeout was read
	once  sync.Once
}

// init starts with the requested timeout, until the negotiated one is read.
func (t *negotiatedTimeout) init(requested time.Duration) {
	t.known = make(chan struct{})
	t.ns.Store(int64(requested))
}

func (t *negotiatedTimeout) get() time.Duration { return time.Duration(t.ns.Load()) }

// set records the timeout ZooKeeper granted.
func (t *negotiatedTimeout) set(d time.Duration) {
	t.ns.Store(int64(d))
	t.once.Do(func() { close(t.known) })
}

// await waits up to d for the negotiated timeout and reports whether it is
// known. go-zookeeper logs it just after it announces the session.
func (t *negotiatedTimeout) await(d time.Duration) bool {
	select {
	case <-t.known:
		return true
	case <-time.After(d):
		return false
	}
}

// Timeout is the session timeout ZooKeeper negotiated: the one asked for in
// Options.SessionTimeout, clamped by the server into its minimum and maximum.
func (s *Session) Timeout() time.Duration { return s.timeout.get() }

// zkLogger sends go-zookeeper's log lines to slog and reads the negotiated
// session timeout and the session id from its "authenticated" line.
type zkLogger struct{ s *Session }

func (l zkLogger) Printf(format string, args ...any) {
	if format == "authenticated: id=%d, timeout=%d" && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			l.s.timeout.set(time.Duration(ms) * time.Millisecond)
		}
		// Only the first session is ours: after an expiry go-zookeeper may
		// authenticate a new one before it is closed.
		if id, ok := args[0].(int64); ok {
			l.s.id.CompareAndSwap(0, id)
		}
	}
	l.s.log.Debug(fmt.Sprintf(format, args...), "source", "go-zookeeper")
}

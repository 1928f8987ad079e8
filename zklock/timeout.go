package zklock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

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

package zklock

import "sync"

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
	}
}

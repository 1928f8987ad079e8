package zklock

import "time"

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

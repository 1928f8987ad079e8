package zklock

import (
	"context"
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
	return s.read(ctx, func() error { _, _, err := s.conn.Exists("/"); return err })
}

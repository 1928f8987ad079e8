package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Grant is one holding of a lock. Holding is never guaranteed: Lost closes
// when the grant can no longer be trusted — the session expired, the
// contender node disappeared, or ZooKeeper has been silent for long enough
// that it may have expired the session (Session.Deadline), which comes
// before ZooKeeper could let anyone else in. A holder must stop acting on
// the lock when Lost closes, and must send Token with every write so that
// the resource can refuse it if it acts late anyway.
type Grant struct {
	Name  string // lock name
	Path  string // our contender node
	Token uint64 // fencing token: higher than every earlier grant of this lock

	m     *Mutex
	guid  string
	lost  chan struct{} // closed when the grant ends, for any reason
	stop  chan struct{} // closed by Release to end the monitor
	ended chan struct{} // closed when the monitor has returned

	mu       sync.Mutex
	err      error
	stopOnce sync.Once
	rearm    bool // the monitor's own-node watch must be set again
}

// Sequencer is the grant's sequencer string, name@token.
func (g *Grant) Sequencer() string { return fmt.Sprintf("%s@%d", g.Name, g.Token) }

// Lost closes when the grant ends: lost, or released.
func (g *Grant) Lost() <-chan struct{} { return g.lost }

// Err is nil while the grant holds; after Lost closes it says why:
// ErrReleased, or an error wrapping ErrLockLost.
func (g *Grant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// end records why the grant ended; the first reason wins. It reports
// whether this call ended it.
func (g *Grant) end(err error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return false
	}
	g.err = err
	close(g.lost)
	g.m.s.obs.GrantEnded(g.Name, err)
	return true
}

// monitor watches the grant until it is released or lost.
func (g *Grant) monitor(ownWatch <-chan zk.Event) {
	s := g.m.s
	defer close(g.ended)
	for {
		deadline := s.Deadline()
		if now := s.clock.Now(); s.overdue(now) {
			err := fmt.Errorf("%w: zookeeper not heard from since %s (session timeout %v): the session may have expired",
				ErrLockLost, s.LastHeard().Format("15:04:05.000"), s.Timeout())
			if g.end(err) {
				s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", "zookeeper silent")
				// Should the session survive, the node must not: its holder
				// was told it lost the lock.
				s.deleteLater(g.m.path, g.guid)
			}
			return
		}
		if g.rearm && ownWatch == nil {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			var (
				ok bool
				ch <-chan zk.Event
			)
			err := s.callCtx(ctx, func() (err error) { ok, _, ch, err = s.conn.ExistsW(g.Path); return err })
			cancel()
			switch {
			case err == nil && ok:
				ownWatch, g.rearm = ch, false
			case err == nil || errors.Is(err, zk.ErrNoNode):
				if g.end(fmt.Errorf("%w: contender deleted", ErrLockLost)) {
					s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", "contender deleted")
				}
				return
			default: // try again shortly; the deadline is checked first
				tc, t := s.clock.NewTimer(100 * time.Millisecond)
				select {
				case <-tc:
				case <-g.stop:
					t.Stop()
					return
				case <-s.done:
					t.Stop()
					if g.end(fmt.Errorf("%w: %w", ErrLockLost, s.Err())) {
						s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", s.Err())
					}
					return
				}
			}
			continue
		}
		// Wake at the deadline, and at least every heartbeat interval: the
		// timer runs on the monotonic clock, which a suspended machine does
		// not advance, and overdue also reads the wall clock.
		wake := deadline
		if hb := s.clock.Now().Add(s.heartbeatEvery()); hb.Before(wake) {
			wake = hb
		}
		tc, t := s.clock.TimerAt(wake)
		select {
		case <-g.stop:
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			if g.end(fmt.Errorf("%w: %w", ErrLockLost, s.Err())) {
				s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", s.Err())
			}
			return
		case <-tc:
		case ev := <-ownWatch:
			t.Stop()
			if ev.Type == zk.EventNotWatching && s.Err() != nil {
				// go-zookeeper ends the watches right after it reports the
				// expiry: say the real reason.
				if g.end(fmt.Errorf("%w: %w", ErrLockLost, s.Err())) {
					s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", s.Err())
				}
				return
			}
			if ev.Type == zk.EventNodeDataChanged || ev.Type == zk.EventNodeCreated {
				// Not a loss; watch again. (Nobody writes our node, so this
				// is rare.)
				// Bounded by the session deadline, so that the loop keeps
				// checking it; until the watch is set again, the deadline
				// and the session decide.
				ctx, cancel := context.WithDeadline(context.Background(), s.Deadline())
				var (
					ok bool
					ch <-chan zk.Event
				)
				err := s.callCtx(ctx, func() (err error) { ok, _, ch, err = s.conn.ExistsW(g.Path); return err })
				cancel()
				if err == nil && ok {
					ownWatch = ch
					continue
				}
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					ownWatch = nil
					g.rearm = true
					continue
				}
			}
			reason := "contender deleted"
			if ev.Type == zk.EventNotWatching {
				reason = fmt.Sprintf("watch ended: %v", ev.Err)
			}
			if g.end(fmt.Errorf("%w: %s", ErrLockLost, reason)) {
				s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", reason)
			}
			return
		}
	}
}

// Release deletes the contender and ends the grant. Releasing a lost grant
// returns its loss error (the holder learns it had lost); releasing twice
// returns nil. If ZooKeeper cannot be reached before ctx ends, the session's
// janitor deletes the node later and Release returns the error.
func (g *Grant) Release(ctx context.Context) error {
	s := g.m.s
	g.stopOnce.Do(func() { close(g.stop) })
	<-g.ended
	if err := g.Err(); err != nil {
		if errors.Is(err, ErrReleased) {
			return nil
		}
		return err
	}
	err := s.callCtx(ctx, func() error { return s.conn.Delete(g.Path, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	if err != nil && s.Err() == nil {
		s.deleteLater(g.m.path, g.guid)
	}
	g.end(ErrReleased)
	s.log.Debug("released", "lock", g.Name, "token", g.Token)
	return err
}

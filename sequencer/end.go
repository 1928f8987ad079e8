package sequencer

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// How a lease ends, whatever ends it (its holder's release, expiry, the
// loss of its grant, an operator's break, Close): the table claims it,
// then its grant is released, and the end is recorded, counted and logged.

// end moves a live lease to state, counts and logs it, and releases its
// grant (a no-op for a grant already lost). It reports whether this call
// ended the lease.
func (s *Service) end(ctx context.Context, l *lease, state leaseState, reason string) bool {
	ok := s.leases.claim(l, state)
	if ok {
		s.ended(ctx, l, state, reason, false)
	}
	return ok
}

// ended releases the grant of l, which the table has claimed, and counts
// and logs the end. closing (Close, with the session about to close) leaves
// the contender to the session's close where no lock-delay marker needs a
// clean release (see zklock.Grant.ReleaseOnClose).
func (s *Service) ended(ctx context.Context, l *lease, state leaseState, reason string, closing bool) {
	h := l.held()
	release := h.Release
	switch {
	case state == expired, state == broken:
		// Not a clean release: a lock-delay applies before the next grant.
		release = h.Abandon
	case closing:
		release = h.ReleaseOnClose
	}
	err := release(ctx)
	s.auditEnd(l, state, closing)
	if l.set != nil {
		s.setEnded(ctx, l, state, reason, err)
		return
	}
	if l.kind == fence.KindElection {
		s.watches.touch(watchKey{kind: fence.KindElection, name: l.name})
		s.log.Info("leadership ended", "election", l.name, "term", l.grant.Token, "owner", l.owner, "how", reason, "err", l.grant.Err())
		return
	}
	s.m.Release(l.name, reason)
	switch {
	case state == expired:
		s.log.Warn("lease expired", noun(l.kind), l.name, "token", l.grant.Token, "owner", l.owner)
	case state == lost:
		s.log.Warn("lease lost", noun(l.kind), l.name, "token", l.grant.Token, "owner", l.owner, "err", l.grant.Err())
	case state == broken:
		s.log.Warn("lease broken", noun(l.kind), l.name, "token", l.grant.Token, "owner", l.owner)
	case closing:
		// One line for all of them: Close logs how many.
		s.log.Debug("released", noun(l.kind), l.name, "token", l.grant.Token, "owner", l.owner)
	default:
		s.log.LogAttrs(ctx, slog.LevelDebug, "released", slog.String(noun(l.kind), l.name), slog.Uint64("token", l.grant.Token), slog.String("owner", l.owner))
	}
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		s.log.Warn("release: contender left for the janitor", noun(l.kind), l.name, "err", err)
	}
}

// auditEnd records the end of l in the audit log: a break has recorded
// its own line, and a release at Close is a release.
func (s *Service) auditEnd(l *lease, state leaseState, closing bool) {
	switch {
	case state == broken:
	case state == expired:
		s.audit.ofLease(l, AuditExpiry, "its ttl passed without renewal")
	case state == lost:
		s.audit.ofLease(l, AuditLoss, "its zookeeper session or contender node went away")
	case l.kind == fence.KindElection:
		s.audit.ofLease(l, AuditResignation, "")
	case closing:
		s.audit.ofLease(l, AuditRelease, "the daemon shut down")
	default:
		s.audit.ofLease(l, AuditRelease, "")
	}
}

// setEnded counts and logs the end of a multi-lock lease, whose grant end
// has released (err its answer).
func (s *Service) setEnded(ctx context.Context, l *lease, state leaseState, reason string, err error) {
	for _, name := range l.set.names {
		s.m.Release(name, reason)
	}
	switch state {
	case expired:
		s.log.Warn("multi-lock lease expired", "locks", l.name, "owner", l.owner)
	case lost:
		s.log.Warn("multi-lock lease lost", "locks", l.name, "owner", l.owner, "err", l.set.grant.Err())
	default:
		s.log.Debug("released", "locks", l.name, "owner", l.owner)
	}
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		s.log.Warn("release: contenders left for the janitor", "locks", l.name, "err", err)
	}
}

// runExpiries waits for the armed timer and ends the leases whose expiry
// has passed, until the Service stops.
func (s *Service) runExpiries() {
	defer s.wg.Done()
	for {
		c := s.leases.timer()
		select {
		case <-s.stop:
			return
		case <-s.leases.exp.kick:
			continue
		case <-c:
		}
		// Counted under the table's lock: Close's Wait cannot have returned.
		due := s.leases.due(c, func() { s.wg.Add(1) })
		if len(due) > 0 {
			go s.expire(due)
		}
	}
}

// expireParallelism is how many expiries run their ZooKeeper requests at
// once.
const expireParallelism = 64

// expire ends the leases of due, whose expiry has passed: expiry deletes
// each contender (without a clean release: a lock-delay applies) so that
// the next waiter proceeds.
func (s *Service) expire(due []*lease) {
	defer s.wg.Done()
	one := func(l *lease) {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTimeout)
		defer cancel()
		if s.end(ctx, l, expired, metrics.ReasonExpired) {
			return
		}
		// Not ended by this call: it had already ended, or (should the
		// clock have gone back) its expiry is still ahead.
		s.leases.reschedule(l)
	}
	if len(due) == 1 {
		one(due[0])
		return
	}
	work := make(chan *lease)
	var wg sync.WaitGroup
	for range min(len(due), expireParallelism) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				one(l)
			}
		}()
	}
	for _, l := range due {
		work <- l
	}
	close(work)
	wg.Wait()
}

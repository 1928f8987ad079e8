package sequencer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Grants of every kind: validating the request, the idempotent retry by
// lease id, and making a grant a lease. Acquire (locks) is here; semaphores
// and elections have files of their own.

// grantReq is what every kind's grant request has: owner, lease id, ttl and
// wait, read and validated.
type grantReq struct {
	name, owner, leaseID string
	ttl                  time.Duration // 0: not given (DefaultTTL for a new lease; a retry keeps its own)
	wait                 time.Duration
}

func readGrant(f api.Family, name, owner, leaseID string, ttl, wait *api.Duration) (grantReq, error) {
	g := grantReq{name: name, owner: owner, leaseID: leaseID}
	if err := validateName(f, name); err != nil {
		return g, err
	}
	switch {
	case owner == "":
		return g, badRequest("owner is required: name who is asking, e.g. host:pid")
	case len(owner) > api.MaxOwnerBytes:
		return g, badRequest("owner is %d bytes, longer than %d", len(owner), api.MaxOwnerBytes)
	case leaseID != "" && !api.ValidLeaseID(leaseID):
		return g, badRequest("lease_id %.40q must be 32 lowercase hex digits", leaseID)
	}
	var err error
	if g.ttl, err = optionalTTL(ttl); err != nil {
		return g, err
	}
	if wait != nil {
		g.wait = time.Duration(*wait)
	}
	if g.wait < 0 || g.wait > api.MaxWait {
		return g, badRequest("wait %v is out of range: it must be between 0s and %v", g.wait, api.MaxWait)
	}
	return g, nil
}

// newTTL is the TTL of a new lease.
func (g grantReq) newTTL() time.Duration {
	if g.ttl == 0 {
		return api.DefaultTTL
	}
	return g.ttl
}

// acquireLock grants the lock name to req.Owner for req.TTL, waiting up to
// req.Wait (0 tries once). If ctx ends while waiting (the HTTP client went
// away), the contender is withdrawn. A request with the lease_id of a live
// lease is a retry: see retry.
func (s *Service) acquireLock(ctx context.Context, name string, req api.AcquireRequest) (api.Lease, error) {
	g, err := readGrant(api.Locks, name, req.Owner, req.LeaseID, req.TTL, req.Wait)
	if err != nil {
		return api.Lease{}, err
	}
	kind := fence.KindLock
	switch req.Mode {
	case "", api.ModeExclusive:
	case api.ModeShared:
		kind = fence.KindShared
	default:
		return api.Lease{}, badRequest("mode %.40q: want exclusive or shared", req.Mode)
	}
	delay := s.cfg.LockDelay
	if kind == fence.KindShared {
		delay = 0 // readers have none
	}
	if req.LockDelay != nil {
		if delay = time.Duration(*req.LockDelay); kind == fence.KindShared && delay != 0 {
			return api.Lease{}, badRequest("a shared lease has no lock_delay")
		}
	}
	if delay < 0 || delay > api.MaxLockDelay {
		return api.Lease{}, badRequest("lock_delay %v is out of range: it must be between 0s and %v", delay, api.MaxLockDelay)
	}
	if kind == fence.KindShared && s.cfg.TokenMode != zklock.TokenZxid {
		return api.Lease{}, badRequest("shared leases need token mode zxid; this daemon runs %s", s.cfg.TokenMode)
	}
	sess, err := s.liveSession()
	if err != nil {
		return api.Lease{}, err
	}
	out, ok, err := s.retry(g, func(l *lease) string {
		switch {
		case familyOf(l.kind) != api.Locks:
			return "kind"
		case req.Mode != "" && l.kind != kind:
			return "mode"
		case req.LockDelay != nil && l.delay != delay:
			return "lock_delay"
		}
		return ""
	})
	if ok || err != nil {
		return out, err
	}
	gr, err := s.contend(ctx, sess, g, kind, delay)
	if err != nil {
		return api.Lease{}, err
	}
	return s.admit(ctx, &lease{kind: kind, grant: gr, delay: delay}, g, 0)
}

// retry is a grant that names the lease id of a live lease of this daemon:
// it returns that lease (same token, TTL extended; a retry without a ttl
// keeps the lease's), with ok, if the request's kind, name and owner are
// the lease's and differs names no other field it gives that is not;
// otherwise it refuses the request and changes nothing. A lease id that is
// not live here is not a retry (ok false): the grant goes on under it.
func (s *Service) retry(g grantReq, differs func(*lease) string) (out api.Lease, ok bool, err error) {
	ok, err = s.retryWith(g, differs, func(l *lease) { out = l.view() })
	return out, ok, err
}

// retryWith is retry for any form of the answer: view makes it, under
// the table's lock.
func (s *Service) retryWith(g grantReq, differs func(*lease) string, view func(*lease)) (ok bool, err error) {
	if g.leaseID == "" {
		return false, nil
	}
	var l *lease
	extended := false
	s.leases.with(func() {
		if l = s.leases.lookupLocked(g.leaseID); l == nil || !l.live(s.clock.Now()) {
			return
		}
		field := differs(l)
		switch {
		case l.name != g.name && l.set != nil:
			field = "names"
		case l.name != g.name:
			field = "name"
		case l.owner != g.owner:
			field = "owner"
		}
		if field != "" {
			err = badRequest("lease_id %s is a live lease of %s %q whose %s differs from this request's: a retry must repeat the request that granted it", g.leaseID, noun(l.kind), l.name, field)
			return
		}
		extended = s.leases.extendLocked(l, g.ttl, func() { view(l) })
	})
	if !extended {
		return false, err
	}
	s.leases.countRenewal(l)
	return true, nil
}

// contend puts a contender for the lock on sess and waits up to g.wait for
// the grant (0 tries once); delay is the grant's lock-delay.
func (s *Service) contend(ctx context.Context, sess *zklock.Session, g grantReq, kind fence.Kind, delay time.Duration) (*zklock.Grant, error) {
	data := s.contenderData(g.owner)
	mu, err := zklock.NewMutex(sess, g.name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode), zklock.WithData(data), zklock.WithLockDelay(delay))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	var lk interface {
		Acquire(context.Context) (*zklock.Grant, error)
		TryAcquire(context.Context) (*zklock.Grant, error)
	} = mu
	if kind == fence.KindShared {
		if lk, err = zklock.NewReadLock(sess, g.name, zklock.WithRoot(s.cfg.Root), zklock.WithData(data)); err != nil {
			return nil, badRequest("%v", err)
		}
	}
	gr, err := waitFor(ctx, g.wait, lk.Acquire, lk.TryAcquire)
	if err != nil {
		return nil, s.grantError(ctx, sess, kind, g.name, err, func(ctx context.Context) uint64 {
			if h, herr := mu.Holder(ctx); herr == nil {
				return h.Token
			}
			return 0
		})
	}
	return gr, nil
}

// waitFor runs try when wait is 0, and acquire bounded by wait otherwise.
func waitFor[G any](ctx context.Context, wait time.Duration, acquire, try func(context.Context) (G, error)) (G, error) {
	if wait == 0 {
		return try(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return acquire(wctx)
}

// grantError maps a failed grant of any kind: not granted within the wait
// is a *ConflictError (held) with the current token current reads; a
// semaphore's recorded limit another *ConflictError; the rest unavailable
// or the caller's own cancellation.
func (s *Service) grantError(ctx context.Context, sess *zklock.Session, kind fence.Kind, name string, err error, current func(context.Context) uint64) error {
	var (
		le *zklock.LimitError
		me *zklock.TokenModeError
		oe *zklock.OpenRootError
		fe *zklock.FloorError
	)
	switch {
	case errors.As(err, &le):
		return &ConflictError{Err: api.ErrLimitMismatch, Kind: kind, Name: name, Limit: le.Recorded}
	case errors.As(err, &me):
		return unavailable(fmt.Sprintf("%s refuses this daemon's token mode %s: it records %s (give this daemon roots of its own, or the same token mode)", me.Root, me.Wanted, me.Recorded), nil)
	case errors.As(err, &fe):
		if ws, _ := s.watches.session(); ws != nil {
			ws.ForgetTokenMark(fe.Root) // its reads follow the raise that comes next
		}
		// The answer names the command that raises it; FloorAdvice does not.
		return unavailable(fmt.Sprintf("%s: seqd floor --zk … --raise %d", FloorAdvice(fe), fe.Issued.Token), nil)
	case errors.As(err, &oe):
		return unavailable(fmt.Sprintf("%s lets any client %s, and this daemon creates its nodes under the creator ACL: fix the root's ACL or give the daemon another root", oe.Root, oe.Perms), nil)
	case errors.Is(err, zklock.ErrHeld), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && sess.Connected():
		return &ConflictError{Err: api.ErrHeld, Kind: kind, Name: name, Delayed: errors.Is(err, zklock.ErrLockDelay), CurrentToken: current(context.WithoutCancel(ctx))}
	case ctx.Err() != nil && !errors.Is(err, zklock.ErrUnavailable):
		return ctx.Err()
	}
	return unavailable("zookeeper did not grant it", err)
}

// contenderData is what a contender node of owner holds.
func (s *Service) contenderData(owner string) []byte {
	b, _ := json.Marshal(contenderData{Owner: owner, Daemon: s.cfg.Identity}) // cannot fail: strings
	return b
}

// admit makes l's grant a lease for g and schedules its expiry; a Service
// that is closing releases the grant instead. limit is a semaphore's.
func (s *Service) admit(ctx context.Context, l *lease, g grantReq, limit int) (api.Lease, error) {
	var out api.Lease
	err := s.admitWith(ctx, l, g, limit, func(l *lease) { out = l.view() })
	return out, err
}

// admitWith is admit for any form of the answer: view makes it, under
// the table's lock.
func (s *Service) admitWith(ctx context.Context, l *lease, g grantReq, limit int, view func(*lease)) error {
	l.id = newLeaseID()
	if g.leaseID != "" {
		l.id, _ = parseLeaseID(g.leaseID) // validated with the request
	}
	gr := l.held()
	l.name, l.owner, l.ttl, l.limit = g.name, g.owner, g.newTTL(), int32(limit)
	if c := callerOf(ctx); c.id != "" {
		l.who = c
	}
	l.sign(s.cfg.Signer)
	l.at = -1
	err := s.leases.add(l, func() {
		view(l)
		s.wg.Add(1) // under the table's lock: Close cannot be waiting yet (it closes the table first)
	})
	if err != nil {
		gr.Release(context.WithoutCancel(ctx))
		return err
	}
	// The grant's loss ends the lease. A grant released has been released
	// by end, which ended the lease first.
	gr.AfterEnd(func(err error) {
		defer s.wg.Done()
		if !errors.Is(err, zklock.ErrReleased) {
			s.end(context.Background(), l, lost, metrics.ReasonLost)
		}
	})
	switch {
	case l.set != nil:
		s.audit.ofLease(l, AuditGrant, "")
		s.log.LogAttrs(ctx, slog.LevelDebug, "granted", slog.Any("locks", l.set.grant.Locks), slog.String("owner", l.owner), slog.Duration("ttl", l.ttl))
		return nil
	case l.kind == fence.KindElection:
		s.audit.ofLease(l, AuditTerm, "")
		s.m.ElectionWon(l.name)
		s.watches.touch(watchKey{kind: fence.KindElection, name: l.name})
		s.log.Info("elected", "election", l.name, "term", l.grant.Token, "owner", l.owner, "ttl", l.ttl)
		return nil
	}
	s.audit.ofLease(l, AuditGrant, "")
	s.log.LogAttrs(ctx, slog.LevelDebug, "granted", slog.String(noun(l.kind), l.name), slog.Uint64("token", l.grant.Token), slog.String("owner", l.owner), slog.Duration("ttl", l.ttl))
	return nil
}

// contenderData is stored in each contender node. `seqd lock` writes the
// same keys (owner, command), so that Status names its holders too.
type contenderData struct {
	Owner   string `json:"owner"`
	Daemon  string `json:"daemon,omitempty"`
	Command string `json:"command,omitempty"`
}

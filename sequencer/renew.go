package sequencer

import (
	"context"
	"errors"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// A renewal, and every answer a renewal or a release can get that is not
// its lease. In order: the request is read (bad_request); the lease it
// names is found (an operator's break answers broken; a lease gone, or a
// token older than the lease's, answers stale_token when the lock or
// election has a higher token now, lost otherwise); its grant is checked
// in ZooKeeper (no live session or no answer: unavailable; the grant lost:
// the lease ends, then answers as a lease gone); and the table moves its
// expiry, unless it has ended meanwhile (lost).

// renew extends a live lease of family f by its TTL (or req.TTL, which then
// becomes its TTL) and keeps its token. While ZooKeeper is unreachable it
// answers an *UnavailableError: the lease cannot be vouched for.
func (s *Service) renew(ctx context.Context, f api.Family, name string, req api.LeaseRequest) (api.Lease, error) {
	ttl, err := optionalTTL(req.TTL)
	if err != nil {
		return api.Lease{}, err
	}
	l, err := s.leaseFor(ctx, f, name, req, metrics.SourceRenew)
	if err != nil {
		return api.Lease{}, err
	}
	return s.renewLease(ctx, l, req, ttl)
}

// renewLease extends the live lease l (ttl 0 keeps its TTL), after checking
// in ZooKeeper that its grant still holds: a lock's or an election's
// contender is still the lowest, a semaphore's lease node still there and
// ours.
func (s *Service) renewLease(ctx context.Context, l *lease, req api.LeaseRequest, ttl time.Duration) (api.Lease, error) {
	var out api.Lease
	err := s.extendLease(ctx, l, ttl, func(lostNow bool) error {
		if lostNow {
			// Answer as for any ended lease: stale when the lock moved on.
			if _, err := s.leaseFor(ctx, familyOf(l.kind), l.name, req, metrics.SourceRenew); err != nil {
				return err
			}
		}
		return s.lostError(l, req.Token)
	}, func() { out = l.view() })
	return out, err
}

// extendLease extends the live lease l (ttl 0 keeps its TTL) after
// checking in ZooKeeper that its grant still holds, and calls view under
// the table's lock. A lease found ended is answered by ended, told whether the check
// has just found its grant lost.
func (s *Service) extendLease(ctx context.Context, l *lease, ttl time.Duration, ended func(lostNow bool) error, view func()) error {
	if _, err := s.liveSession(); err != nil {
		return unavailable("disconnected from zookeeper; the lease cannot be renewed now", nil)
	}
	h := l.held()
	if err := h.Verify(ctx); err != nil {
		switch {
		case h.Err() == nil: // ZooKeeper did not answer
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return unavailable("zookeeper did not answer", err)
		case errors.Is(err, zklock.ErrLockLost):
			s.end(context.WithoutCancel(ctx), l, lost, metrics.ReasonLost)
			return ended(true)
		}
		return ended(false)
	}
	if !s.leases.extend(l, ttl, view) {
		return ended(false)
	}
	s.countRenewal(l)
	return nil
}

// countRenewal counts a renewal of l for each lock it holds.
func (s *Service) countRenewal(l *lease) {
	switch {
	case l.set != nil:
		for _, name := range l.set.names {
			s.m.Renewal(name)
		}
	case l.kind != fence.KindElection:
		s.m.Renewal(l.name)
	}
}

// leaseFor finds the live lease of family f for a renew, release or
// proclaim. If there is none, it asks ZooKeeper for the current token and
// answers 409: stale_token when the lock or election has moved on to a
// higher token, lost otherwise.
func (s *Service) leaseFor(ctx context.Context, f api.Family, name string, req api.LeaseRequest, source string) (*lease, error) {
	if err := validateName(f, name); err != nil {
		return nil, err
	}
	switch {
	case req.LeaseID == "":
		return nil, badRequest("lease_id is required")
	case !api.ValidLeaseID(req.LeaseID):
		return nil, badRequest("lease_id %.40q must be 32 lowercase hex digits", req.LeaseID)
	case req.Token == 0:
		return nil, badRequest("token is required and must be a positive integer")
	}
	l := s.leases.lookup(req.LeaseID)
	b, isBroken := s.leases.brokenAs(req.LeaseID)
	kind := kindsOf(f)[0]
	if isBroken && familyOf(b.kind) == f && b.name == name && b.token == req.Token {
		// Broken by an operator: say so, whoever holds the lock now.
		cur, _ := s.currentToken(ctx, b.kind, name)
		return nil, &ConflictError{Err: api.ErrBroken, Kind: b.kind, Name: name, Token: req.Token, CurrentToken: cur, Reason: b.reason}
	}
	if l != nil {
		if familyOf(l.kind) != f || l.name != name {
			return nil, badRequest("lease %s is for %s %q, not %s %q", req.LeaseID, noun(l.kind), l.name, noun(kind), name)
		}
		kind = l.kind
		if l.grant.Err() == nil && req.Token == l.grant.Token {
			return l, nil
		}
		if req.Token > l.grant.Token {
			return nil, badRequest("%s %d was never issued to lease %s", tokenWord(kind), req.Token, req.LeaseID)
		}
	}
	// The lease is gone (or the token is older than the lease's): what is
	// the current token now? Without a session the answer cannot be known,
	// whatever the kind.
	if _, err := s.liveSession(); err != nil {
		return nil, err
	}
	cur, err := s.currentToken(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	if cur > req.Token {
		if kind != fence.KindElection {
			s.m.StaleRejected(name, source)
		}
		s.log.Warn("stale token rejected", noun(kind), name, "token", req.Token, "current_token", cur, "source", source)
		return nil, &ConflictError{Err: &fence.StaleTokenError{Key: name, Token: req.Token, Max: cur}, Kind: kind, Name: name, Token: req.Token, CurrentToken: cur}
	}
	return nil, &ConflictError{Err: api.ErrLost, Kind: kind, Name: name, Token: req.Token, CurrentToken: cur, Ended: s.leases.endedAs(l)}
}

// lostError is the 409 of a live lease found ended.
func (s *Service) lostError(l *lease, token uint64) error {
	b, ok := s.leases.brokenAs(l.id.String())
	if ok {
		return &ConflictError{Err: api.ErrBroken, Kind: l.kind, Name: l.name, Token: token, Reason: b.reason}
	}
	return &ConflictError{Err: api.ErrLost, Kind: l.kind, Name: l.name, Token: token, Ended: s.leases.endedAs(l)}
}

// currentToken reads the current token of a kind with one holder at a
// time: a lock's holder's, an election's term (0 if none is known: nobody
// holds it, in zxid mode). A shared hold or a semaphore has no single
// current token: 0.
func (s *Service) currentToken(ctx context.Context, k fence.Kind, name string) (uint64, error) {
	switch k {
	case fence.KindElection:
		l, err := s.leader(ctx, name)
		return l.Term, err
	case fence.KindLock:
		h, err := s.holder(ctx, name)
		return h.Token, err
	}
	return 0, nil
}

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

// A renewal, and every answer a holder's renew or release gets that is not
// its lease. Top to bottom: the request is checked (bad_request); the
// lease it names is looked up; the grant of a live one is checked in
// ZooKeeper (no live session, or no answer: unavailable; the grant lost:
// the lease ends); the table moves its expiry, unless it has ended
// meanwhile (lost, or broken). A lease that is not live, or has just been
// found lost, is answered by notLive: broken when an operator broke it,
// stale_token when its lock or election has a higher token now, lost
// otherwise.

// renew extends a live lease of family f by its TTL (or req.TTL, which then
// becomes its TTL) and keeps its token. While ZooKeeper is unreachable it
// answers an *UnavailableError: the lease cannot be vouched for.
func (s *Service) renew(ctx context.Context, f api.Family, name string, req api.LeaseRequest) (api.Lease, error) {
	ttl, err := optionalTTL(req.TTL)
	if err != nil {
		return api.Lease{}, err
	}
	found, err := s.lookupFor(f, name, req)
	if err != nil {
		return api.Lease{}, err
	}
	if found.live {
		l := found.lease
		var out api.Lease
		err := s.extendLease(ctx, l, ttl, req.Token, func() { out = l.view() })
		if !errors.Is(err, errLostNow) {
			return out, err
		}
		// Found lost, and ended: answered as any lease that is not live,
		// stale when the lock moved on.
		if found, err = s.lookupFor(f, name, req); err != nil {
			return api.Lease{}, err
		}
		if found.live {
			return api.Lease{}, s.lostError(l, req.Token)
		}
	}
	return api.Lease{}, s.notLive(ctx, f, name, req, found, metrics.SourceRenew)
}

// errLostNow is extendLease's word for a grant it has just found lost,
// and whose lease it has ended; it never leaves the package.
var errLostNow = errors.New("sequencer: the grant was found lost")

// extendLease extends the live lease l (ttl 0 keeps its TTL) after
// checking in ZooKeeper that its grant still holds (a lock's or an
// election's contender is still the lowest, a semaphore's lease node
// still there and ours), and calls view under the table's lock. A grant
// found lost ends the lease: errLostNow. A lease found ended otherwise is
// lostError's answer for token.
func (s *Service) extendLease(ctx context.Context, l *lease, ttl time.Duration, token uint64, view func()) error {
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
			return errLostNow
		}
		return s.lostError(l, token)
	}
	if !s.leases.extend(l, ttl, view) {
		return s.lostError(l, token)
	}
	s.leases.countRenewal(l)
	return nil
}

// release ends a live lease of family f and deletes its contender (for an
// election, resigns: the next candidate is elected at once).
func (s *Service) release(ctx context.Context, f api.Family, name string, req api.LeaseRequest) error {
	if req.TTL != nil {
		return badRequest("a release takes no ttl")
	}
	l, err := s.leaseFor(ctx, f, name, req, metrics.SourceRelease)
	if err != nil {
		return err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return s.lostError(l, req.Token)
	}
	return nil
}

// leaseFor finds the live lease of family f for a renew, release or
// proclaim. If there is none, it answers as notLive does.
func (s *Service) leaseFor(ctx context.Context, f api.Family, name string, req api.LeaseRequest, source string) (*lease, error) {
	found, err := s.lookupFor(f, name, req)
	switch {
	case err != nil:
		return nil, err
	case found.live:
		return found.lease, nil
	}
	return nil, s.notLive(ctx, f, name, req, found, source)
}

// leaseFound is what lookupFor finds of the lease a request names.
type leaseFound struct {
	lease    *lease      // the table's lease by the request's id, if any
	live     bool        // lease is live, with the request's token
	broken   brokenLease // an operator broke the lease the request names
	isBroken bool
}

// lookupFor checks a renew's, release's or proclaim's request for family f
// on name, and looks up the lease it names, asking nothing of ZooKeeper.
// A request that names another lease's name, or a token never issued to
// it, is a 400.
func (s *Service) lookupFor(f api.Family, name string, req api.LeaseRequest) (leaseFound, error) {
	if err := validateName(f, name); err != nil {
		return leaseFound{}, err
	}
	switch {
	case req.LeaseID == "":
		return leaseFound{}, badRequest("lease_id is required")
	case !api.ValidLeaseID(req.LeaseID):
		return leaseFound{}, badRequest("lease_id %.40q must be 32 lowercase hex digits", req.LeaseID)
	case req.Token == 0:
		return leaseFound{}, badRequest("token is required and must be a positive integer")
	}
	l := s.leases.lookup(req.LeaseID)
	b, isBroken := s.leases.brokenAs(req.LeaseID)
	if isBroken && familyOf(b.kind) == f && b.name == name && b.token == req.Token {
		return leaseFound{lease: l, broken: b, isBroken: true}, nil
	}
	if l == nil {
		return leaseFound{}, nil
	}
	if familyOf(l.kind) != f || l.name != name {
		return leaseFound{}, badRequest("lease %s is for %s %q, not %s %q", req.LeaseID, noun(l.kind), l.name, noun(kindsOf(f)[0]), name)
	}
	if req.Token > l.grant.Token {
		return leaseFound{}, badRequest("%s %d was never issued to lease %s", tokenWord(l.kind), req.Token, req.LeaseID)
	}
	return leaseFound{lease: l, live: l.grant.Err() == nil && req.Token == l.grant.Token}, nil
}

// notLive is the answer to a request whose lease is not live here (or
// whose token is older than the lease's), reading the current token in
// ZooKeeper: broken when an operator broke it, whoever holds the lock now;
// stale_token when the lock or election has moved on to a higher token;
// lost otherwise. Without a session the answer cannot be known, whatever
// the kind: unavailable.
func (s *Service) notLive(ctx context.Context, f api.Family, name string, req api.LeaseRequest, found leaseFound, source string) error {
	if b := found.broken; found.isBroken {
		cur, _ := s.currentToken(ctx, b.kind, name)
		return &ConflictError{Err: api.ErrBroken, Kind: b.kind, Name: name, Token: req.Token, CurrentToken: cur, Reason: b.reason}
	}
	l, kind := found.lease, kindsOf(f)[0]
	if l != nil {
		kind = l.kind
	}
	if _, err := s.liveSession(); err != nil {
		return err
	}
	cur, err := s.currentToken(ctx, kind, name)
	if err != nil {
		return err
	}
	if cur > req.Token {
		if kind != fence.KindElection {
			s.m.StaleRejected(name, source)
		}
		s.log.Warn("stale token rejected", noun(kind), name, "token", req.Token, "current_token", cur, "source", source)
		return &ConflictError{Err: &fence.StaleTokenError{Key: name, Token: req.Token, Max: cur}, Kind: kind, Name: name, Token: req.Token, CurrentToken: cur}
	}
	return &ConflictError{Err: api.ErrLost, Kind: kind, Name: name, Token: req.Token, CurrentToken: cur, Ended: s.leases.endedAs(l)}
}

// lostError is the 409 of a live lease found ended: broken when an
// operator broke it, lost otherwise.
func (s *Service) lostError(l *lease, token uint64) error {
	if b, ok := s.leases.brokenAs(l.id.String()); ok {
		return &ConflictError{Err: api.ErrBroken, Kind: l.kind, Name: l.name, Token: token, Reason: b.reason}
	}
	return &ConflictError{Err: api.ErrLost, Kind: l.kind, Name: l.name, Token: token, Ended: s.leases.endedAs(l)}
}

package sequencer

import (
	"context"
	"errors"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// The lease service's verbs: everything a caller may ask of a Service, in
// one place. Each verb first judges its caller (policy.CallerOf(ctx),
// attached by a transport; a ctx that names nobody is policy.Anonymous,
// never the admin) by the policy in force, then calls the lease logic. No
// transport decides what a caller may do, and no in-process caller skips
// the judgement.
//
// What the verbs let through, under a policy:
//   - grants (acquire, campaign, a multi-lock's acquire): the acquire
//     action on every name, within the caller's quota;
//   - break: the admin, or the break action (without a policy, the admin
//     only); check: the check action; status reads: the read action;
//   - listings and the overview: only the names the caller may read;
//   - renew, release, resign, proclaim and a multi-lock's status: the
//     lease id is the proof, and a renewal's TTL is bound by the quota of
//     the identity that acquired the lease, whoever renews it. A policy
//     reload never refuses them.
//
// The daemon's own actions (expiry, shutdown, its own campaigns) run
// below the verbs: no policy can stop them.

// Acquire grants the lock name to req.Owner for req.TTL, waiting up to
// req.Wait (0 tries once); with req.Mode shared, a shared hold. If ctx ends
// while waiting, the contender is withdrawn. A request with the lease_id of
// a live lease is a retry, and gets that lease back.
func (s *Service) Acquire(ctx context.Context, name string, req api.AcquireRequest) (l api.Lease, err error) {
	kind := policy.KindLockWord
	if req.Mode == api.ModeShared {
		kind = policy.KindSharedWord
	}
	defer s.traced(&ctx, spanAcquire, kind, name).lease(&l, &err)
	ctx, done, err := s.mayGrant(ctx, grantAsk{api.Locks, kind, []string{name}, req.TTL, req.LeaseID})
	if err != nil {
		return api.Lease{}, err
	}
	defer done()
	l, err = s.acquireLock(ctx, name, req)
	return l, waited(err, req.Wait)
}

// AcquireSemaphore grants req.Owner one of req.Limit slots of name for
// req.TTL, waiting up to req.Wait. Every holder must name the limit the
// first recorded: another is a *ConflictError with the recorded one.
func (s *Service) AcquireSemaphore(ctx context.Context, name string, req api.SemaphoreAcquireRequest) (l api.Lease, err error) {
	defer s.traced(&ctx, spanAcquire, policy.KindSemaphoreWord, name).lease(&l, &err)
	ctx, done, err := s.mayGrant(ctx, grantAsk{api.Semaphores, policy.KindSemaphoreWord, []string{name}, req.TTL, req.LeaseID})
	if err != nil {
		return api.Lease{}, err
	}
	defer done()
	l, err = s.acquireSemaphore(ctx, name, req)
	return l, waited(err, req.Wait)
}

// Campaign stands for election name on req.Owner's behalf with req.Value
// (default the owner), waiting up to req.Wait to be elected, and returns
// the leadership as a lease whose Term is its token.
func (s *Service) Campaign(ctx context.Context, name string, req api.CampaignRequest) (l api.Lease, err error) {
	defer s.traced(&ctx, spanCampaign, policy.KindElectionWord, name).lease(&l, &err)
	ctx, done, err := s.mayGrant(ctx, grantAsk{api.Elections, policy.KindElectionWord, []string{name}, req.TTL, req.LeaseID})
	if err != nil {
		return api.Lease{}, err
	}
	defer done()
	l, err = s.campaign(ctx, name, req)
	return l, waited(err, req.Wait)
}

// AcquireMulti grants req.Owner every lock of req.Names at once for
// req.TTL, waiting up to req.Wait: all or none.
func (s *Service) AcquireMulti(ctx context.Context, req api.MultiAcquireRequest) (l api.MultiLease, err error) {
	defer s.traced(&ctx, spanAcquire, policy.KindMultiWord, "").multi(&l, &err)
	ctx, done, err := s.mayGrant(ctx, grantAsk{api.Locks, policy.KindMultiWord, req.Names, req.TTL, req.LeaseID})
	if err != nil {
		return api.MultiLease{}, err
	}
	defer done()
	l, err = s.acquireMulti(ctx, req)
	return l, waited(err, req.Wait)
}

// Renew extends a live lease of family f by its TTL (or req.TTL, which then
// becomes its TTL, within the quota of the lease's owner) and keeps its
// token. While ZooKeeper is unreachable it answers an *UnavailableError.
func (s *Service) Renew(ctx context.Context, f api.Family, name string, req api.LeaseRequest) (l api.Lease, err error) {
	defer s.traced(&ctx, spanRenew, familyKind(f), name).lease(&l, &err)
	ctx, _ = s.enter(ctx)
	if err := s.ownersTTL(req.LeaseID, req.TTL); err != nil {
		return api.Lease{}, err
	}
	return s.renew(ctx, f, name, req)
}

// RenewMany renews each lock lease of req, at most a few at a time, and
// returns each one's lease or error, in order. A malformed item, or a TTL
// beyond the quota of any lease's owner, refuses the whole batch.
func (s *Service) RenewMany(ctx context.Context, req api.RenewManyRequest) (_ []api.Lease, _ []error, err error) {
	defer s.traced(&ctx, spanRenew, policy.KindLockWord, "").end(&err)
	ctx, _ = s.enter(ctx)
	for _, it := range req.Leases {
		if err := s.ownersTTL(it.LeaseID, req.TTL); err != nil {
			return nil, nil, err
		}
	}
	return s.renewMany(ctx, req)
}

// RenewMulti extends a live multi-lock lease by its TTL (or req.TTL),
// after checking in ZooKeeper that every lock still holds.
func (s *Service) RenewMulti(ctx context.Context, req api.MultiLeaseRequest) (l api.MultiLease, err error) {
	defer s.traced(&ctx, spanRenew, policy.KindMultiWord, "").multi(&l, &err)
	ctx, _ = s.enter(ctx)
	if err := s.ownersTTL(req.LeaseID, req.TTL); err != nil {
		return api.MultiLease{}, err
	}
	return s.renewMulti(ctx, req)
}

// Release ends a live lease of family f and deletes its contender (for an
// election, resigns: the next candidate is elected at once).
func (s *Service) Release(ctx context.Context, f api.Family, name string, req api.LeaseRequest) (err error) {
	defer s.traced(&ctx, spanRelease, familyKind(f), name).end(&err)
	ctx, _ = s.enter(ctx)
	return s.release(ctx, f, name, req)
}

// ReleaseMulti ends a live multi-lock lease and deletes its contenders, in
// one transaction.
func (s *Service) ReleaseMulti(ctx context.Context, req api.MultiLeaseRequest) (_ api.ReleaseResponse, err error) {
	defer s.traced(&ctx, spanRelease, policy.KindMultiWord, "").end(&err)
	ctx, _ = s.enter(ctx)
	return s.releaseMulti(ctx, req)
}

// Proclaim sets the value of a live leadership lease, keeping its term.
func (s *Service) Proclaim(ctx context.Context, name string, req api.ProclaimRequest) (l api.Lease, err error) {
	defer s.traced(&ctx, spanProclaim, policy.KindElectionWord, name).lease(&l, &err)
	ctx, _ = s.enter(ctx)
	return s.proclaim(ctx, name, req)
}

// Break deletes the contender of the holder of family f's name that
// req.Token names: the admin may, or under a policy a caller with the
// break action. by is where the request came from, for the audit log.
func (s *Service) Break(ctx context.Context, f api.Family, name string, req api.BreakRequest, by string) (b api.BreakResponse, err error) {
	defer s.traced(&ctx, spanBreak, familyKind(f), name).token(&b.Token, &err)
	ctx, c := s.enter(ctx)
	if err := s.mayBreak(c, f, name); err != nil {
		return api.BreakResponse{}, err
	}
	return s.breakHolder(ctx, f, name, req, by)
}

// ParseSequencer reads a sequencer sent to Check: a signed one must verify
// with the daemon's keys.
func (s *Service) ParseSequencer(seq string) (fence.Sequencer, error) {
	return s.parseSequencer(seq)
}

// Check answers whether seq's token is its grantor's current holder's,
// reading ZooKeeper, and returns the current token; a *ConflictError when
// it does not hold.
func (s *Service) Check(ctx context.Context, seq fence.Sequencer) (cur uint64, err error) {
	defer s.traced(&ctx, spanCheck, policyKind(seq.Kind), seq.Name).token(&cur, &err)
	ctx, c := s.enter(ctx)
	if err := s.judge(c, c.decide(policyKind(seq.Kind), policy.ActCheck, seq.Name)); err != nil {
		return 0, err
	}
	return s.check(ctx, seq)
}

// Status reads a lock's state from ZooKeeper.
func (s *Service) Status(ctx context.Context, name string) (_ api.LockStatus, err error) {
	defer s.traced(&ctx, spanStatus, policy.KindLockWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Locks, name); err != nil {
		return api.LockStatus{}, err
	}
	return s.readLock(ctx, name)
}

// SemaphoreStatus reads a semaphore's holders from ZooKeeper.
func (s *Service) SemaphoreStatus(ctx context.Context, name string) (_ api.SemaphoreStatus, err error) {
	defer s.traced(&ctx, spanStatus, policy.KindSemaphoreWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Semaphores, name); err != nil {
		return api.SemaphoreStatus{}, err
	}
	return s.readSemaphore(ctx, name)
}

// ElectionStatus reads an election's leader from ZooKeeper.
func (s *Service) ElectionStatus(ctx context.Context, name string) (_ api.ElectionStatus, err error) {
	defer s.traced(&ctx, spanStatus, policy.KindElectionWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Elections, name); err != nil {
		return api.ElectionStatus{}, err
	}
	return s.readElection(ctx, name)
}

// WaitLock is a blocking read of a lock's state: it answers when the
// state's index differs from index, or once wait has passed.
func (s *Service) WaitLock(ctx context.Context, name string, index uint64, wait time.Duration) (_ api.LockStatus, err error) {
	defer s.traced(&ctx, spanStatusWait, policy.KindLockWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Locks, name); err != nil {
		return api.LockStatus{}, err
	}
	return s.waitLock(ctx, name, index, wait)
}

// WaitSemaphore is WaitLock for a semaphore.
func (s *Service) WaitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (_ api.SemaphoreStatus, err error) {
	defer s.traced(&ctx, spanStatusWait, policy.KindSemaphoreWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Semaphores, name); err != nil {
		return api.SemaphoreStatus{}, err
	}
	return s.waitSemaphore(ctx, name, index, wait)
}

// WaitElection is WaitLock for an election.
func (s *Service) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (_ api.ElectionStatus, err error) {
	defer s.traced(&ctx, spanStatusWait, policy.KindElectionWord, name).end(&err)
	ctx, c := s.enter(ctx)
	if err := s.mayRead(c, api.Elections, name); err != nil {
		return api.ElectionStatus{}, err
	}
	return s.waitElection(ctx, name, index, wait)
}

// SafeFor is how long the live lease id of family f on name is guaranteed
// to hold (0 once it has ended); ok is false when id is not such a lease
// on this daemon, or the caller may not read name.
func (s *Service) SafeFor(ctx context.Context, f api.Family, name, id string) (safe time.Duration, ok bool) {
	_, c := s.enter(ctx)
	if !readable(c, f, name) {
		return 0, false
	}
	return s.leases.safeFor(f, name, id)
}

// MultiLockStatus reads the live multi-lock lease id of this daemon, as
// its holder sees it (the lease id is the proof); blocking makes it answer
// once the lease's index differs from index, or when wait has passed.
func (s *Service) MultiLockStatus(ctx context.Context, id string, blocking bool, index uint64, wait time.Duration) (_ api.MultiLockStatus, err error) {
	defer s.traced(&ctx, spanStatus, policy.KindMultiWord, "").end(&err)
	ctx, _ = s.enter(ctx)
	return s.multiLockStatus(ctx, id, blocking, index, wait)
}

// Leases lists the live leases of family f held through this daemon that
// the caller may read: no lease ids, no signed sequencers.
func (s *Service) Leases(ctx context.Context, f api.Family) []api.Lease {
	_, c := s.enter(ctx)
	return visibleLeases(c, f, s.leases.listed(f))
}

// MultiLeases lists the live multi-lock leases held through this daemon
// whose every lock the caller may read.
func (s *Service) MultiLeases(ctx context.Context) []api.MultiLease {
	_, c := s.enter(ctx)
	return visibleMultiLeases(c, s.multiLeases())
}

// Overview reads the status of every name of family f under its root that
// the caller may read. blocking makes it wait, up to wait, for a state
// whose index differs from index.
func (s *Service) Overview(ctx context.Context, f api.Family, blocking bool, index uint64, wait time.Duration) (_ api.Overview, err error) {
	defer s.traced(&ctx, spanOverview, familyKind(f), "").end(&err)
	ctx, c := s.enter(ctx)
	o, err := s.overview(ctx, f, blocking, index, wait)
	return visibleOverview(c, f, o), err
}

// Ready reports whether the service's ZooKeeper session is connected.
func (s *Service) Ready() bool { return s.ready() }

// Authority names callers and holds the policy the verbs judge them by
// (nil: none).
func (s *Service) Authority() *policy.Authority { return s.cfg.Authority }

// waited says, on a grant refused as held after a wait, how long the
// request waited, so that its answer does not suggest the lease-id retry
// to a waiter whose wait ran out.
func waited(err error, wait *api.Duration) error {
	var ce *ConflictError
	if wait != nil && *wait > 0 && errors.As(err, &ce) && errors.Is(ce.Err, api.ErrHeld) {
		ce.Waited = time.Duration(*wait)
	}
	return err
}

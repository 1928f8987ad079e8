package sequencer

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Multi-locks: one lease on several exclusive locks at once, all or
// nothing and without deadlock (zklock.MultiMutex), with the lifecycle of
// every lease: TTL, renew, release, expiry, loss with the session or with
// any of its locks. Each lock of the lease is an exclusive lock like any
// other: its sequencer is the lock's own, and check, status and the other
// recipes on its path see the lease's contender as they see a single
// holder's.

// acquireMulti grants req.Owner every lock of req.Names at once for
// req.TTL, waiting up to req.Wait (0 tries once). Not granted within the
// wait is a *ConflictError (held) naming the lock it was waiting for. A
// request with the lease_id of a live lease is a retry: it must repeat the
// request, names in the same order included.
func (s *Service) acquireMulti(ctx context.Context, req api.MultiAcquireRequest) (api.MultiLease, error) {
	g, delay, err := s.readMulti(req)
	if err != nil {
		return api.MultiLease{}, err
	}
	sess, err := s.liveSession()
	if err != nil {
		return api.MultiLease{}, err
	}
	var out api.MultiLease
	view := func(l *lease) { out = l.multiView() }
	ok, err := s.retryWith(g, func(l *lease) string {
		switch {
		case l.set == nil:
			return "kind"
		case req.LockDelay != nil && l.delay != delay:
			return "lock_delay"
		}
		return ""
	}, view)
	if ok || err != nil {
		return out, err
	}
	mg, err := s.contendMulti(ctx, sess, g, req.Names, delay)
	if err != nil {
		return api.MultiLease{}, err
	}
	set := &lockSet{grant: mg, names: slices.Clone(req.Names), changed: make(chan struct{})}
	err = s.admitWith(ctx, &lease{kind: kindMulti, delay: delay, set: set}, g, 0, view)
	return out, err
}

// readMulti reads and checks a multi-lock acquire: the grant (named by its
// names joined with commas, which no lock name contains) and the
// lock-delay.
func (s *Service) readMulti(req api.MultiAcquireRequest) (grantReq, time.Duration, error) {
	if err := checkNames(req.Names); err != nil {
		return grantReq{}, 0, err
	}
	g, err := readGrant(api.Locks, req.Names[0], req.Owner, req.LeaseID, req.TTL, req.Wait)
	if err != nil {
		return g, 0, err
	}
	g.name = strings.Join(req.Names, ",")
	delay := s.cfg.LockDelay
	if req.LockDelay != nil {
		delay = time.Duration(*req.LockDelay)
	}
	if delay < 0 || delay > api.MaxLockDelay {
		return g, 0, badRequest("lock_delay %v is out of range: it must be between 0s and %v", delay, api.MaxLockDelay)
	}
	return g, delay, nil
}

// checkNames checks a multi-lock's names: 1 to MaxMultiLocks valid lock
// names, each once.
func checkNames(names []string) error {
	switch {
	case len(names) == 0:
		return badRequest("names is required: the 1 to %d locks to take at once", api.MaxMultiLocks)
	case len(names) > api.MaxMultiLocks:
		return badRequest("names lists %d locks, more than %d", len(names), api.MaxMultiLocks)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if err := validateName(api.Locks, name); err != nil {
			return err
		}
		if seen[name] {
			return badRequest("names lists %q twice: each lock of a multi-lock is taken once", name)
		}
		seen[name] = true
	}
	return nil
}

// contendMulti puts a contender in every lock of names on sess, in one
// transaction, and waits up to g.wait for the grant of all of them (0
// tries once); delay is every lock's lock-delay. Not granted is a 409 held
// naming the lock the wait ended on, with its current token.
func (s *Service) contendMulti(ctx context.Context, sess *zklock.Session, g grantReq, names []string, delay time.Duration) (*zklock.MultiGrant, error) {
	mm, err := zklock.NewMultiMutex(sess, names, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode), zklock.WithData(s.contenderData(g.owner)), zklock.WithLockDelay(delay))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	mg, err := waitFor(ctx, g.wait, mm.Acquire, mm.TryAcquire)
	if err != nil {
		blocked := g.name
		var me *zklock.MultiLockError
		if errors.As(err, &me) {
			blocked = me.Lock
		}
		return nil, s.grantError(ctx, sess, fence.KindLock, blocked, err, func(ctx context.Context) uint64 {
			if me == nil {
				return 0
			}
			h, _ := s.holder(ctx, blocked)
			return h.Token
		})
	}
	return mg, nil
}

// renewMulti extends a live multi-lock lease by its TTL (or req.TTL, which
// then becomes its TTL), after checking in ZooKeeper that every lock still
// holds; it keeps every token.
func (s *Service) renewMulti(ctx context.Context, req api.MultiLeaseRequest) (api.MultiLease, error) {
	ttl, err := optionalTTL(req.TTL)
	if err != nil {
		return api.MultiLease{}, err
	}
	l, err := s.multiLeaseFor(ctx, req, metrics.SourceRenew)
	if err != nil {
		return api.MultiLease{}, err
	}
	var out api.MultiLease
	err = s.extendLease(ctx, l, ttl, req.Locks[0].Token, func() { out = l.multiView() })
	if errors.Is(err, errLostNow) {
		// Answer as for any ended lease: stale when a lock moved on.
		if _, err := s.multiLeaseFor(ctx, req, metrics.SourceRenew); err != nil {
			return api.MultiLease{}, err
		}
		return api.MultiLease{}, s.lostError(l, req.Locks[0].Token)
	}
	return out, err
}

// releaseMulti ends a live multi-lock lease and deletes its contenders, in
// one transaction.
func (s *Service) releaseMulti(ctx context.Context, req api.MultiLeaseRequest) (api.ReleaseResponse, error) {
	if req.TTL != nil {
		return api.ReleaseResponse{}, badRequest("a release takes no ttl")
	}
	l, err := s.multiLeaseFor(ctx, req, metrics.SourceRelease)
	if err != nil {
		return api.ReleaseResponse{}, err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return api.ReleaseResponse{}, s.lostError(l, req.Locks[0].Token)
	}
	return api.ReleaseResponse{Released: true}, nil
}

// multiLeaseFor finds the live multi-lock lease of a renew or release. The
// request names the lease's locks with their tokens, in the lease's order:
// another list is a 400. If the lease is gone, or a token is older than the
// lease's, it reads each lock's current token from ZooKeeper and answers
// 409: stale_token naming the first lock that has moved on to a higher
// token, lost otherwise.
func (s *Service) multiLeaseFor(ctx context.Context, req api.MultiLeaseRequest, source string) (*lease, error) {
	if err := checkMultiLeaseRequest(req); err != nil {
		return nil, err
	}
	l := s.leases.lookup(req.LeaseID)
	if l != nil {
		if l.set == nil {
			return nil, badRequest("lease %s is for %s %q, not a multi-lock", req.LeaseID, noun(l.kind), l.name)
		}
		live, err := l.set.matches(req)
		if err != nil {
			return nil, err
		}
		if live {
			return l, nil
		}
	}
	for _, lk := range req.Locks {
		cur, err := s.currentToken(ctx, fence.KindLock, lk.Name)
		if err != nil {
			return nil, err
		}
		if cur > lk.Token {
			s.m.StaleRejected(lk.Name, source)
			s.log.Warn("stale token rejected", "lock", lk.Name, "token", lk.Token, "current_token", cur, "source", source, "multilock", req.LeaseID)
			return nil, &ConflictError{Err: &fence.StaleTokenError{Key: lk.Name, Token: lk.Token, Max: cur}, Kind: fence.KindLock, Name: lk.Name, Token: lk.Token, CurrentToken: cur}
		}
	}
	return nil, &ConflictError{Err: api.ErrLost, Kind: kindMulti, Name: joinRefs(req.Locks), Token: req.Locks[0].Token, Ended: s.leases.endedAs(l)}
}

// checkMultiLeaseRequest checks a renew's or release's body alone.
func checkMultiLeaseRequest(req api.MultiLeaseRequest) error {
	switch {
	case req.LeaseID == "":
		return badRequest("lease_id is required")
	case !api.ValidLeaseID(req.LeaseID):
		return badRequest("lease_id %.40q must be 32 lowercase hex digits", req.LeaseID)
	case len(req.Locks) == 0:
		return badRequest(`locks is required: the lease's locks with their tokens, [{"name":…,"token":…},…] in the lease's order`)
	}
	names := make([]string, len(req.Locks))
	for i, lk := range req.Locks {
		if lk.Token == 0 {
			return badRequest("the token of %q is required and must be a positive integer", lk.Name)
		}
		names[i] = lk.Name
	}
	return checkNames(names)
}

// matches compares a renew's or release's locks with the lease's: live
// when they are the lease's, with its tokens, and it has not been lost; a
// 400 when they name other locks or a token never issued to it.
func (set *lockSet) matches(req api.MultiLeaseRequest) (live bool, err error) {
	held := set.grant.Locks
	if len(req.Locks) != len(held) {
		return false, badRequest("lease %s holds %d locks, the request names %d: send the lease's locks, in its order", req.LeaseID, len(held), len(req.Locks))
	}
	live = set.grant.Err() == nil
	for i, lk := range req.Locks {
		switch h := held[i]; {
		case lk.Name != h.Name:
			return false, badRequest("lease %s holds %s, in that order; the request names %s", req.LeaseID, strings.Join(set.names, ", "), joinRefs(req.Locks))
		case lk.Token > h.Token:
			return false, badRequest("token %d of %q was never issued to lease %s", lk.Token, lk.Name, req.LeaseID)
		case lk.Token < h.Token:
			live = false
		}
	}
	return live, nil
}

func joinRefs(locks []api.LockRef) string {
	names := make([]string, len(locks))
	for i, lk := range locks {
		names[i] = lk.Name
	}
	return strings.Join(names, ",")
}

// multiLockStatus reads the live multi-lock lease id of this daemon, as
// its holder sees it. blocking makes it answer once the lease's index
// differs from index (it was renewed, or it ended), or when wait has
// passed. A lease that is not live here is a 409 lost.
func (s *Service) multiLockStatus(ctx context.Context, id string, blocking bool, index uint64, wait time.Duration) (api.MultiLockStatus, error) {
	if !api.ValidLeaseID(id) {
		return api.MultiLockStatus{}, badRequest("%.40q is not a lease id: GET /v1/multilocks/{lease_id} takes the 32 lowercase hex digits of a multi-lock lease", id)
	}
	var tc <-chan time.Time
	if blocking {
		c, t := s.clock.NewTimer(wait)
		defer t.Stop()
		tc = c
	}
	for {
		var st api.MultiLockStatus
		var changed chan struct{}
		found := false
		s.leases.with(func() {
			l := s.leases.lookupLocked(id)
			if l == nil || l.set == nil || l.state != live {
				return
			}
			found = true
			st = api.MultiLockStatus{MultiLease: l.multiView(), SafeForMS: l.safeFor(s.clock.Now()).Milliseconds(), Index: l.set.index}
			changed = l.set.changed
		})
		if !found {
			return api.MultiLockStatus{}, &ConflictError{Err: api.ErrLost, Kind: kindMulti, Name: id}
		}
		if !blocking || st.Index != index {
			return st, nil
		}
		select {
		case <-changed:
		case <-tc:
			return st, nil
		case <-ctx.Done():
			return api.MultiLockStatus{}, ctx.Err()
		}
	}
}

// multiLeases lists the live multi-lock leases held through this daemon,
// as a listing shows them: no lease ids, no signed sequencers.
func (s *Service) multiLeases() []api.MultiLease {
	out := collect(s.leases, func(l *lease) bool { return l.set != nil }, (*lease).multiListed)
	sort.Slice(out, func(i, j int) bool { return out[i].Locks[0].Name < out[j].Locks[0].Name })
	return out
}

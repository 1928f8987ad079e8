package sequencer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sort"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// The lease lifecycle, the same for every kind: renew, release, and the end
// of a lease by release, expiry or loss of its grant.

type leaseState uint8

const (
	live leaseState = iota
	released
	expired
	lost
	broken
)

// familyOf is the family of the API that serves leases of kind k.
func familyOf(k fence.Kind) api.Family {
	switch k {
	case fence.KindSemaphore:
		return api.Semaphores
	case fence.KindElection:
		return api.Elections
	case kindMulti:
		return api.MultiLocks
	}
	return api.Locks
}

// kindsOf is the kinds of lease a family serves.
func kindsOf(f api.Family) []fence.Kind {
	switch f {
	case api.Semaphores:
		return []fence.Kind{fence.KindSemaphore}
	case api.Elections:
		return []fence.Kind{fence.KindElection}
	case api.MultiLocks:
		return []fence.Kind{kindMulti}
	}
	return []fence.Kind{fence.KindLock, fence.KindShared}
}

// single reports whether a kind has one holder at a time (one current
// token), so that byName can find it.
func single(k fence.Kind) bool { return k == fence.KindLock || k == fence.KindElection }

// byNameKey is the key of byName: a lock's and an election's names are
// apart.
type byNameKey struct {
	kind fence.Kind
	name string
}

// A daemon holds many leases: the fields are ordered, and sized, to keep
// a lease small.
type lease struct {
	grant *zklock.Grant
	set   *lockSet           // a multi-lock's locks (grant is nil then)
	lead  *zklock.Leadership // elections only
	name  string
	owner string
	value string  // an election's published value
	who   *caller // who took it (nil: the daemon's own campaign)
	// signed is the grant's signed sequencer when the daemon signs: made
	// once, at grant, since every answer about the lease carries it. An
	// unsigned sequencer is made when asked for.
	signed  string
	ttl     time.Duration
	delay   time.Duration // a lock's lock-delay
	expires time.Time
	id      leaseID
	at      int32 // index in the expiry schedule (Service.exp); -1 when out of it
	limit   int32 // a semaphore's limit
	kind    fence.Kind
	state   leaseState
}

// leaseID is a lease's id: 16 random bytes, 32 lowercase hex digits on the
// wire.
type leaseID [16]byte

func (id leaseID) String() string { return hex.EncodeToString(id[:]) }

// parseLeaseID reads a lease id in its wire form; ok is false for anything
// else.
func parseLeaseID(s string) (id leaseID, ok bool) {
	if !api.ValidLeaseID(s) {
		return id, false
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err == nil
}

func newLeaseID() leaseID {
	var id leaseID
	rand.Read(id[:]) // never fails (crypto/rand)
	return id
}

// lookupLocked is the live lease with the id s (in wire form), or nil; s.mu
// must be held.
func (s *Service) lookupLocked(id string) *lease {
	k, ok := parseLeaseID(id)
	if !ok {
		return nil
	}
	return s.leases[k]
}

// seq is the lease's sequencer, unsigned.
func (l *lease) seq() fence.Sequencer {
	return fence.Sequencer{Kind: l.kind, Name: l.name, Token: l.grant.Token}
}

// view is the API form of l, as its holder sees it: with the lease id and
// the signed sequencer; s.mu must be held.
func (l *lease) view() api.Lease {
	v := l.listed()
	v.LeaseID = l.id.String()
	if l.signed != "" {
		v.Sequencer = l.signed
	}
	return v
}

// listed is the API form of l as a listing shows it to anyone: no lease id
// and an unsigned sequencer, since a signed one is a bearer capability;
// s.mu must be held.
func (l *lease) listed() api.Lease {
	v := api.Lease{
		Name:      l.name,
		Token:     l.grant.Token,
		Sequencer: l.seq().String(),
		Owner:     l.owner,
		TTL:       api.Duration(l.ttl),
		ExpiresAt: l.expires.UTC(),
		Limit:     int(l.limit),
	}
	switch l.kind {
	case fence.KindElection:
		v.Term = l.grant.Token
	case fence.KindShared:
		v.Mode = api.ModeShared
	}
	return v
}

// holding is what a lease holds: one grant, or a multi-lock's.
type holding interface {
	Err() error
	Verify(context.Context) error
	Release(context.Context) error
	Abandon(context.Context) error
	ReleaseOnClose(context.Context) error
	SafeFor() time.Duration
	AfterEnd(func(error))
}

// held is what l holds.
func (l *lease) held() holding {
	if l.set != nil {
		return l.set.grant
	}
	return l.grant
}

// changedLocked wakes the blocking reads of a multi-lock lease; s.mu must
// be held. Other leases' reads watch ZooKeeper instead.
func (l *lease) changedLocked() {
	if l.set == nil {
		return
	}
	l.set.index++
	close(l.set.changed)
	l.set.changed = make(chan struct{})
}

// sign makes l's signed sequencers, once, at grant.
func (l *lease) sign(signer *fence.Signer) {
	switch {
	case signer == nil:
	case l.set != nil:
		for _, h := range l.set.grant.Locks {
			l.set.signed = append(l.set.signed, signer.Sign(fence.Sequencer{Name: h.Name, Token: h.Token}))
		}
	default:
		l.signed = signer.Sign(l.seq())
	}
}

// end moves a live lease to state, counts and logs it, and releases its
// grant (a no-op for a grant already lost). It reports whether this call
// ended the lease.
func (s *Service) end(ctx context.Context, l *lease, state leaseState, reason string) bool {
	s.mu.Lock()
	ok := s.claimLocked(l, state)
	s.mu.Unlock()
	if ok {
		s.ended(ctx, l, state, reason, false)
	}
	return ok
}

// claimLocked moves l to state and forgets it if it is live (and, for
// expiry, past its TTL), reporting whether it did; s.mu must be held. The
// caller then calls ended.
func (s *Service) claimLocked(l *lease, state leaseState) bool {
	if l.state != live || state == expired && s.clock.Now().Before(l.expires) {
		return false
	}
	l.state = state
	l.changedLocked()
	delete(s.leases, l.id)
	s.heldLocked(l, -1)
	if key := (byNameKey{l.kind, l.name}); s.byName[key] == l {
		delete(s.byName, key)
	}
	s.unscheduleLocked(l)
	return true
}

// ended releases the grant of l, which claimLocked has ended, and counts
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
	s.mu.Lock()
	l := s.lookupLocked(req.LeaseID)
	b, isBroken := s.broken.get(req.LeaseID)
	s.mu.Unlock()
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
	return nil, &ConflictError{Err: api.ErrLost, Kind: kind, Name: name, Token: req.Token, CurrentToken: cur, Ended: s.endedAs(l)}
}

// endedAs names how l ended, for messages; "" when the daemon no longer
// knows the lease.
func (s *Service) endedAs(l *lease) string {
	if l == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.state {
	case released:
		return "released"
	case expired:
		return "expired"
	case broken:
		return "broken"
	}
	return "lost"
}

// lostError is the 409 of a live lease found ended.
func (s *Service) lostError(l *lease, token uint64) error {
	s.mu.Lock()
	b, ok := s.broken.get(l.id.String())
	s.mu.Unlock()
	if ok {
		return &ConflictError{Err: api.ErrBroken, Kind: l.kind, Name: l.name, Token: token, Reason: b.reason}
	}
	return &ConflictError{Err: api.ErrLost, Kind: l.kind, Name: l.name, Token: token, Ended: s.endedAs(l)}
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

const maxBroken = 1024

// brokenSet remembers the last maxBroken leases broken on this daemon, so
// that their holders' renew or release answers broken with the reason.
type brokenSet struct {
	m     map[string]brokenLease
	order []string
}

type brokenLease struct {
	kind   fence.Kind
	name   string
	token  uint64
	reason string
}

// add remembers l as broken; s.mu must be held.
func (b *brokenSet) add(l *lease, reason string) {
	if b.m == nil {
		b.m = map[string]brokenLease{}
	}
	id := l.id.String()
	if len(b.order) >= maxBroken {
		delete(b.m, b.order[0])
		b.order = b.order[1:]
	}
	b.m[id] = brokenLease{kind: l.kind, name: l.name, token: l.grant.Token, reason: reason}
	b.order = append(b.order, id)
}

// get finds a broken lease by its id; s.mu must be held.
func (b *brokenSet) get(id string) (brokenLease, bool) {
	l, ok := b.m[id]
	return l, ok
}

// auditEnd records the end of l in the audit log: a break has recorded
// its own line, and a release at Close is a release.
func (s *Service) auditEnd(l *lease, state leaseState, closing bool) {
	switch {
	case state == broken:
	case state == expired:
		s.audit(l, AuditExpiry, "its ttl passed without renewal")
	case state == lost:
		s.audit(l, AuditLoss, "its zookeeper session or contender node went away")
	case l.kind == fence.KindElection:
		s.audit(l, AuditResignation, "")
	case closing:
		s.audit(l, AuditRelease, "the daemon shut down")
	default:
		s.audit(l, AuditRelease, "")
	}
}

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

// optionalTTL reads an optional TTL: 0 when absent.
func optionalTTL(d *api.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	return time.Duration(*d), validateTTL(time.Duration(*d))
}

func validateTTL(ttl time.Duration) error {
	if ttl < api.MinTTL || ttl > api.MaxTTL {
		return badRequest("ttl %v is out of range: it must be between %v and %v", ttl, api.MinTTL, api.MaxTTL)
	}
	return nil
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
// s.mu. A lease found ended is answered by ended, told whether the check
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
	s.mu.Lock()
	// Not past its TTL (the expiry schedule may not have ended it yet) and its
	// grant not lost: a renewal never revives a lease that has ended.
	if l.state != live || h.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return ended(false)
	}
	if ttl != 0 {
		l.ttl = ttl
	}
	l.expires = s.clock.Now().Add(l.ttl)
	s.scheduleLocked(l)
	view()
	s.mu.Unlock()
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

// safeFor is how long the live lease id of family f on name is guaranteed
// to hold: until its TTL passes or the session could expire, whichever is
// first (0 once it has ended). ok is false when id is not such a lease on
// this daemon.
func (s *Service) safeFor(f api.Family, name, id string) (safe time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lookupLocked(id)
	if l == nil || l.name != name || familyOf(l.kind) != f {
		return 0, false
	}
	if l.state != live {
		return 0, true
	}
	return max(0, min(l.expires.Sub(s.clock.Now()), l.held().SafeFor())), true
}

// leaseList lists the live leases of family f held through this daemon, by
// name, as a listing shows them: no lease ids, no signed sequencers.
func (s *Service) leaseList(f api.Family) []api.Lease {
	s.mu.Lock()
	out := make([]api.Lease, 0, len(s.leases))
	for _, l := range s.leases {
		if familyOf(l.kind) == f {
			out = append(out, l.listed())
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package sequencer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
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
	at      int32 // index in the expiry schedule (leaseTable.exp); -1 when out of it
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

// seq is the lease's sequencer, unsigned.
func (l *lease) seq() fence.Sequencer {
	return fence.Sequencer{Kind: l.kind, Name: l.name, Token: l.grant.Token}
}

// view is the API form of l, as its holder sees it: with the lease id and
// the signed sequencer; the table's lock must be held.
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
// the table's lock must be held.
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

// The multi-lock lease: one lease on several exclusive locks at once
// (see multilock.go).

// kindMulti is a multi-lock lease's kind. It is the daemon's own: no
// sequencer carries it.
const kindMulti = api.KindMulti

// lockSet is a multi-lock lease's locks.
type lockSet struct {
	grant  *zklock.MultiGrant
	names  []string // as the acquire named them
	signed []string // each lock's signed sequencer, when the daemon signs
	// Under the lease table's lock: index rises, and changed is closed and replaced,
	// whenever the lease is renewed or ends, for blocking reads.
	index   uint64
	changed chan struct{}
}

// multiView is the API form of the multi-lock lease l as its holder sees
// it, with its id and signed sequencers; the table's lock must be held.
func (l *lease) multiView() api.MultiLease {
	v := l.multiListed()
	v.LeaseID = l.id.String()
	for i, seq := range l.set.signed {
		v.Locks[i].Sequencer = seq
	}
	return v
}

// multiListed is the API form of the multi-lock lease l as a listing shows
// it: no lease id, unsigned sequencers; the table's lock must be held.
func (l *lease) multiListed() api.MultiLease {
	locks := make([]api.LockToken, len(l.set.grant.Locks))
	for i, h := range l.set.grant.Locks {
		locks[i] = api.LockToken{Name: h.Name, Token: h.Token, Sequencer: fence.Sequencer{Name: h.Name, Token: h.Token}.String()}
	}
	return api.MultiLease{Locks: locks, Owner: l.owner, TTL: api.Duration(l.ttl), ExpiresAt: l.expires.UTC()}
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

// changedLocked wakes the blocking reads of a multi-lock lease; the
// table's lock must be held. Other leases' reads watch ZooKeeper instead.
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

// The transitions of one lease. Its state, ttl and expires change under
// the table's lock, which calls these.

// live reports whether l may still be vouched for at now: not ended, its
// grant not lost, and not past its TTL (the expiry schedule may not have
// ended it yet).
func (l *lease) live(now time.Time) bool {
	return l.state == live && l.held().Err() == nil && now.Before(l.expires)
}

// extend moves l's expiry to its TTL from now; a ttl other than 0
// becomes its TTL first.
func (l *lease) extend(ttl time.Duration, now time.Time) {
	if ttl != 0 {
		l.ttl = ttl
	}
	l.expires = now.Add(l.ttl)
}

// claim moves a live lease to state, and reports whether it did: an
// ended lease stays as it ended, and an expiry claims only a lease past
// its TTL (its renewal may have moved it on).
func (l *lease) claim(state leaseState, now time.Time) bool {
	if l.state != live || state == expired && now.Before(l.expires) {
		return false
	}
	l.state = state
	l.changedLocked()
	return true
}

// endedAs names how l ended, for messages.
func (l *lease) endedAs() string {
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

// safeFor is how long l is guaranteed to hold at now: until its TTL
// passes or the session could expire, whichever is first; 0 once it has
// ended.
func (l *lease) safeFor(now time.Time) time.Duration {
	if l.state != live {
		return 0
	}
	return max(0, min(l.expires.Sub(now), l.held().SafeFor()))
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

// add remembers l as broken.
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

// get finds a broken lease by its id.
func (b *brokenSet) get(id string) (brokenLease, bool) {
	l, ok := b.m[id]
	return l, ok
}

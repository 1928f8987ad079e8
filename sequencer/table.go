package sequencer

import (
	"container/heap"
	"sort"
	"sync"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// The daemon's live leases, behind one lock: the leases by id and by name,
// their expiry schedule, the leases broken lately and the quota counts of
// every identity. A lease's own fields that change (state, ttl, expires,
// value, a multi-lock's index) are guarded by the same lock. Nothing here
// talks to ZooKeeper: a caller ends a lease's grant after claim has
// taken it out of the table.

// leaseTable is the Service's leases and what is counted of them.
type leaseTable struct {
	clock zklock.Clock
	m     *metrics.Metrics

	mu      sync.Mutex
	closed  bool                     // the Service is closing: no lease is added
	byID    map[leaseID]*lease       // live ones only
	byName  map[byNameKey]*lease     // the live lease per exclusive lock and election
	exp     expiries                 // every live lease by expiry
	broken  brokenSet                // the leases broken lately, for their holders' next call
	held    map[string]*identityHold // leases held, by identity
	pending map[string]*identityHold // acquires in flight, by identity
}

func newLeaseTable(clock zklock.Clock, m *metrics.Metrics) *leaseTable {
	return &leaseTable{
		clock:   clock,
		m:       m,
		byID:    map[leaseID]*lease{},
		byName:  map[byNameKey]*lease{},
		held:    map[string]*identityHold{},
		pending: map[string]*identityHold{},
		exp:     expiries{kick: make(chan struct{}, 1)},
	}
}

// byNameKey is the key of byName: a lock's and an election's names are
// apart.
type byNameKey struct {
	kind fence.Kind
	name string
}

// with runs f under the table's lock, for reading or setting a lease's
// guarded fields.
func (t *leaseTable) with(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// add puts the new lease l in the table, counts it for its caller and
// schedules its expiry, then calls admitted under the lock. It refuses a
// closing table, and an id already taken.
func (t *leaseTable) add(l *lease, admitted func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	l.expires = t.clock.Now().Add(l.ttl)
	if t.closed {
		return unavailable("shutting down", nil)
	}
	if _, taken := t.byID[l.id]; taken {
		// Two grants named the same new id and both were granted (two
		// locks, or a retry racing its original): one lease per id.
		return badRequest("lease_id %s is already in use", l.id)
	}
	t.byID[l.id] = l
	t.countLocked(l, 1)
	if single(l.kind) {
		t.byName[byNameKey{l.kind, l.name}] = l
	}
	t.scheduleLocked(l)
	admitted()
	return nil
}

// lookup is the live lease with the id (in wire form), or nil.
func (t *leaseTable) lookup(id string) *lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookupLocked(id)
}

func (t *leaseTable) lookupLocked(id string) *lease {
	k, ok := parseLeaseID(id)
	if !ok {
		return nil
	}
	return t.byID[k]
}

// find is the live lease of family f on name with token (and with its
// contender at path, when path is given), or nil. A kind with one holder
// at a time is found by name; with scan, the other leases are looked
// through too.
func (t *leaseTable) find(f api.Family, name string, token uint64, path string, scan bool) *lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.findLocked(f, name, token, path, scan)
}

func (t *leaseTable) findLocked(f api.Family, name string, token uint64, path string, scan bool) *lease {
	for _, k := range kindsOf(f) {
		if l := t.byName[byNameKey{k, name}]; l != nil && l.grant.Token == token && (path == "" || l.grant.Path == path) {
			return l
		}
	}
	if !scan {
		return nil
	}
	for _, l := range t.byID {
		// A multi-lock's lease (grant nil) is named by its locks' names
		// joined: one of a single lock bears that lock's name.
		if l.grant != nil && l.name == name && familyOf(l.kind) == f && l.grant.Token == token && (path == "" || l.grant.Path == path) {
			return l
		}
	}
	return nil
}

// expiresAt is when this daemon's lease of family f on name with token
// expires (found as find finds it); nil when it has none.
func (t *leaseTable) expiresAt(f api.Family, name string, token uint64, scan bool) *time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.findLocked(f, name, token, "", scan); l != nil {
		exp := l.expires.UTC()
		return &exp
	}
	return nil
}

// ownerOf is the owner of this daemon's lease of family f on name with
// token, if it has one with one holder at a time; vouched asks that its
// grant be still held as well.
func (t *leaseTable) ownerOf(f api.Family, name string, token uint64, vouched bool) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.findLocked(f, name, token, "", false)
	if l == nil || vouched && (l.state != live || l.grant.Err() != nil) {
		return "", false
	}
	return l.owner, true
}

// claim takes l out of the table if it is live (and, for expiry, past
// its TTL), moving it to state, and reports whether it did. The caller
// then ends its grant.
func (t *leaseTable) claim(l *lease, state leaseState) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.claimLocked(l, state)
}

// breakLease claims l as broken and remembers why, for its holder's next
// call.
func (t *leaseTable) breakLease(l *lease, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.claimLocked(l, broken) {
		return false
	}
	t.broken.add(l, reason)
	return true
}

func (t *leaseTable) claimLocked(l *lease, state leaseState) bool {
	if !l.claim(state, t.clock.Now()) {
		return false
	}
	delete(t.byID, l.id)
	t.countLocked(l, -1)
	if key := (byNameKey{l.kind, l.name}); t.byName[key] == l {
		delete(t.byName, key)
	}
	if l.at >= 0 {
		// The timer stays armed: should it fire for nothing, the expiry
		// loop re-arms it.
		heap.Remove(&t.exp.h, int(l.at))
	}
	return true
}

// seal closes the table to new leases: Close has begun.
func (t *leaseTable) seal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
}

// shut claims every live lease as released, for Close, and seals the
// table if seal has not.
func (t *leaseTable) shut() []*lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.exp.clear() // all at once rather than lease by lease
	var out []*lease
	for _, l := range t.byID {
		if t.claimLocked(l, released) {
			out = append(out, l)
		}
	}
	return out
}

// extend moves the expiry of the lease l, if it is still live, to its TTL
// from now (ttl 0 keeps its TTL, another becomes it), and calls view under
// the lock; ok is false for a lease that has ended, or is past its TTL (a
// renewal never revives a lease).
func (t *leaseTable) extend(l *lease, ttl time.Duration, view func()) (ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.extendLocked(l, ttl, view)
}

func (t *leaseTable) extendLocked(l *lease, ttl time.Duration, view func()) bool {
	now := t.clock.Now()
	if !l.live(now) {
		return false
	}
	l.extend(ttl, now)
	t.scheduleLocked(l)
	view()
	return true
}

// endedAs names how l ended, for messages; "" for no lease.
func (t *leaseTable) endedAs(l *lease) string {
	if l == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return l.endedAs()
}

// brokenAs is the record of the lease id if an operator broke it lately.
func (t *leaseTable) brokenAs(id string) (brokenLease, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.broken.get(id)
}

// safeFor is how long the live lease id of family f on name is
// guaranteed to hold (see lease.safeFor); ok is false when id is not such
// a lease on this daemon.
func (t *leaseTable) safeFor(f api.Family, name, id string) (safe time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lookupLocked(id)
	if l == nil || l.name != name || familyOf(l.kind) != f {
		return 0, false
	}
	return l.safeFor(t.clock.Now()), true
}

// listed lists the live leases of family f held through this daemon, by
// name, as a listing shows them: no lease ids, no signed sequencers.
func (t *leaseTable) listed(f api.Family) []api.Lease {
	out := collect(t, func(l *lease) bool { return familyOf(l.kind) == f }, (*lease).listed)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// collect is the API form, as f makes it, of every live lease pick takes,
// under the lock.
func collect[T any](t *leaseTable, pick func(*lease) bool, f func(*lease) T) []T {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []T{}
	for _, l := range t.byID {
		if pick(l) {
			out = append(out, f(l))
		}
	}
	return out
}

// scheduleLocked puts l in the expiry schedule at its expires, or moves
// it there, and arms the timer for the earliest expiry.
func (t *leaseTable) scheduleLocked(l *lease) {
	l.changedLocked()
	if l.at >= 0 {
		heap.Fix(&t.exp.h, int(l.at))
	} else {
		heap.Push(&t.exp.h, l)
	}
	t.exp.arm(t.clock)
}

// due takes out of the schedule the leases whose expiry is not after now,
// re-arms the timer, and calls counted under the lock when there are any.
// c is the timer channel the caller waited on.
func (t *leaseTable) due(c <-chan time.Time, counted func()) []*lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exp.c == c {
		t.exp.c, t.exp.t = nil, nil
	}
	now := t.clock.Now()
	var due []*lease
	for len(t.exp.h) > 0 && !now.Before(t.exp.h[0].expires) {
		due = append(due, heap.Pop(&t.exp.h).(*lease))
	}
	t.exp.arm(t.clock)
	if len(due) > 0 {
		counted()
	}
	return due
}

// timer is the armed expiry timer's channel (nil when none).
func (t *leaseTable) timer() <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exp.c
}

// reschedule puts l back in the schedule if it is live and out of it
// (an expiry that found it not due: the clock went back).
func (t *leaseTable) reschedule(l *lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.state == live && l.at < 0 {
		t.scheduleLocked(l)
	}
}

// countRenewal counts a renewal of l for each lock it holds.
func (t *leaseTable) countRenewal(l *lease) {
	switch {
	case l.set != nil:
		for _, name := range l.set.names {
			t.m.Renewal(name)
		}
	case l.kind != fence.KindElection:
		t.m.Renewal(l.name)
	}
}

// countLocked counts the lease l (d 1) or its end (d -1) for its caller.
func (t *leaseTable) countLocked(l *lease, d int) {
	if l.who == nil || l.who.id == "" {
		return
	}
	h := t.held[l.who.id]
	if h == nil {
		h = &identityHold{}
		t.held[l.who.id] = h
	}
	h.add(leaseKeys(l), d)
	if h.leases <= 0 {
		delete(t.held, l.who.id)
	}
	t.m.IdentityLease(l.who.label, d)
}

// identityHold is what one identity holds (or is being granted): leases
// and, per name (family/name), how many of them.
type identityHold struct {
	leases int
	names  map[string]int
}

func (h *identityHold) add(keys []string, d int) {
	h.leases += d
	if h.names == nil {
		h.names = map[string]int{}
	}
	for _, k := range keys {
		if h.names[k] += d; h.names[k] <= 0 {
			delete(h.names, k)
		}
	}
}

// nameKey is the key of name of family f in an identityHold: a lock and a
// shared lease on one name are one name.
func nameKey(f api.Family, name string) string { return string(f) + "/" + name }

// leaseKeys are the names lease l holds.
func leaseKeys(l *lease) []string {
	if l.set != nil {
		keys := make([]string, len(l.set.names))
		for i, n := range l.set.names {
			keys[i] = nameKey(api.Locks, n)
		}
		return keys
	}
	return []string{nameKey(familyOf(l.kind), l.name)}
}

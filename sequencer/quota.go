package sequencer

import (
	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/sequencer/policy"
)

// Quotas: what one identity may take of the daemon at once (leases held,
// acquires in flight, distinct names, the longest TTL), so that one
// runaway client cannot queue thousands of waiters or hold every name for
// an hour. An acquire is counted from the moment it is let through until
// it ends: two acquires at once cannot both take the last place.

// reserve lets caller c start an acquire of names (keys) with
// ttl, within its quota, and counts it until done is called; a request
// beyond the quota is a *PolicyError. retry says the request retries a
// live lease of the caller's: it takes nothing new.
func (s *Service) reserve(c *caller, keys []string, ttl *api.Duration, leaseID string) (done func(), err error) {
	q := c.policy.QuotaOf(c.id)
	if q == nil {
		return func() {}, nil
	}
	if err := q.CheckTTL(c.id, ttl); err != nil {
		return nil, err
	}
	return s.leases.reserve(c.id, q, keys, leaseID)
}

// reserve counts an acquire of keys by identity id as in flight, within
// q, until done is called; see Service.reserve.
func (t *leaseTable) reserve(id string, q *policy.Quota, keys []string, leaseID string) (done func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pending[id]
	if p == nil {
		p = &identityHold{}
	}
	if q.Waiters > 0 && p.leases >= q.Waiters {
		return nil, q.Refuse("%s may have %d acquires in flight at once, and has %d", id, q.Waiters, p.leases)
	}
	l := t.lookupLocked(leaseID)
	retry := l != nil && l.who != nil && l.who.id == id
	held := t.held[id]
	if held == nil {
		held = &identityHold{}
	}
	switch {
	case retry:
	case q.Leases > 0 && held.leases+p.leases >= q.Leases:
		return nil, q.Refuse("%s may hold %d leases at once; it holds %d and has %d being granted", id, q.Leases, held.leases, p.leases)
	case q.Names > 0:
		if n := distinct(held, p, keys); n > q.Names {
			return nil, q.Refuse("%s may hold %d distinct names at once; this request would make it %d", id, q.Names, n)
		}
	}
	t.pending[id] = p
	p.add(keys, 1)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if p.add(keys, -1); p.leases <= 0 {
			delete(t.pending, id)
		}
	}, nil
}

// distinct is how many names held, pending and keys make together.
func distinct(held, pending *identityHold, keys []string) int {
	n := len(held.names)
	for k := range pending.names {
		if held.names[k] == 0 {
			n++
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if held.names[k] == 0 && pending.names[k] == 0 && !seen[k] {
			seen[k] = true
			n++
		}
	}
	return n
}

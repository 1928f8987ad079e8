package sequencer

import (
	"sync"

	"github.com/seqd/seqd/api"
)

// Quotas: what one identity may take of the daemon at once (leases held,
// acquires in flight, distinct names, the longest TTL), so that one
// runaway client cannot queue thousands of waiters or hold every name for
// an hour. An acquire is counted from the moment it is let through until
// it ends: two acquires at once cannot both take the last place.

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

// quotaState is the Service's count of leases and in-flight acquires by
// identity. held is under Service.mu; pending under its own mu (taken
// before Service.mu, never after).
type quotaState struct {
	held map[string]*identityHold

	mu      sync.Mutex
	pending map[string]*identityHold
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

// heldLocked counts the new lease l for its caller; s.mu must be held.
func (s *Service) heldLocked(l *lease, d int) {
	if l.who == nil || l.who.id == "" {
		return
	}
	if s.quota.held == nil {
		s.quota.held = map[string]*identityHold{}
	}
	h := s.quota.held[l.who.id]
	if h == nil {
		h = &identityHold{}
		s.quota.held[l.who.id] = h
	}
	h.add(leaseKeys(l), d)
	if h.leases <= 0 {
		delete(s.quota.held, l.who.id)
	}
	s.m.IdentityLease(l.who.label, d)
}

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
	s.quota.mu.Lock()
	defer s.quota.mu.Unlock()
	p := s.quota.pending[c.id]
	if p == nil {
		p = &identityHold{}
	}
	if q.Waiters > 0 && p.leases >= q.Waiters {
		return nil, q.Refuse("%s may have %d acquires in flight at once, and has %d", c.id, q.Waiters, p.leases)
	}
	s.mu.Lock()
	retry := false
	if leaseID != "" {
		l := s.lookupLocked(leaseID)
		retry = l != nil && l.who != nil && l.who.id == c.id
	}
	held := s.quota.held[c.id]
	if held == nil {
		held = &identityHold{}
	}
	err = nil
	switch {
	case retry:
	case q.Leases > 0 && held.leases+p.leases >= q.Leases:
		err = q.Refuse("%s may hold %d leases at once; it holds %d and has %d being granted", c.id, q.Leases, held.leases, p.leases)
	case q.Names > 0:
		if n := distinct(held, p, keys); n > q.Names {
			err = q.Refuse("%s may hold %d distinct names at once; this request would make it %d", c.id, q.Names, n)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if s.quota.pending == nil {
		s.quota.pending = map[string]*identityHold{}
	}
	s.quota.pending[c.id] = p
	p.add(keys, 1)
	return func() {
		s.quota.mu.Lock()
		defer s.quota.mu.Unlock()
		if p.add(keys, -1); p.leases <= 0 {
			delete(s.quota.pending, c.id)
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

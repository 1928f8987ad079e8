package sequencer

import (
	"context"
	"errors"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// How the verbs judge a caller: the policy's rules, the quotas, and what
// reads show. Without a policy every check lets everything through, breaks
// aside, which need the admin.

// grantAsk is what a grant request asks for, as the policy judges it.
type grantAsk struct {
	family  api.Family
	kind    string // a policy kind word: policy.KindLockWord...
	names   []string
	ttl     *api.Duration
	leaseID string // a retry's lease id, which takes nothing more of the quota
}

// enter is the caller of ctx, judged by the policy in force, and ctx
// carrying it for the lease logic below the verbs. A ctx that names
// nobody is policy.Anonymous; the admin is judged by no policy.
func (s *Service) enter(ctx context.Context) (context.Context, *caller) {
	pc := policy.CallerOf(ctx)
	p := s.cfg.Authority.Policy()
	if pc.ID == policy.Admin {
		p = nil // the operator's key: no rule or quota limits it
	}
	c := &caller{id: pc.ID, via: pc.Via, policy: p, judge: p.For(pc.ID)}
	c.label = label(c.id, s.cfg.Authority)
	return context.WithValue(ctx, callerKey{}, c), c
}

// mayGrant enters the caller of ctx and lets it make the grant a, within its
// quota, counting it until done is called; otherwise the error says which
// rule or quota refused it. Names are validated first: a bad name is a 400
// whatever the policy says.
func (s *Service) mayGrant(ctx context.Context, a grantAsk) (_ context.Context, done func(), err error) {
	ctx, c := s.enter(ctx)
	if c.policy == nil {
		return ctx, func() {}, nil
	}
	keys := make([]string, 0, len(a.names))
	for _, n := range a.names {
		if err := validateName(a.family, n); err != nil {
			return ctx, nil, err
		}
		if err := s.judge(c, c.decide(a.kind, policy.ActAcquire, n)); err != nil {
			return ctx, nil, err
		}
		keys = append(keys, nameKey(a.family, n))
	}
	done, err = s.reserve(c, keys, a.ttl, a.leaseID)
	var pe *policy.Error
	if errors.As(err, &pe) {
		return ctx, nil, s.judge(c, pe)
	}
	return ctx, done, err
}

// judge counts a refusal of c; nil passes.
func (s *Service) judge(c *caller, e *policy.Error) error {
	if e == nil {
		return nil
	}
	code := api.CodeForbidden
	if e.Quota {
		code = api.CodeQuotaExceeded
	}
	s.m.PolicyRefused(c.label, code)
	return e
}

// mayBreak refuses a break c may not make: without a policy, one by
// anybody but the admin; with one, one no rule allows (the admin may
// always break).
func (s *Service) mayBreak(c *caller, f api.Family, name string) error {
	switch {
	case c.id == policy.Admin:
		return nil
	case c.policy != nil:
		return s.judge(c, c.decide(familyKinds(f)[0], policy.ActBreak, name))
	case !s.cfg.Authority.HasAdmin():
		return s.judge(c, &policy.Error{Msg: "breaking a holder needs the admin token, and this daemon has none: start it with --admin-token-file"})
	}
	return s.judge(c, &policy.Error{Msg: "breaking a holder needs the admin token (the daemon's --admin-token-file): send Authorization: Bearer <admin token>; the API token is not enough"})
}

// readable reports whether c may read name of family f. A lock is read as
// a lock or as a shared lock: a rule for either kind lets its names be
// read.
func readable(c *caller, f api.Family, name string) bool {
	if c.policy == nil {
		return true
	}
	for _, k := range familyKinds(f) {
		if c.decide(k, policy.ActRead, name) == nil {
			return true
		}
	}
	return false
}

// mayRead refuses a status read of name of family f that c may not make.
func (s *Service) mayRead(c *caller, f api.Family, name string) error {
	if readable(c, f, name) {
		return nil
	}
	return s.judge(c, c.decide(familyKinds(f)[0], policy.ActRead, name))
}

// familyKinds are the policy kinds of family f.
func familyKinds(f api.Family) []string {
	switch f {
	case api.Semaphores:
		return []string{policy.KindSemaphoreWord}
	case api.Elections:
		return []string{policy.KindElectionWord}
	case api.MultiLocks:
		return []string{policy.KindMultiWord}
	}
	return []string{policy.KindLockWord, policy.KindSharedWord}
}

// policyKind is the policy's word for a sequencer's kind.
func policyKind(k fence.Kind) string {
	if k == kindMulti {
		return policy.KindMultiWord
	}
	return kindWord(k)
}

// ownersTTL refuses a renewal's new TTL beyond the max_ttl of the identity
// that acquired the lease id, whoever renews it. An id that names no live
// lease passes: the renewal itself answers for it.
func (s *Service) ownersTTL(id string, ttl *api.Duration) error {
	p := s.cfg.Authority.Policy()
	if ttl == nil || p == nil {
		return nil
	}
	var owner *caller
	if l := s.leases.lookup(id); l != nil {
		owner = l.who
	}
	if owner == nil || owner.id == "" {
		return nil
	}
	if err := p.QuotaOf(owner.id).CheckTTL(owner.id, ttl); err != nil {
		return s.judge(owner, err)
	}
	return nil
}

// visibleLeases are the leases of family f that c may read.
func visibleLeases(c *caller, f api.Family, ls []api.Lease) []api.Lease {
	if c.policy == nil {
		return ls
	}
	out := ls[:0]
	for _, l := range ls {
		if readable(c, f, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// visibleMultiLeases are the multi-lock leases whose every lock c may read.
func visibleMultiLeases(c *caller, ls []api.MultiLease) []api.MultiLease {
	if c.policy == nil {
		return ls
	}
	out := ls[:0]
next:
	for _, l := range ls {
		for _, lk := range l.Locks {
			if !readable(c, api.MultiLocks, lk.Name) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// visibleOverview is o without the names c may not read.
func visibleOverview(c *caller, f api.Family, o api.Overview) api.Overview {
	if c.policy == nil {
		return o
	}
	o.Locks = keepIf(o.Locks, func(st api.LockStatus) bool { return readable(c, f, st.Name) })
	o.Semaphores = keepIf(o.Semaphores, func(st api.SemaphoreStatus) bool { return readable(c, f, st.Name) })
	o.Elections = keepIf(o.Elections, func(st api.ElectionStatus) bool { return readable(c, f, st.Name) })
	return o
}

func keepIf[T any](xs []T, ok func(T) bool) []T {
	if xs == nil {
		return nil
	}
	out := xs[:0]
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

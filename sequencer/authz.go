package sequencer

import (
	"context"
	"errors"
	"net/http"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
)

// Authorization: the policy judges each request by its caller (in the
// request's context) before anything changes, and reads show only what
// the caller may read. Without a policy every check lets everything
// through, as before there were policies.

// ask is what a grant request asks for, as the policy judges it.
type ask struct {
	family  api.Family
	kind    string // a policy kind word
	names   []string
	ttl     *api.Duration
	leaseID string
}

// authorize lets the caller of ctx make the grant a, within its quota,
// counting it until done is called; otherwise the error says which rule
// or quota refused it. Names are validated first: a bad name is a 400
// whatever the policy says.
func (s *Service) authorize(ctx context.Context, a ask) (done func(), err error) {
	c := callerOf(ctx)
	if c.policy == nil {
		return func() {}, nil
	}
	keys := make([]string, 0, len(a.names))
	for _, n := range a.names {
		if err := validateName(a.family, n); err != nil {
			return nil, err
		}
		if err := s.judge(c, c.decide(a.kind, ActAcquire, n)); err != nil {
			return nil, err
		}
		keys = append(keys, nameKey(a.family, n))
	}
	done, err = s.reserve(ctx, keys, a.ttl, a.leaseID)
	var pe *PolicyError
	if errors.As(err, &pe) {
		return nil, s.judge(c, pe)
	}
	return done, err
}

// judge counts a refusal of c; nil passes.
func (s *Service) judge(c *caller, e *PolicyError) error {
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

// may refuses the caller of ctx action on the name of kind, with the rule
// that refuses it.
func (s *Service) may(ctx context.Context, kind, action, name string) error {
	c := callerOf(ctx)
	return s.judge(c, c.decide(kind, action, name))
}

// readable reports whether the caller of ctx may read name of family f.
// A lock is read as a lock or as a shared lock: a rule for either kind
// lets its names be read.
func readable(ctx context.Context, f api.Family, name string) bool {
	c := callerOf(ctx)
	if c.policy == nil {
		return true
	}
	for _, k := range familyKinds(f) {
		if c.decide(k, ActRead, name) == nil {
			return true
		}
	}
	return false
}

// mayRead refuses a status read of name of family f the caller may not
// make.
func (s *Service) mayRead(ctx context.Context, f api.Family, name string) error {
	if readable(ctx, f, name) {
		return nil
	}
	return s.may(ctx, familyKinds(f)[0], ActRead, name)
}

// familyKinds are the policy kinds of family f.
func familyKinds(f api.Family) []string {
	switch f {
	case api.Semaphores:
		return []string{KindSemaphoreWord}
	case api.Elections:
		return []string{KindElectionWord}
	case api.MultiLocks:
		return []string{KindMultiWord}
	}
	return []string{KindLockWord, KindSharedWord}
}

// policyKind is the policy's word for a sequencer's kind.
func policyKind(k fence.Kind) string {
	if k == kindMulti {
		return KindMultiWord
	}
	return kindWord(k)
}

// checkedGrant is do after the caller's grant, as ask says it, passed the
// policy and the quotas.
func checkedGrant[Req, Resp any](what func(name string, req Req) ask, do func(*Service, context.Context, string, Req) (Resp, error)) func(*Service, context.Context, string, Req) (Resp, error) {
	return func(s *Service, ctx context.Context, name string, req Req) (Resp, error) {
		done, err := s.authorize(ctx, what(name, req))
		if err != nil {
			var zero Resp
			return zero, err
		}
		defer done()
		return do(s, ctx, name, req)
	}
}

func lockAsk(name string, req api.AcquireRequest) ask {
	kind := KindLockWord
	if req.Mode == api.ModeShared {
		kind = KindSharedWord
	}
	return ask{family: api.Locks, kind: kind, names: []string{name}, ttl: req.TTL, leaseID: req.LeaseID}
}

func semaphoreAsk(name string, req api.SemaphoreAcquireRequest) ask {
	return ask{family: api.Semaphores, kind: KindSemaphoreWord, names: []string{name}, ttl: req.TTL, leaseID: req.LeaseID}
}

func campaignAsk(name string, req api.CampaignRequest) ask {
	return ask{family: api.Elections, kind: KindElectionWord, names: []string{name}, ttl: req.TTL, leaseID: req.LeaseID}
}

func multiAsk(_ string, req api.MultiAcquireRequest) ask {
	return ask{family: api.Locks, kind: KindMultiWord, names: req.Names, ttl: req.TTL, leaseID: req.LeaseID}
}

// checkedRenew is do after the renewal's TTL passed the caller's quota.
func checkedRenew[Resp any](do func(*Service, context.Context, string, api.LeaseRequest) (Resp, error)) func(*Service, context.Context, string, api.LeaseRequest) (Resp, error) {
	return func(s *Service, ctx context.Context, name string, req api.LeaseRequest) (Resp, error) {
		if err := s.renewTTL(ctx, req.TTL); err != nil {
			var zero Resp
			return zero, err
		}
		return do(s, ctx, name, req)
	}
}

// renewTTL refuses a renewal's new TTL beyond the caller's max_ttl.
func (s *Service) renewTTL(ctx context.Context, ttl *api.Duration) error {
	c := callerOf(ctx)
	q := c.policy.quotaOf(c.id)
	if ttl == nil || q == nil {
		return nil
	}
	var pe *PolicyError
	if err := q.checkTTL(c.id, ttl); errors.As(err, &pe) {
		return s.judge(c, pe)
	}
	return nil
}

// mayBreak refuses a break the caller may not make: without a policy, one
// without the admin token; with one, one no rule allows (the admin token
// may always break).
func (h *handler) mayBreak(r *http.Request, f api.Family, name string) error {
	c := callerOf(r.Context())
	if h.policy.Load() == nil || c.id == IdentityAdmin {
		return h.admin(r)
	}
	return h.s.may(r.Context(), familyKinds(f)[0], ActBreak, name)
}

// visibleLeases are the leases of family f the caller of ctx may read.
func visibleLeases(ctx context.Context, f api.Family, ls []api.Lease) []api.Lease {
	if callerOf(ctx).policy == nil {
		return ls
	}
	out := ls[:0]
	for _, l := range ls {
		if readable(ctx, f, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// visibleMulti are the multi-lock leases whose every lock the caller of
// ctx may read.
func visibleMulti(ctx context.Context, ls []api.MultiLease) []api.MultiLease {
	if callerOf(ctx).policy == nil {
		return ls
	}
	out := ls[:0]
next:
	for _, l := range ls {
		for _, lk := range l.Locks {
			if !readable(ctx, api.MultiLocks, lk.Name) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// visibleOverview is o without the names the caller of ctx may not read.
func visibleOverview(ctx context.Context, f api.Family, o api.Overview) api.Overview {
	if callerOf(ctx).policy == nil {
		return o
	}
	o.Locks = keep(o.Locks, func(st api.LockStatus) bool { return readable(ctx, f, st.Name) })
	o.Semaphores = keep(o.Semaphores, func(st api.SemaphoreStatus) bool { return readable(ctx, f, st.Name) })
	o.Elections = keep(o.Elections, func(st api.ElectionStatus) bool { return readable(ctx, f, st.Name) })
	return o
}

func keep[T any](xs []T, ok func(T) bool) []T {
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

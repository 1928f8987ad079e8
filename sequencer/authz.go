package sequencer

import (
	"context"
	"errors"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
)

// Authorization: the policy judges each request by its caller (in the
// request's context) before anything changes, and reads show only what
// the caller may read. Without a policy every check lets everything
// through, as before there were policies.

// Ask is what a grant request asks for, as the policy judges it.
type Ask struct {
	Family  api.Family
	Kind    string // a policy kind word: KindLockWord, KindSharedWord...
	Names   []string
	TTL     *api.Duration
	LeaseID string // a retry's lease id, which takes nothing more of the quota
}

// Authorize lets the caller of ctx make the grant a, within its quota,
// counting it until done is called; otherwise the error says which rule
// or quota refused it. Names are validated first: a bad name is a 400
// whatever the policy says.
func (s *Service) Authorize(ctx context.Context, a Ask) (done func(), err error) {
	c := callerOf(ctx)
	if c.policy == nil {
		return func() {}, nil
	}
	keys := make([]string, 0, len(a.Names))
	for _, n := range a.Names {
		if err := validateName(a.Family, n); err != nil {
			return nil, err
		}
		if err := s.judge(c, c.decide(a.Kind, ActAcquire, n)); err != nil {
			return nil, err
		}
		keys = append(keys, nameKey(a.Family, n))
	}
	done, err = s.reserve(ctx, keys, a.TTL, a.LeaseID)
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

// MayAct refuses the caller of ctx action on name of family f, with the
// rule that refuses it.
func (s *Service) MayAct(ctx context.Context, f api.Family, action, name string) error {
	return s.may(ctx, familyKinds(f)[0], action, name)
}

// MayCheck refuses the caller of ctx a check of seq, with the rule that
// refuses it.
func (s *Service) MayCheck(ctx context.Context, seq fence.Sequencer) error {
	return s.may(ctx, policyKind(seq.Kind), ActCheck, seq.Name)
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

// MayRead refuses a status read of name of family f the caller may not
// make.
func (s *Service) MayRead(ctx context.Context, f api.Family, name string) error {
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

// AuthorizeRenew refuses a renewal's new TTL beyond the caller's max_ttl.
func (s *Service) AuthorizeRenew(ctx context.Context, ttl *api.Duration) error {
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

// VisibleLeases are the leases of family f the caller of ctx may read.
func VisibleLeases(ctx context.Context, f api.Family, ls []api.Lease) []api.Lease {
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

// VisibleMultiLeases are the multi-lock leases whose every lock the caller of
// ctx may read.
func VisibleMultiLeases(ctx context.Context, ls []api.MultiLease) []api.MultiLease {
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

// VisibleOverview is o without the names the caller of ctx may not read.
func VisibleOverview(ctx context.Context, f api.Family, o api.Overview) api.Overview {
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

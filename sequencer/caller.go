package sequencer

import (
	"context"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer/policy"
)

// caller is who sent a request and the policy that judges it, as the
// verbs made it on entry; the leases it is granted keep it (for the
// quotas and the audit log). The daemon's own actions (expiry, shutdown,
// its campaigns) run below the verbs and carry none.
type caller struct {
	id     string
	via    policy.Via
	label  string // id as metrics show it: bounded
	policy *policy.Policy
	judge  policy.Judge
}

type callerKey struct{}

// label is identity id as a metric label: the identities the tokens file
// or the policy names, anonymous and admin keep their name; any other
// (a certificate's) is metrics.OtherIdentity, so that the series stay
// bounded whatever certificates callers present.
func label(id string, a *policy.Authority) string {
	if id == policy.Anonymous || id == policy.Admin || a.Policy().Named(id) || a.Tokens().Has(id) {
		return id
	}
	return metrics.OtherIdentity
}

// callerOf is the caller a verb put in ctx; an empty one (no identity, no
// policy) below the verbs: the daemon's own campaigns.
func callerOf(ctx context.Context) *caller {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		return c
	}
	return &caller{}
}

// decide is c's policy's decision on action on the name of kind.
func (c *caller) decide(kind, action, name string) *policy.Error {
	return c.judge.Decide(kind, action, name)
}

// name is c's identity, "" for none (a nil caller too).
func (c *caller) name() string {
	if c == nil {
		return ""
	}
	return c.id
}

package kube

import (
	"context"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"

	"github.com/seqd/seqd/api"
)

// Term is one leadership: what a leader sends with its writes.
type Term struct {
	// Election is the election's name.
	Election string
	// Identity is the leader's (Config.Identity).
	Identity string
	// Number is the term, the fencing token: higher than every term of
	// the election before it.
	Number uint64
	// Sequencer is "election:<name>@<term>", signed when the daemon signs:
	// what Transport sends in the Fencing-Sequencer header.
	Sequencer string
}

// term is a leadership a Lock holds, from its grant until the daemon
// refuses a renewal, its deadline passes, or it is resigned or given up.
type term struct {
	t        Term
	lease    api.Lease
	deadline time.Time   // on the Lock's clock: sent + TTL (at most Config.TTL) of the last confirmed grant or renewal
	timer    clock.Timer // ends the term at deadline
	armed    int         // counts the timer's armings
	ctx      context.Context
	cancel   context.CancelCauseFunc
}

// startTerm makes the term of a lease granted at sent; l.mu is held.
func (l *Lock) startTerm(lease api.Lease, sent time.Time) *term {
	t := &term{
		t:     Term{Election: lease.Name, Identity: l.cfg.Identity, Number: lease.Token, Sequencer: lease.Sequencer},
		lease: lease,
	}
	t.ctx, t.cancel = context.WithCancelCause(context.Background())
	l.lapsed = nil
	l.armLocked(t, l.deadline(sent, lease))
	return t
}

// deadline is when a term granted or renewed at sent ends: sent plus the
// lease's TTL, but never later than this Lock's own TTL. A daemon (or
// whatever stands between) that answers a longer TTL than was asked must
// not keep an old leader's context live while another leads.
func (l *Lock) deadline(sent time.Time, lease api.Lease) time.Time {
	return sent.Add(min(time.Duration(lease.TTL), l.cfg.TTL))
}

// armLocked moves t's deadline; l.mu is held. A timer armed for an older
// deadline that fires anyway finds a newer arming and leaves the term alone.
// (The timer's function makes no call on the clock: a fake clock may run
// it while it holds its own lock.)
func (l *Lock) armLocked(t *term, deadline time.Time) {
	t.deadline = deadline
	t.armed++
	if t.timer != nil {
		t.timer.Stop()
	}
	armed := t.armed
	t.timer = l.clock.AfterFunc(deadline.Sub(l.clock.Now()), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.term == t && t.armed == armed {
			t.timer = nil // it has fired: nothing to stop
			l.endLocked(t, ErrExpired)
		}
	})
}

// endLocked ends t with cause, if it is the Lock's term; l.mu is held.
func (l *Lock) endLocked(t *term, cause error) {
	if l.term != t {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.cancel(cause)
	l.term, l.ended = nil, cause
	if cause == ErrExpired {
		l.lapsed = &t.lease
	}
}

// Term is the leadership this Lock holds, if any.
func (l *Lock) Term() (Term, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return Term{}, false
	}
	return l.term.t, true
}

// Leading returns a context derived from ctx that carries the Lock's term
// (TermFrom) and is cancelled when that term ends, with the reason as its
// cause (context.Cause): an error matching client.ErrLost, ErrExpired,
// ErrSuperseded, ErrResigned or ErrRunEnded. Without a term it is cancelled
// at once. Callbacks calls it for OnStartedLeading; call it yourself where
// the elector's callbacks are not yours (controller-runtime's manager).
func (l *Lock) Leading(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	t, ended := l.term, l.ended
	l.mu.Unlock()
	if t == nil {
		if ended == nil {
			ended = ErrRunEnded
		}
		cancel(ended)
		return out, func() { cancel(context.Canceled) }
	}
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	return WithTerm(out, t.t), func() {
		stop()
		cancel(context.Canceled)
	}
}

// Callbacks returns cb for the elector of this Lock: OnStartedLeading gets
// the context of Leading (the term in it, cancelled when the seqd lease
// ends), and OnStoppedLeading first closes the run, so that the Lock may
// campaign again in the elector's next run.
func (l *Lock) Callbacks(cb leaderelection.LeaderCallbacks) leaderelection.LeaderCallbacks {
	out := cb
	if cb.OnStartedLeading != nil {
		out.OnStartedLeading = func(ctx context.Context) {
			ctx, cancel := l.Leading(ctx)
			defer cancel()
			cb.OnStartedLeading(ctx)
		}
	}
	out.OnStoppedLeading = func() {
		l.endRun()
		if cb.OnStoppedLeading != nil {
			cb.OnStoppedLeading()
		}
	}
	return out
}

type termKey struct{}

// WithTerm returns ctx carrying t, for work that runs under a term outside
// the context Leading gave.
func WithTerm(ctx context.Context, t Term) context.Context {
	return context.WithValue(ctx, termKey{}, t)
}

// TermFrom is the term ctx carries, if any.
func TermFrom(ctx context.Context) (Term, bool) {
	t, ok := ctx.Value(termKey{}).(Term)
	return t, ok
}

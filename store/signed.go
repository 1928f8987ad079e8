package store

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seqd/seqd/fence"
)

// Guard binds the keys under Prefix to one grantor: the exclusive lock
// Name, or with Kind an election's leader (or a shared hold, or a
// semaphore's slot) of that name. With signed sequencers required, a write
// or fenced read of such a key must carry a sequencer of that kind and
// name. Without it, a holder of any other lock, or a leader of an election
// of the same name, whose tokens follow another count, could raise the
// key's max past its real holder's.
type Guard struct {
	Prefix string
	Kind   fence.Kind
	Name   string
}

// ParseGuard parses "PREFIX=LOCK" (an exclusive lock) or
// "PREFIX=<kind>:NAME", e.g. "leader/=election:scheduler".
func ParseGuard(s string) (Guard, error) {
	prefix, target, ok := strings.Cut(s, "=")
	if !ok || target == "" {
		return Guard{}, fmt.Errorf("store: guard %q: want PREFIX=LOCK or PREFIX=election:NAME, e.g. orders/=jobs/orders", s)
	}
	seq, err := fence.ParseSequencer(target + "@1")
	if err != nil {
		return Guard{}, fmt.Errorf("store: guard %q: %w", s, err)
	}
	return Guard{Prefix: prefix, Kind: seq.Kind, Name: seq.Name}, nil
}

// what names the guard's grantor, as "lock \"jobs/orders\"".
func (g Guard) what() string { return fmt.Sprintf("%s %q", g.Kind, g.Name) }

// signedOnly is the check of a store that admits only signed sequencers.
type signedOnly struct {
	v      *fence.Verifier
	guards []Guard
}

// RequireSigned makes h admit only sequencers signed by one of v's keys:
// a bare Fencing-Token, an unsigned or badly signed sequencer, or one of a
// lock other than the key's guard names, is answered 403 and changes
// nothing. A GET that carries no fencing header stays a plain read.
func (h *Handler) RequireSigned(v *fence.Verifier, guards []Guard) {
	h.signed = &signedOnly{v: v, guards: guards}
}

// refusal is a 403 of a store that requires signed sequencers.
type refusal struct {
	code, msg string
}

func (e *refusal) Error() string { return e.msg }

// token returns the token of r for key, verified.
func (c *signedOnly) token(h http.Header, key string) (uint64, error) {
	if len(h.Values(HeaderToken)) > 0 {
		return 0, &refusal{"unsigned", fmt.Sprintf("this store admits signed sequencers only: send %s as seqd gave it, not %s", HeaderSequencer, HeaderToken)}
	}
	vs := h.Values(HeaderSequencer)
	switch len(vs) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, fmt.Errorf("%w: send one %s header, not %d", ErrBadHeader, HeaderSequencer, len(vs))
	}
	seq, err := c.v.Verify(vs[0])
	switch {
	case errors.Is(err, fence.ErrUnsigned):
		return 0, &refusal{"unsigned", "this store admits signed sequencers only; this one has no signature: the daemon that granted it signs nothing"}
	case errors.Is(err, fence.ErrBadSignature):
		return 0, &refusal{"bad_signature", strings.TrimPrefix(err.Error(), "fence: ")}
	case err != nil:
		return 0, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderSequencer, err)
	}
	if g, ok := c.guard(key); ok && (g.Kind != seq.Kind || g.Name != seq.Name) {
		return 0, &refusal{"wrong_lock", fmt.Sprintf("key %q is guarded by %s, and this sequencer is of %s", key, g.what(), Guard{Kind: seq.Kind, Name: seq.Name}.what())}
	}
	return seq.Token, nil
}

// guard returns the guard of the longest prefix of key.
func (c *signedOnly) guard(key string) (Guard, bool) {
	var best Guard
	found := false
	for _, g := range c.guards {
		if strings.HasPrefix(key, g.Prefix) && (!found || len(g.Prefix) > len(best.Prefix)) {
			best, found = g, true
		}
	}
	return best, found
}

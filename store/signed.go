package store

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seqd/seqd/fence"
)

// Guard binds the keys under Prefix to the lock Lock: with signed
// sequencers required, a write or fenced read of such a key must carry a
// sequencer of that lock. Without it, a holder of any lock, whose tokens
// follow another count, could raise the key's max past its real holder's.
type Guard struct {
	Prefix string
	Lock   string
}

// ParseGuard parses "PREFIX=LOCK".
func ParseGuard(s string) (Guard, error) {
	prefix, lock, ok := strings.Cut(s, "=")
	if !ok || lock == "" {
		return Guard{}, fmt.Errorf("store: guard %q: want PREFIX=LOCK, e.g. orders/=jobs/orders", s)
	}
	if _, _, err := fence.ParseSequencer(lock + "@1"); err != nil {
		return Guard{}, fmt.Errorf("store: guard %q: %w", s, err)
	}
	return Guard{Prefix: prefix, Lock: lock}, nil
}

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
	name, token, err := c.v.Verify(vs[0])
	switch {
	case errors.Is(err, fence.ErrUnsigned):
		return 0, &refusal{"unsigned", "this store admits signed sequencers only; this one has no signature (start seqd with --signing-key-file)"}
	case errors.Is(err, fence.ErrBadSignature):
		return 0, &refusal{"bad_signature", strings.TrimPrefix(err.Error(), "fence: ")}
	case err != nil:
		return 0, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderSequencer, err)
	}
	if g, ok := c.guard(key); ok && g.Lock != name {
		return 0, &refusal{"wrong_lock", fmt.Sprintf("key %q is guarded by lock %q, and this sequencer is of lock %q", key, g.Lock, name)}
	}
	return token, nil
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

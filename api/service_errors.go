package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/fence"
)

// Errors of the lease service: each is a type a transport answers with its
// own status and code, and each matches the sentinel error for that code
// (errors.Is(err, ErrHeld)), so that callers in process and over HTTP
// test errors alike. Messages are sentences for people, built where the
// error is made.

// KindMulti is a multi-lock lease's kind in the service's errors: no
// sequencer carries it (a multi-lock's sequencers are its locks').
const KindMulti fence.Kind = "multilock"

// RequestError is a request refused before anything changed: a 400.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrBadRequest) true.
func (e *RequestError) Is(target error) bool { return target == ErrBadRequest }

// UnavailableError is a request that needs ZooKeeper while the daemon
// cannot reach it, or cannot trust its session: a 503.
type UnavailableError struct {
	Msg string
	Err error // the cause, if any
}

func (e *UnavailableError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// ConflictError is a 409: a stale token, a lost lease, a grant refused
// (held, full, led by another), a check that failed, or a semaphore limit
// that is not the recorded one, with the current token where one is known.
type ConflictError struct {
	// Err is fence.ErrStaleToken (a *fence.StaleTokenError), ErrLost,
	// ErrHeld, ErrNotHeld or ErrLimitMismatch.
	Err          error
	Kind         fence.Kind
	Name         string
	Token        uint64 // what the caller sent (0 for a grant)
	CurrentToken uint64 // 0 when unknown
	// Ended says, for ErrLost, how the lease ended as far as this
	// daemon knows: "released", "expired", "lost", or "" when it does not
	// know the lease.
	Ended string
	// Delayed says, for ErrHeld, that the lock is free but within
	// the lock-delay of an unclean end.
	Delayed bool
	// Waited is, for ErrHeld, how long the request waited for its grant:
	// 0 for one that tried once.
	Waited time.Duration
	// Limit is, for ErrLimitMismatch, the recorded limit; for a full
	// semaphore, the limit asked for.
	Limit int
	// Reason is, for ErrBroken, the reason the break gave.
	Reason string
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Code is the API's code for the conflict (one of the Code* constants).
func (e *ConflictError) Code() string {
	switch {
	case errors.Is(e.Err, ErrBroken):
		return CodeBroken
	case errors.Is(e.Err, fence.ErrStaleToken):
		return CodeStaleToken
	case errors.Is(e.Err, ErrHeld):
		return CodeHeld
	case errors.Is(e.Err, ErrNotHeld):
		return CodeNotHeld
	case errors.Is(e.Err, ErrLimitMismatch):
		return CodeLimitMismatch
	}
	return CodeLost
}

// Is makes a broken lease a lost one too: errors.Is(err, ErrLost).
func (e *ConflictError) Is(target error) bool {
	return target == ErrLost && errors.Is(e.Err, ErrBroken)
}

func (e *ConflictError) Error() string {
	what := fmt.Sprintf("%s %q", KindNoun(e.Kind), e.Name)
	switch {
	case errors.Is(e.Err, fence.ErrStaleToken):
		return fmt.Sprintf("%s %d for %s is stale: the %s's current %s is %d", TokenWord(e.Kind), e.Token, what, KindNoun(e.Kind), TokenWord(e.Kind), e.CurrentToken)
	case errors.Is(e.Err, ErrLimitMismatch):
		return fmt.Sprintf("%s has limit %d, recorded by its holders; every holder must name the same limit", what, e.Limit)
	case errors.Is(e.Err, ErrHeld):
		return e.heldMessage(what)
	case errors.Is(e.Err, ErrNotHeld) && e.Token == 0:
		return fmt.Sprintf("nobody holds %s", what)
	case errors.Is(e.Err, ErrNotHeld):
		return fmt.Sprintf("%s %d does not hold %s: it is free or held with another %s", TokenWord(e.Kind), e.Token, what, TokenWord(e.Kind))
	case errors.Is(e.Err, ErrBroken):
		if e.Kind == fence.KindElection {
			return fmt.Sprintf("the leadership of %s with term %d was broken by an operator: %s", what, e.Token, e.Reason)
		}
		return fmt.Sprintf("the lease on %s with token %d was broken by an operator: %s", what, e.Token, e.Reason)
	}
	if e.Kind == KindMulti && e.Token == 0 {
		return fmt.Sprintf("no live multi-lock lease %s on this daemon: released, expired, lost, or never granted here", e.Name)
	}
	lease := fmt.Sprintf("the lease on %s with token %d", what, e.Token)
	if e.Kind == fence.KindElection {
		lease = fmt.Sprintf("the leadership of %s with term %d", what, e.Token)
	}
	switch e.Ended {
	case "released", "expired":
		return fmt.Sprintf("%s was %s", lease, e.Ended)
	case "lost":
		return fmt.Sprintf("%s was lost (its ZooKeeper session or node went away)", lease)
	}
	return fmt.Sprintf("no live lease on %s with %s %d: unknown lease (released, expired, or not granted by this daemon)", what, TokenWord(e.Kind), e.Token)
}

func (e *ConflictError) heldMessage(what string) string {
	// The lease_id retry is for an owner whose own grant's answer went
	// astray: it asks again at once. A request whose wait ran out is told
	// how long it waited instead.
	retry := " (an owner retrying its own acquire sends the lease_id it was given)"
	switch {
	case e.Waited > 0:
		retry = fmt.Sprintf("; this request waited %v for it", e.Waited)
	case e.Kind == fence.KindElection:
		retry = " (an owner retrying its own campaign sends the lease_id it was given)"
	}
	switch {
	case e.Delayed:
		return fmt.Sprintf("%s is free but within its lock-delay after its last holder ended uncleanly; try again later", what)
	case e.Kind == fence.KindShared:
		return fmt.Sprintf("%s has a writer, holding or queued ahead%s", what, retry)
	case e.Kind == fence.KindSemaphore:
		return fmt.Sprintf("%s is full: its %d slots are held, or another acquirer is taking one%s", what, e.Limit, retry)
	case e.Kind == fence.KindElection:
		return fmt.Sprintf("%s has another leader%s", what, retry)
	}
	return fmt.Sprintf("%s is held%s", what, retry)
}

// KindNoun names a kind's grantor in messages: a lock, a semaphore, an
// election.
func KindNoun(k fence.Kind) string {
	switch k {
	case fence.KindSemaphore:
		return "semaphore"
	case fence.KindElection:
		return "election"
	case KindMulti:
		return "multi-lock"
	}
	return "lock"
}

// TokenWord is what a kind calls its token.
func TokenWord(k fence.Kind) string {
	if k == fence.KindElection {
		return "term"
	}
	return "token"
}

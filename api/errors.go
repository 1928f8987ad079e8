package api

import (
	"errors"
	"fmt"

	"github.com/seqd/seqd/fence"
)

// Errors that a call's error matches with errors.Is, whether the daemon
// answered them (an *APIError) or the daemon core (package sequencer)
// returned them in process. A stale token matches fence.ErrStaleToken.
var (
	// ErrHeld: not granted within the wait (a held lock, a full semaphore,
	// an election led by another).
	ErrHeld = errors.New("seqd: not granted: held")
	// ErrLost: the lease ended (TTL passed, session lost, released or
	// broken) and nobody has been granted the lock since.
	ErrLost = errors.New("seqd: lease lost")
	// ErrBroken: an operator broke the lease (an *APIError whose Reason
	// says why). It is a loss: an error that matches ErrBroken matches
	// ErrLost too.
	ErrBroken = errors.New("seqd: lease broken")
	// ErrUnavailable: ZooKeeper cannot be reached now; try again.
	ErrUnavailable = errors.New("seqd: zookeeper unavailable")
	// ErrBadRequest: the request was malformed or out of range; nothing
	// changed.
	ErrBadRequest = errors.New("seqd: bad request")
	// ErrNotHeld: a check of a token that is not below the current one but
	// does not hold the lock either.
	ErrNotHeld = errors.New("seqd: token does not hold the lock")
	// ErrLimitMismatch: a semaphore acquire named another limit than the
	// one its holders recorded.
	ErrLimitMismatch = errors.New("seqd: semaphore limit mismatch")
	// ErrUnauthorized: the daemon refused the bearer token (401) or the
	// caller's rights (403).
	ErrUnauthorized = errors.New("seqd: unauthorized")
	// ErrForbidden: the daemon's policy (or the admin-token rule of a
	// break) does not allow the caller this request (403 forbidden).
	// Such an error matches ErrUnauthorized too.
	ErrForbidden = errors.New("seqd: forbidden")
	// ErrQuotaExceeded: the request would take the caller beyond a quota of
	// the daemon's policy (429 quota_exceeded); nothing changed.
	ErrQuotaExceeded = errors.New("seqd: quota exceeded")
	// ErrDaemonUnreachable: the daemon did not answer.
	ErrDaemonUnreachable = errors.New("seqd: daemon unreachable")
)

// APIError is a non-2xx answer of the daemon.
type APIError struct {
	Status  int    // the HTTP status
	Code    string // one of the Code* constants
	Message string // the daemon's sentence
	// CurrentToken is the lock's current token, where the daemon knows it.
	CurrentToken *uint64
	// Limit is a semaphore's recorded limit (limit_mismatch).
	Limit *int
	// Reason is the reason of a break (broken).
	Reason string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// Is maps the API's codes to the package's errors, so that callers test
// errors.Is(err, api.ErrHeld) or errors.Is(err, fence.ErrStaleToken)
// alike for remote and in-process calls.
func (e *APIError) Is(target error) bool {
	switch target {
	case fence.ErrStaleToken:
		return e.Code == CodeStaleToken
	case ErrHeld:
		return e.Code == CodeHeld
	case ErrLost:
		return e.Code == CodeLost || e.Code == CodeBroken
	case ErrBroken:
		return e.Code == CodeBroken
	case ErrUnavailable:
		return e.Code == CodeUnavailable
	case ErrBadRequest:
		return e.Code == CodeBadRequest
	case ErrNotHeld:
		return e.Code == CodeNotHeld
	case ErrLimitMismatch:
		return e.Code == CodeLimitMismatch
	case ErrUnauthorized:
		return e.Status == 401 || e.Status == 403
	case ErrForbidden:
		return e.Code == CodeForbidden
	case ErrQuotaExceeded:
		return e.Code == CodeQuotaExceeded
	}
	return false
}

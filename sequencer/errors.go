package sequencer

import (
	"fmt"

	"github.com/seqd/seqd/api"
)

// The Service's errors are package api's: a transport maps each to its
// status and code without linking the service.
type (
	// RequestError is a request refused before anything changed: a 400.
	RequestError = api.RequestError
	// UnavailableError is a request that needs ZooKeeper while the daemon
	// cannot reach it, or cannot trust its session: a 503.
	UnavailableError = api.UnavailableError
	// ConflictError is a 409: a stale token, a lost lease, a grant refused.
	ConflictError = api.ConflictError
)

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

func unavailable(msg string, cause error) error { return &UnavailableError{Msg: msg, Err: cause} }

// noun names a kind's grantor in messages; tokenWord is what a kind calls
// its token.
var (
	noun      = api.KindNoun
	tokenWord = api.TokenWord
)

package client

import "github.com/seqd/seqd/api"

// The errors a call's error matches with errors.Is, defined by the wire
// contract (package api, where APIError maps the daemon's codes to them)
// and named here for convenience. A stale token matches
// fence.ErrStaleToken.
var (
	ErrHeld              = api.ErrHeld
	ErrLost              = api.ErrLost
	ErrBroken            = api.ErrBroken
	ErrUnavailable       = api.ErrUnavailable
	ErrBadRequest        = api.ErrBadRequest
	ErrNotHeld           = api.ErrNotHeld
	ErrLimitMismatch     = api.ErrLimitMismatch
	ErrUnauthorized      = api.ErrUnauthorized
	ErrForbidden         = api.ErrForbidden
	ErrQuotaExceeded     = api.ErrQuotaExceeded
	ErrDaemonUnreachable = api.ErrDaemonUnreachable
)

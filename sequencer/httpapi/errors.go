package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// How an error becomes a status: the Service's errors are typed
// (api.ConflictError, RequestError, UnavailableError, policy.Error), and
// failure maps each to its status and the code of the wire contract.

// errAnswered: the handler wrote the answer itself.
var errAnswered = errors.New("answered")

// answer writes v, or the error.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	switch {
	case errors.Is(err, errAnswered):
	case err != nil:
		h.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// fail writes the answer to err.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body := h.failure(r, err)
	writeError(w, status, body)
}

// failure is the status and body that answer err.
func (h *handler) failure(r *http.Request, err error) (int, api.ErrorBody) {
	var (
		ce *api.ConflictError
		re *api.RequestError
		ue *api.UnavailableError
		se *fence.SequencerError
		fe *forbiddenError
		pe *policy.Error
	)
	switch {
	case errors.As(err, &pe) && pe.Quota:
		return http.StatusTooManyRequests, api.ErrorBody{Error: pe.Msg, Code: api.CodeQuotaExceeded}
	case errors.As(err, &pe):
		return http.StatusForbidden, api.ErrorBody{Error: pe.Msg, Code: api.CodeForbidden}
	case errors.As(err, &fe):
		return http.StatusForbidden, api.ErrorBody{Error: fe.Msg, Code: api.CodeForbidden}
	case errors.As(err, &ce):
		body := api.ErrorBody{Error: ce.Error(), Code: ce.Code()}
		if ce.CurrentToken != 0 {
			body.CurrentToken = &ce.CurrentToken
		}
		if errors.Is(ce.Err, api.ErrLimitMismatch) {
			body.Limit = &ce.Limit
		}
		body.Reason = ce.Reason
		return http.StatusConflict, body
	case errors.As(err, &re):
		return http.StatusBadRequest, api.ErrorBody{Error: re.Msg, Code: api.CodeBadRequest}
	case errors.As(err, &se) && errors.Is(se.Err, fence.ErrBadSignature):
		return http.StatusForbidden, api.ErrorBody{Error: "bad sequencer signature: " + se.Reason + ": seqd did not sign this sequencer", Code: api.CodeBadSignature}
	case errors.As(err, &se):
		return http.StatusBadRequest, api.ErrorBody{Error: "invalid sequencer: " + se.Reason, Code: api.CodeBadRequest}
	case errors.As(err, &ue):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: ue.Error(), Code: api.CodeUnavailable}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this.
		return 499, api.ErrorBody{Error: "request canceled", Code: "canceled"}
	}
	h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return http.StatusInternalServerError, api.ErrorBody{Error: err.Error(), Code: api.CodeInternal}
}

// forbiddenError is a request the handler's guards refuse: a 403.
type forbiddenError struct{ Msg string }

func (e *forbiddenError) Error() string { return e.Msg }

// Is makes errors.Is(err, api.ErrUnauthorized) true.
func (e *forbiddenError) Is(target error) bool { return target == api.ErrUnauthorized }

// badRequest is a 400 with a sentence that says what is wrong.
func badRequest(format string, args ...any) error {
	return &api.RequestError{Msg: fmt.Sprintf(format, args...)}
}

package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/api"
)

// Who calls, and what the handler lets through: the bearer tokens (API,
// admin, named) and client certificates name the caller, which rides in
// the request's context to the Service, whose policy judges it.

// checkedGrant is do after the caller's grant, as ask says it, passed the
// policy and the quotas.
func checkedGrant[Req, Resp any](what func(name string, req Req) sequencer.Ask, do func(*sequencer.Service, context.Context, string, Req) (Resp, error)) func(*sequencer.Service, context.Context, string, Req) (Resp, error) {
	return func(s *sequencer.Service, ctx context.Context, name string, req Req) (Resp, error) {
		done, err := s.Authorize(ctx, what(name, req))
		if err != nil {
			var zero Resp
			return zero, err
		}
		defer done()
		return do(s, ctx, name, req)
	}
}

func lockAsk(name string, req api.AcquireRequest) sequencer.Ask {
	kind := sequencer.KindLockWord
	if req.Mode == api.ModeShared {
		kind = sequencer.KindSharedWord
	}
	return sequencer.Ask{Family: api.Locks, Kind: kind, Names: []string{name}, TTL: req.TTL, LeaseID: req.LeaseID}
}

func semaphoreAsk(name string, req api.SemaphoreAcquireRequest) sequencer.Ask {
	return sequencer.Ask{Family: api.Semaphores, Kind: sequencer.KindSemaphoreWord, Names: []string{name}, TTL: req.TTL, LeaseID: req.LeaseID}
}

func campaignAsk(name string, req api.CampaignRequest) sequencer.Ask {
	return sequencer.Ask{Family: api.Elections, Kind: sequencer.KindElectionWord, Names: []string{name}, TTL: req.TTL, LeaseID: req.LeaseID}
}

func multiAsk(_ string, req api.MultiAcquireRequest) sequencer.Ask {
	return sequencer.Ask{Family: api.Locks, Kind: sequencer.KindMultiWord, Names: req.Names, TTL: req.TTL, LeaseID: req.LeaseID}
}

// checkedRenew is do after the renewal's TTL passed the caller's quota.
func checkedRenew[Resp any](do func(*sequencer.Service, context.Context, string, api.LeaseRequest) (Resp, error)) func(*sequencer.Service, context.Context, string, api.LeaseRequest) (Resp, error) {
	return func(s *sequencer.Service, ctx context.Context, name string, req api.LeaseRequest) (Resp, error) {
		if err := s.AuthorizeRenew(ctx, req.TTL); err != nil {
			var zero Resp
			return zero, err
		}
		return do(s, ctx, name, req)
	}
}

// mayBreak refuses a break the caller may not make: without a policy, one
// without the admin token; with one, one no rule allows (the admin token
// may always break).
func (h *handler) mayBreak(r *http.Request, f api.Family, name string) error {
	if h.policy.Load() == nil || sequencer.IdentityOf(r.Context()) == sequencer.IdentityAdmin {
		return h.admin(r)
	}
	return h.s.MayAct(r.Context(), f, sequencer.ActBreak, name)
}

// bearer is the token of an "Authorization: Bearer <token>" header, "" if
// there is none.
func bearer(r *http.Request) string {
	v := r.Header.Get("Authorization")
	if len(v) < 7 || !strings.EqualFold(v[:7], "Bearer ") {
		return ""
	}
	return v[7:]
}

// How a caller was named.
const (
	viaNone  = iota // anonymous
	viaAdmin        // the admin token
	viaCert         // a client certificate
	viaToken        // a named token
)

// identify names the caller of r, and says how: the admin token, else a
// named token, else its client certificate (when the handler trusts
// certificates), else anonymous. A named token names its caller on a
// connection with a certificate too: there the certificate opens the
// connection (mutual TLS), the token says who calls.
func (h *handler) identify(r *http.Request) (id string, via int, err error) {
	if h.isAdmin(r) {
		return sequencer.IdentityAdmin, viaAdmin, nil
	}
	if name, ok := h.tokens.Load().Lookup(bearer(r)); ok {
		return name, viaToken, nil
	}
	if h.certIDs && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		byCert := sequencer.CertIdentity(r.TLS.PeerCertificates[0])
		why := sequencer.ValidIdentity(byCert)
		switch {
		case why == "":
			return byCert, viaCert, nil
		case h.policy.Load() != nil:
			return "", viaNone, &sequencer.ForbiddenError{Msg: "the client certificate names no identity a policy can name: " + why}
		}
		// No policy to name it in: anonymous, as before identities.
	}
	return sequencer.IdentityAnonymous, viaNone, nil
}

// auth lets through the calls that carry the API token or the admin
// token (any call, when there is no API token).
//
// It names the caller too (see identify), for the policy, and carries the
// caller in the request's context. With named tokens, a call needs a
// bearer token (the API token, the admin token or a named one) or, where
// certificates name callers, a client certificate.
func (h *handler) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + h.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, via, err := h.identify(r)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		ok := true
		switch {
		case via == viaAdmin, via == viaToken, via == viaCert && h.token == "":
			// the admin token, a named token, or a certificate on a
			// daemon without an API token
		case h.token != "":
			ok = subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		case h.tokens != nil:
			ok = false // a named token or a certificate is needed
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="seqd"`)
			writeError(w, http.StatusUnauthorized, api.ErrorBody{Error: "missing or wrong bearer token: send Authorization: Bearer <token>", Code: api.CodeUnauthorized})
			return
		}
		next.ServeHTTP(w, r.WithContext(sequencer.WithCaller(r.Context(), id, h.policy.Load(), h.tokens.Load())))
	})
}

// isAdmin reports whether r carries the admin token.
func (h *handler) isAdmin(r *http.Request) bool {
	if h.adminToken == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+h.adminToken)) == 1
}

// admin refuses a request that does not carry the admin token (403).
func (h *handler) admin(r *http.Request) error {
	switch {
	case h.adminToken == "":
		return &sequencer.ForbiddenError{Msg: "breaking a holder needs the admin token, and this daemon has none: start it with --admin-token-file"}
	case !h.isAdmin(r):
		return &sequencer.ForbiddenError{Msg: "breaking a holder needs the admin token (the daemon's --admin-token-file): send Authorization: Bearer <admin token>; the API token is not enough"}
	}
	return nil
}

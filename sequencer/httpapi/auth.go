package httpapi

import (
	"crypto/subtle"
	"crypto/x509"
	"net/http"
	"strings"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/sequencer/policy"
)

// Who calls: the service's Authority names the caller from its bearer
// token and client certificate, and the handler attaches it to the
// request's context. The handler decides only whether a call may reach
// the service at all (401): what the caller may do there, the service's
// verbs decide.

// bearer is the token of an "Authorization: Bearer <token>" header, "" if
// there is none.
func bearer(r *http.Request) string {
	v := r.Header.Get("Authorization")
	if len(v) < 7 || !strings.EqualFold(v[:7], "Bearer ") {
		return ""
	}
	return v[7:]
}

// peerCert is r's verified client certificate, nil for none.
func peerCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	return r.TLS.PeerCertificates[0]
}

// auth lets through the calls that carry the API token, the admin token or
// a named token (any call, when there is neither an API token nor named
// tokens; a call with a client certificate that names its caller, when
// there is no API token), and carries the caller in the request's context.
func (h *handler) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + h.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := h.s.Authority()
		c, err := a.Identify(bearer(r), peerCert(r))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		ok := true
		switch {
		case c.Via == policy.ViaAdmin, c.Via == policy.ViaToken, c.Via == policy.ViaCertificate && h.token == "":
		case h.token != "":
			ok = subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1
		case a.HasTokens():
			ok = false // a named token or a certificate is needed
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="seqd"`)
			writeError(w, http.StatusUnauthorized, api.ErrorBody{Error: "missing or wrong bearer token: send Authorization: Bearer <token>", Code: api.CodeUnauthorized})
			return
		}
		next.ServeHTTP(w, r.WithContext(policy.WithCaller(traceContext(r), c)))
	})
}

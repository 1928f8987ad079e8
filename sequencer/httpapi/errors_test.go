package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// Every error type the service answers becomes its status and code, and
// the body carries the sentence the error was made with.
func TestErrorsBecomeStatuses(t *testing.T) {
	stale := &fence.StaleTokenError{Key: "x", Token: 3, Max: 5}
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{&api.RequestError{Msg: "bad name"}, 400, api.CodeBadRequest},
		{&api.UnavailableError{Msg: "zookeeper is away"}, 503, api.CodeUnavailable},
		{&api.ConflictError{Err: api.ErrHeld, Name: "x"}, 409, api.CodeHeld},
		{&api.ConflictError{Err: api.ErrNotHeld, Name: "x", Token: 2}, 409, api.CodeNotHeld},
		{&api.ConflictError{Err: api.ErrLost, Name: "x", Token: 2}, 409, api.CodeLost},
		{&api.ConflictError{Err: api.ErrBroken, Name: "x", Token: 2, Reason: "stuck"}, 409, api.CodeBroken},
		{&api.ConflictError{Err: stale, Name: "x", Token: 3, CurrentToken: 5}, 409, api.CodeStaleToken},
		{&api.ConflictError{Err: api.ErrLimitMismatch, Name: "x", Limit: 3}, 409, api.CodeLimitMismatch},
		{&policy.Error{Msg: "p:1 refuses it"}, 403, api.CodeForbidden},
		{&policy.Error{Quota: true, Msg: "p:2 limits it"}, 429, api.CodeQuotaExceeded},
		{fmt.Errorf("wrapped: %w", &api.RequestError{Msg: "bad name"}), 400, api.CodeBadRequest},
		{errors.New("a bug"), 500, api.CodeInternal},
	} {
		svc := &fakeService{err: c.err}
		h := NewHandler(svc, HandlerOptions{Logger: discard})
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "http://127.0.0.1/v1/locks/x/acquire", strings.NewReader(`{"owner":"o"}`))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, r)
		var body api.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: body %q: %v", c.err, rec.Body, err)
		}
		if rec.Code != c.status || body.Code != c.code || body.Error == "" || !strings.Contains(c.err.Error(), body.Error) && c.status != 409 {
			t.Errorf("%T %v: got %d %+v, want %d %s with its sentence", c.err, c.err, rec.Code, body, c.status, c.code)
		}
		if c.status == 409 && body.Error != c.err.Error() {
			t.Errorf("%v: sentence %q, want the error's own", c.err, body.Error)
		}
	}
}

// The handler names the caller with the service's Authority and attaches
// it; it refuses (401) a call with none of the tokens it asks for, and a
// certificate's refusal (403) never reaches the service.
func TestAuthAttachesTheCaller(t *testing.T) {
	toks, err := policy.ParseTokens("t", []byte("ops 0123456789abcdef-ops\n"))
	if err != nil {
		t.Fatal(err)
	}
	auth := policy.NewAuthority(policy.AuthorityOptions{AdminToken: "admin-0123456789abcdef", Tokens: policy.Fixed("tokens", toks)})
	svc := &fakeService{auth: auth}
	h := NewHandler(svc, HandlerOptions{APIToken: "api-0123456789abcdef", Logger: discard})
	for _, c := range []struct {
		bearer string
		status int
		id     string
	}{
		{"api-0123456789abcdef", 200, policy.Anonymous},
		{"admin-0123456789abcdef", 200, policy.Admin},
		{"0123456789abcdef-ops", 200, "ops"},
		{"wrong-0123456789abcdef", 401, ""},
		{"", 401, ""},
	} {
		before := len(svc.asked())
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://127.0.0.1/v1/locks/x", nil)
		if c.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+c.bearer)
		}
		h.ServeHTTP(rec, r)
		if rec.Code != c.status {
			t.Fatalf("bearer %q: %d %s, want %d", c.bearer, rec.Code, rec.Body, c.status)
		}
		reached := len(svc.asked()) > before
		if reached != (c.status == 200) {
			t.Fatalf("bearer %q: reached the service %v, answered %d", c.bearer, reached, rec.Code)
		}
		if reached && svc.lastCaller().ID != c.id {
			t.Fatalf("bearer %q: the service saw %+v, want %s", c.bearer, svc.lastCaller(), c.id)
		}
	}
}

// A certificate that names the admin is refused before the service: the
// request carries a verified client certificate, as a TLS server would
// hand it over.
func TestCertificateNamedAdminNeverReachesTheService(t *testing.T) {
	svc := &fakeService{auth: policy.NewAuthority(policy.AuthorityOptions{CertIdentities: true})}
	h := NewHandler(svc, HandlerOptions{Logger: discard})
	for _, cn := range []string{"admin", "team-a"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "http://127.0.0.1/v1/locks/x", nil)
		r.TLS = certState(cn)
		h.ServeHTTP(rec, r)
		switch {
		case cn == "admin" && (rec.Code != http.StatusForbidden || len(svc.asked()) != 0):
			t.Fatalf("CN=admin: %d %s, the service asked %v; want 403 and nothing asked", rec.Code, rec.Body, svc.asked())
		case cn == "team-a" && (rec.Code != 200 || svc.lastCaller().ID != "team-a" || svc.lastCaller().Via != policy.ViaCertificate):
			t.Fatalf("CN=team-a (the control): %d, the service saw %+v", rec.Code, svc.lastCaller())
		}
	}
}

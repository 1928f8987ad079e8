package sequencer

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// openAPIResponses reads docs/openapi.yaml (through the system Python's
// PyYAML: no YAML library is a dependency of this module) as
// "METHOD path status" -> the error codes documented for it.
func openAPIResponses(t *testing.T) map[string][]string {
	t.Helper()
	path := filepath.Join("..", "docs", "openapi.yaml")
	out, err := exec.Command("python3", "-c", "import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", path).Output()
	if err != nil {
		t.Skipf("cannot read %s with python3 and PyYAML: %v", path, err)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			Responses map[string]struct {
				Codes []string `json:"x-codes"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("%s: openapi %q, want 3.x", path, doc.OpenAPI)
	}
	got := map[string][]string{}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			for status, r := range op.Responses {
				got[fmt.Sprintf("%s %s %s", strings.ToUpper(m), p, status)] = r.Codes
			}
		}
	}
	return got
}

// TestOpenAPIMatchesHandler sends the real handler a request for every
// route, status and error code it can produce here, and checks each answer
// against docs/openapi.yaml; and that every documented response was seen,
// but for those that need a broken ZooKeeper or a bug.
func TestOpenAPIMatchesHandler(t *testing.T) {
	spec := openAPIResponses(t)
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	authed := httpTestServer(t, NewHandler(d.svc.Service, HandlerOptions{APIToken: "s3cret-token-for-tests"}))
	u := d.srv.URL
	const id1, id2 = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"

	seen := map[string]bool{}
	do := func(route, method, url, body string, wantStatus int) map[string]any {
		t.Helper()
		status, resp := httpDo(t, method, url, body)
		var m map[string]any
		json.Unmarshal([]byte(resp), &m)
		if status != wantStatus {
			t.Fatalf("%s %s %s: got %d %s, want %d", method, url, body, status, resp, wantStatus)
		}
		key := fmt.Sprintf("%s %s %d", method, route, status)
		codes, ok := spec[key]
		if !ok {
			t.Errorf("%s is not documented in docs/openapi.yaml (body %s)", key, resp)
		}
		if code, _ := m["code"].(string); code != "" && !slices.Contains(codes, code) {
			t.Errorf("%s: code %q is not documented (documented: %v)", key, code, codes)
		}
		seen[key] = true
		return m
	}
	// A method an operation does not have: 405 with the code the spec's
	// description names, on a documented path.
	wrongMethod := func(route, method, url string) {
		t.Helper()
		status, resp := httpDo(t, method, url, "")
		var m map[string]any
		json.Unmarshal([]byte(resp), &m)
		if status != 405 || m["code"] != CodeMethod {
			t.Errorf("%s %s: got %d %s, want 405 %s", method, url, status, resp, CodeMethod)
		}
		known, other := false, false
		for key := range spec {
			known = known || strings.Contains(key, " "+route+" ")
			other = other || strings.HasPrefix(key, method+" "+route+" ")
		}
		if !known || other {
			t.Errorf("%s %s: want %s documented, without a %s operation", method, route, route, method)
		}
	}
	tok := func(m map[string]any) uint64 { f, _ := m["token"].(float64); return uint64(f) }

	const acq, ren, rel, lock, locks, check = "/v1/locks/{name}/acquire", "/v1/locks/{name}/renew", "/v1/locks/{name}/release", "/v1/locks/{name}", "/v1/locks", "/v1/check"
	a := do(acq, "POST", u+"/v1/locks/api/acquire", `{"owner":"a","lease_id":"`+id1+`"}`, 200)
	do(acq, "POST", u+"/v1/locks/api/acquire", `{"owner":"b"}`, 409)
	do(acq, "POST", u+"/v1/locks/a..b/../acquire", `{"owner":"b"}`, 400)
	do(lock, "GET", u+"/v1/locks/api/nope", "", 200)    // a GET reads the lock "api/nope"
	do(lock, "POST", u+"/v1/locks/api/nope", `{}`, 405) // a POST without an action is one to a status
	do(ren, "POST", u+"/v1/locks/api/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id1, tok(a)), 200)
	do(ren, "POST", u+"/v1/locks/api/renew", `{"lease_id":"x"}`, 400)
	do(lock, "GET", u+"/v1/locks/api", "", 200)
	do(lock, "GET", u+"/v1/locks/a//b", "", 400)
	wrongMethod(lock, "POST", u+"/v1/locks/api")
	do(locks, "GET", u+"/v1/locks", "", 200)
	wrongMethod(locks, "POST", u+"/v1/locks")
	do(check, "POST", u+"/v1/check", fmt.Sprintf(`{"sequencer":"api@%d"}`, tok(a)), 200)
	do(check, "POST", u+"/v1/check", fmt.Sprintf(`{"sequencer":"api@%d"}`, tok(a)+1000), 409)
	do(check, "POST", u+"/v1/check", `{"sequencer":"api"}`, 400)
	wrongMethod(check, "GET", u+"/v1/check")
	const many = "/v1/renew"
	do(many, "POST", u+many, fmt.Sprintf(`{"leases":[{"name":"api","lease_id":%q,"token":%d}]}`, id1, tok(a)), 200)
	do(many, "POST", u+many, `{"leases":[]}`, 400)
	wrongMethod(many, "GET", u+many)
	do(rel, "POST", u+"/v1/locks/api/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id1, tok(a)), 200)
	do(rel, "POST", u+"/v1/locks/api/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id1, tok(a)), 409)
	do(ren, "POST", u+"/v1/locks/api/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id1, tok(a)), 409)
	b := do(acq, "POST", u+"/v1/locks/api/acquire", `{"owner":"b","lease_id":"`+id2+`"}`, 200)
	if m := do(check, "POST", u+"/v1/check", fmt.Sprintf(`{"name":"api","token":%d}`, tok(a)), 409); m["code"] != CodeStaleToken {
		t.Errorf("check of an old token: code %v, want %s", m["code"], CodeStaleToken)
	}
	do(rel, "POST", u+"/v1/locks/api/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id1, tok(a)), 409)
	do(rel, "POST", u+"/v1/locks/api/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id2, tok(b)), 200)
	do(rel, "POST", u+"/v1/locks/api/release", `{"lease_id":"`+id2+`","token":1,"ttl":"1s"}`, 400)
	wrongMethod(acq, "PUT", u+"/v1/locks/api/acquire")
	do("/healthz", "GET", u+"/healthz", "", 200)
	wrongMethod("/healthz", "POST", u+"/healthz")
	do("/readyz", "GET", u+"/readyz", "", 200)
	wrongMethod("/readyz", "POST", u+"/readyz")
	do("/metrics", "GET", u+"/metrics", "", 200)
	for _, r := range []struct{ route, method, path, body string }{
		{acq, "POST", "/v1/locks/api/acquire", `{"owner":"a"}`},
		{ren, "POST", "/v1/locks/api/renew", `{}`},
		{rel, "POST", "/v1/locks/api/release", `{}`},
		{lock, "GET", "/v1/locks/api", ""},
		{locks, "GET", "/v1/locks", ""},
		{check, "POST", "/v1/check", `{}`},
		{"/v1/renew", "POST", "/v1/renew", `{}`},
	} {
		do(r.route, r.method, authed+r.path, r.body, 401)
	}

	// Not produced here: a broken ZooKeeper (503), a bug (500), a signed
	// sequencer that does not verify (403, tested with signing keys), a
	// 404 outside /v1/locks/{name}/{action}.
	unexercised := func(key string) bool {
		return strings.HasSuffix(key, " 503") || strings.HasSuffix(key, " 500") ||
			key == "POST /v1/check 403" || strings.HasSuffix(key, " 404") && key != "POST "+acq+" 404"
	}
	var missing []string
	for key := range spec {
		if !seen[key] && !unexercised(key) {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	for _, key := range missing {
		t.Errorf("docs/openapi.yaml documents %s, which the handler did not answer here", key)
	}

	// Every code the API has is documented somewhere.
	var all []string
	for _, codes := range spec {
		all = append(all, codes...)
	}
	for _, code := range []string{CodeBadRequest, CodeHeld, CodeStaleToken, CodeLost, CodeNotHeld, CodeUnavailable, CodeBadSignature, CodeUnauthorized, CodeNotFound, CodeInternal} { // CodeMethod: wrongMethod
		if !slices.Contains(all, code) {
			t.Errorf("code %q is not documented in docs/openapi.yaml", code)
		}
	}
}

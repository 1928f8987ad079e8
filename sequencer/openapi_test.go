package sequencer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"

	"go.yaml.in/yaml/v3"

	"github.com/seqd/seqd/api"
)

// openAPI is docs/openapi.yaml as the test reads it: "METHOD path status"
// -> the error codes documented for it, and every code documented anywhere
// (the components' responses included).
type openAPI struct {
	responses map[string][]string
	codes     []string
	// bodies is "METHOD path status" -> the schema of its JSON answer,
	// where it names one.
	bodies  map[string]string
	schemas map[string]schema
}

// schema is what a body of a component schema may and must hold.
type schema struct {
	props    map[string]bool
	required []string
}

func readOpenAPI(t *testing.T) openAPI {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type response struct {
		Codes   []string `yaml:"x-codes"`
		Content map[string]struct {
			Schema struct {
				Ref string `yaml:"$ref"`
			} `yaml:"schema"`
		} `yaml:"content"`
	}
	var doc struct {
		OpenAPI    string `yaml:"openapi"`
		Components struct {
			Responses map[string]response `yaml:"responses"`
			Schemas   map[string]struct {
				Properties map[string]any `yaml:"properties"`
				Required   []string       `yaml:"required"`
			} `yaml:"schemas"`
		} `yaml:"components"`
		Paths map[string]map[string]struct {
			Responses map[string]response `yaml:"responses"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("docs/openapi.yaml: openapi %q, want 3.x", doc.OpenAPI)
	}
	spec := openAPI{responses: map[string][]string{}, bodies: map[string]string{}, schemas: map[string]schema{}}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			for status, r := range op.Responses {
				key := fmt.Sprintf("%s %s %s", strings.ToUpper(m), p, status)
				spec.responses[key] = r.Codes
				spec.codes = append(spec.codes, r.Codes...)
				if ref := r.Content["application/json"].Schema.Ref; ref != "" {
					spec.bodies[key] = strings.TrimPrefix(ref, "#/components/schemas/")
				}
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		sc := schema{props: map[string]bool{}, required: s.Required}
		for p := range s.Properties {
			sc.props[p] = true
		}
		spec.schemas[name] = sc
	}
	for _, r := range doc.Components.Responses {
		spec.codes = append(spec.codes, r.Codes...)
	}
	return spec
}

// apiCheck sends requests to the handler and holds each answer against the
// spec.
type apiCheck struct {
	t    *testing.T
	spec openAPI
	seen map[string]bool
	// bearer is the token sent to the servers whose URLs start with a key.
	bearer map[string]string
}

// send sends one request, with the bearer token of its server if any.
func (c *apiCheck) send(method, url, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for base, tok := range c.bearer {
		if strings.HasPrefix(url, base) {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// do sends a request for route and checks that its status is want and is
// documented for route, with its code.
func (c *apiCheck) do(route, method, url, body string, want int) map[string]any {
	c.t.Helper()
	status, resp := c.send(method, url, body)
	var m map[string]any
	json.Unmarshal([]byte(resp), &m)
	if status != want {
		c.t.Fatalf("%s %s %s: got %d %s, want %d", method, url, body, status, resp, want)
	}
	key := fmt.Sprintf("%s %s %d", method, route, status)
	codes, ok := c.spec.responses[key]
	if !ok {
		c.t.Errorf("%s is not documented in docs/openapi.yaml (body %s)", key, resp)
	}
	if code, _ := m["code"].(string); code != "" && !slices.Contains(codes, code) {
		c.t.Errorf("%s: code %q is not documented (documented: %v)", key, code, codes)
	}
	for _, p := range c.spec.bodyProblems(key, m) {
		c.t.Errorf("%s: %s (body %s)", key, p, resp)
	}
	c.seen[key] = true
	return m
}

// bodyProblems holds an answer's JSON object against the schema its route
// documents: every key it holds is a property of the schema, and every
// required property is there. The schemas are written from package api's
// types, so this holds the handler's bodies to the wire types.
func (s openAPI) bodyProblems(key string, m map[string]any) []string {
	name, ok := s.bodies[key]
	if !ok || m == nil {
		return nil
	}
	sc, ok := s.schemas[name]
	if !ok {
		return []string{fmt.Sprintf("its schema %s is not among the components", name)}
	}
	var out []string
	for k := range m {
		if !sc.props[k] {
			out = append(out, fmt.Sprintf("the answer holds %q, which schema %s does not have", k, name))
		}
	}
	for _, k := range sc.required {
		if _, ok := m[k]; !ok {
			out = append(out, fmt.Sprintf("the answer lacks %q, which schema %s requires", k, name))
		}
	}
	sort.Strings(out)
	return out
}

// The control of the body check: a lease with a key the schema lacks and
// without a required one is caught twice.
func TestOpenAPIBodyCheckCatchesDrift(t *testing.T) {
	spec := readOpenAPI(t)
	lease := map[string]any{"name": "x", "sequencer": "x@1", "owner": "o", "ttl": "15s", "expires_at": "2026-01-01T00:00:00Z", "secret": 1}
	got := spec.bodyProblems("POST /v1/locks/{name}/acquire 200", lease)
	want := []string{`the answer holds "secret", which schema Lease does not have`, `the answer lacks "token", which schema Lease requires`}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// wrongMethod checks that method on a documented route that has no such
// operation is 405 with Allow.
func (c *apiCheck) wrongMethod(route, method, url string) {
	c.t.Helper()
	status, resp := httpDo(c.t, method, url, "")
	var m map[string]any
	json.Unmarshal([]byte(resp), &m)
	if status != 405 || m["code"] != api.CodeMethod || w405Allow(c.t, method, url) == "" {
		c.t.Errorf("%s %s: got %d %s, want 405 %s with Allow", method, url, status, resp, api.CodeMethod)
	}
	known, other := false, false
	for key := range c.spec.responses {
		known = known || strings.Contains(key, " "+route+" ")
		other = other || strings.HasPrefix(key, method+" "+route+" ")
	}
	if !known || other {
		c.t.Errorf("%s %s: want %s documented, without a %s operation", method, route, route, method)
	}
}

func tokenOf(m map[string]any) uint64 { f, _ := m["token"].(float64); return uint64(f) }

// TestOpenAPIMatchesHandler sends the real handler a request for every
// route of every family, and every status and error code each can answer,
// and holds each answer against docs/openapi.yaml; then checks that every
// documented response was seen. ZooKeeper's absence (503) comes from a
// daemon whose session is closed; a bad signature (403) from a daemon that
// signs; 401 from a handler that asks for a token.
func TestOpenAPIMatchesHandler(t *testing.T) {
	spec := readOpenAPI(t)
	zkc := sharedZK.Get(t)
	signer, _ := newSigner(t, "k1")
	const adminToken = "admin-token-for-tests-0123456789"
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer, adminToken: adminToken})
	closed := startDaemon(t, daemonOpts{servers: zkc.Servers(), adminToken: adminToken})
	closed.svc.Close(context.Background())
	authed := httpTestServer(t, httpapi.NewHandler(d.svc.Service, httpapi.HandlerOptions{APIToken: "s3cret-token-for-tests"}))
	// Second handlers over the same services, whose requests carry the
	// admin token.
	admin := httpTestServer(t, httpapi.NewHandler(d.svc.Service, httpapi.HandlerOptions{}))
	closedAdmin := httpTestServer(t, httpapi.NewHandler(closed.svc.Service, httpapi.HandlerOptions{}))
	c := &apiCheck{t: t, spec: spec, seen: map[string]bool{}, bearer: map[string]string{admin: adminToken, closedAdmin: adminToken}}
	u := d.srv.URL
	for _, f := range testFamilies {
		grant := fmt.Sprintf("/v1/%s/{name}/%s", f.name, f.grant)
		renew := fmt.Sprintf("/v1/%s/{name}/renew", f.name)
		end := fmt.Sprintf("/v1/%s/{name}/%s", f.name, f.end)
		status := fmt.Sprintf("/v1/%s/{name}", f.name)
		list := "/v1/" + f.name
		at := func(name, action string) string { return u + "/v1/" + f.name + "/" + name + action }
		id1, id2 := api.NewLeaseID(), api.NewLeaseID()
		body := func(owner, id string) string {
			return fmt.Sprintf(`{"owner":%q,"lease_id":%q%s}`, owner, id, f.extra)
		}
		a := c.do(grant, "POST", at("api", "/"+f.grant), body("a", id1), 200)
		other := `{"owner":"b"` + f.extra + `}`
		if f.name == "semaphores" {
			c.do(grant, "POST", at("api", "/"+f.grant), body("a2", api.NewLeaseID()), 200) // the second slot
			c.do(grant, "POST", at("api", "/"+f.grant), `{"owner":"b","limit":9}`, 409)    // limit_mismatch
		}
		c.do(grant, "POST", at("api", "/"+f.grant), other, 409) // held, full, led
		c.do(grant, "POST", at("a..b/..", "/"+f.grant), other, 400)
		lease := func(id string, token uint64) string { return fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id, token) }
		c.do(renew, "POST", at("api", "/renew"), lease(id1, tokenOf(a)), 200)
		c.do(renew, "POST", at("api", "/renew"), `{"lease_id":"x"}`, 400)
		c.do(status, "GET", at("api", ""), "", 200)
		c.do(status, "GET", at("api/nope", ""), "", 200) // a GET reads the name "api/nope"
		c.do(status, "GET", at("a//b", ""), "", 400)
		c.wrongMethod(status, "POST", at("api/nope", "")) // a POST without an action is one to a status
		c.wrongMethod(status, "DELETE", at("api", ""))
		c.do(list, "GET", u+list, "", 200)
		c.do(list, "GET", u+list+"?index=1", "", 400)
		c.wrongMethod(list, "POST", u+list)
		c.wrongMethod(grant, "PUT", at("api", "/"+f.grant))
		if f.name == "elections" {
			proclaim := "/v1/elections/{name}/proclaim"
			c.do(proclaim, "POST", at("api", "/proclaim"), fmt.Sprintf(`{"lease_id":%q,"token":%d,"value":"v2"}`, id1, tokenOf(a)), 200)
			c.do(proclaim, "POST", at("api", "/proclaim"), `{"lease_id":"x"}`, 400)
			c.do(proclaim, "POST", closed.srv.URL+"/v1/elections/api/proclaim", lease(id1, tokenOf(a)), 503)
			c.do(proclaim, "POST", authed+"/v1/elections/api/proclaim", `{}`, 401)
		}
		// A break: 403 without the admin token, then done with it; the
		// broken lease's renew is 409 broken.
		brk := fmt.Sprintf("/v1/%s/{name}/break", f.name)
		c.do(brk, "POST", at("api", "/break"), `{"reason":"test"}`, 403)
		c.do(brk, "POST", admin+"/v1/"+f.name+"/api/break", `{}`, 400)
		c.do(brk, "POST", admin+"/v1/"+f.name+"/nobody/break", `{"reason":"none holds it","token":1}`, 409)
		c.do(brk, "POST", closedAdmin+"/v1/"+f.name+"/api/break", `{"reason":"no zookeeper","token":1}`, 503)
		c.do(brk, "POST", authed+"/v1/"+f.name+"/api/break", `{"reason":"no token"}`, 401)
		victim := c.do(grant, "POST", at("victim", "/"+f.grant), body("v", id2), 200)
		c.do(brk, "POST", admin+"/v1/"+f.name+"/victim/break", fmt.Sprintf(`{"reason":"test","token":%d}`, tokenOf(victim)), 200)
		if m := c.do(renew, "POST", at("victim", "/renew"), lease(id2, tokenOf(victim)), 409); m["code"] != api.CodeBroken {
			t.Errorf("renew of a broken %s lease: code %v, want %s", f.name, m["code"], api.CodeBroken)
		}
		c.do(list, "GET", u+list+"?all=1", "", 200)
		c.do(list, "GET", u+list+"?all=2", "", 400)
		c.do(end, "POST", at("api", "/"+f.end), lease(id1, tokenOf(a)), 200)
		if f.name == "elections" {
			c.do("/v1/elections/{name}/proclaim", "POST", at("api", "/proclaim"), fmt.Sprintf(`{"lease_id":%q,"token":%d,"value":"v3"}`, id1, tokenOf(a)), 409)
		}
		c.do(end, "POST", at("api", "/"+f.end), lease(id1, tokenOf(a)), 409)
		c.do(renew, "POST", at("api", "/renew"), lease(id1, tokenOf(a)), 409)
		c.do(end, "POST", at("api", "/"+f.end), fmt.Sprintf(`{"lease_id":%q,"token":1,"ttl":"1s"}`, id2), 400)
		// ZooKeeper out of reach, and a token missing: every route that needs
		// either answers so.
		for route, path := range map[string]string{grant: "/api/" + f.grant, renew: "/api/renew", end: "/api/" + f.end, status: "/api"} {
			body := lease(id1, tokenOf(a))
			if route == grant {
				body = other
			}
			if route == status {
				c.do(route, "GET", closed.srv.URL+"/v1/"+f.name+path, "", 503)
				c.do(route, "GET", authed+"/v1/"+f.name+path, "", 401)
				continue
			}
			c.do(route, "POST", closed.srv.URL+"/v1/"+f.name+path, body, 503)
			c.do(route, "POST", authed+"/v1/"+f.name+path, body, 401)
		}
		c.do(list, "GET", authed+list, "", 401)
	}
	// Multi-locks: a family whose actions name no lock in the path.
	{
		const acq, ren, rel, st, list = "/v1/multilocks/acquire", "/v1/multilocks/renew", "/v1/multilocks/release", "/v1/multilocks/{lease_id}", "/v1/multilocks"
		id := api.NewLeaseID()
		m := c.do(acq, "POST", u+acq, fmt.Sprintf(`{"names":["m/a","m/b"],"owner":"a","lease_id":%q}`, id), 200)
		c.do(acq, "POST", u+acq, `{"names":["m/b","m/c"],"owner":"b"}`, 409)
		c.do(acq, "POST", u+acq, `{"names":["m/a","m/a"],"owner":"b"}`, 400)
		c.do(acq, "POST", closed.srv.URL+acq, `{"names":["m/x"],"owner":"b"}`, 503)
		c.do(acq, "POST", authed+acq, `{}`, 401)
		locks, _ := m["locks"].([]any)
		var refs []string
		for _, l := range locks {
			lm, _ := l.(map[string]any)
			refs = append(refs, fmt.Sprintf(`{"name":%q,"token":%d}`, lm["name"], tokenOf(lm)))
		}
		body := fmt.Sprintf(`{"lease_id":%q,"locks":[%s]}`, id, strings.Join(refs, ","))
		c.do(ren, "POST", u+ren, body, 200)
		c.do(ren, "POST", u+ren, `{"lease_id":"x","locks":[]}`, 400)
		c.do(ren, "POST", closed.srv.URL+ren, body, 503)
		c.do(ren, "POST", authed+ren, body, 401)
		c.do(st, "GET", u+"/v1/multilocks/"+id, "", 200)
		c.do(st, "GET", u+"/v1/multilocks/"+id+"?bogus=1", "", 400)
		c.do(st, "GET", authed+"/v1/multilocks/"+id, "", 401)
		c.do(list, "GET", u+list, "", 200)
		c.do(list, "GET", u+list+"?index=1", "", 400)
		c.do(list, "GET", authed+list, "", 401)
		c.wrongMethod(list, "POST", u+list)
		c.do(rel, "POST", u+rel, body, 200)
		c.do(rel, "POST", u+rel, body, 409)
		c.do(ren, "POST", u+ren, body, 409)
		c.do(st, "GET", u+"/v1/multilocks/"+id, "", 409)
		c.do(rel, "POST", u+rel, `{}`, 400)
		c.do(rel, "POST", closed.srv.URL+rel, body, 503)
		c.do(rel, "POST", authed+rel, body, 401)
	}
	const check, many = "/v1/check", "/v1/renew"
	l := c.do("/v1/locks/{name}/acquire", "POST", u+"/v1/locks/chk/acquire", `{"owner":"a"}`, 200)
	seq, _ := l["sequencer"].(string)
	c.do(check, "POST", u+check, fmt.Sprintf(`{"sequencer":%q}`, seq), 200)
	c.do(check, "POST", u+check, fmt.Sprintf(`{"name":"chk","token":%d}`, tokenOf(l)+1000), 409)
	c.do(check, "POST", u+check, `{"sequencer":"chk"}`, 400)
	c.do(check, "POST", u+check, fmt.Sprintf(`{"sequencer":%q}`, seq[:strings.LastIndexByte(seq, '.')+1]+strings.Repeat("A", 86)), 403)
	c.do(check, "POST", closed.srv.URL+check, fmt.Sprintf(`{"name":"chk","token":%d}`, tokenOf(l)), 503)
	c.do(check, "POST", authed+check, `{}`, 401)
	c.wrongMethod(check, "GET", u+check)
	lid, _ := l["lease_id"].(string)
	c.do(many, "POST", u+many, fmt.Sprintf(`{"leases":[{"name":"chk","lease_id":%q,"token":%d}]}`, lid, tokenOf(l)), 200)
	c.do(many, "POST", u+many, `{"leases":[]}`, 400)
	c.do(many, "POST", authed+many, `{}`, 401)
	c.wrongMethod(many, "GET", u+many)
	c.do("/healthz", "GET", u+"/healthz", "", 200)
	c.wrongMethod("/healthz", "POST", u+"/healthz")
	c.do("/readyz", "GET", u+"/readyz", "", 200)
	c.do("/readyz", "GET", closed.srv.URL+"/readyz", "", 503)
	c.wrongMethod("/readyz", "POST", u+"/readyz")
	c.do("/metrics", "GET", u+"/metrics", "", 200)
	c.do("/ui/", "GET", u+"/ui/", "", 200)
	policyAnswers(c, d)

	var missing []string
	for key := range spec.responses {
		if !c.seen[key] {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	for _, key := range missing {
		t.Errorf("docs/openapi.yaml documents %s, which the handler did not answer here", key)
	}
	// Every code the API has is documented.
	for _, code := range []string{api.CodeBadRequest, api.CodeHeld, api.CodeLimitMismatch, api.CodeStaleToken, api.CodeLost, api.CodeNotHeld, api.CodeBroken, api.CodeForbidden,
		api.CodeUnavailable, api.CodeBadSignature, api.CodeUnauthorized, api.CodeNotFound, api.CodeMethod, api.CodeInternal, api.CodeQuotaExceeded} {
		if !slices.Contains(spec.codes, code) {
			t.Errorf("code %q is not documented in docs/openapi.yaml", code)
		}
	}
	if status, resp := httpDo(t, "GET", u+"/v1/nowhere", ""); status != 404 || !strings.Contains(resp, api.CodeNotFound) {
		t.Errorf("GET /v1/nowhere: %d %s, want 404 not_found", status, resp)
	}
}

// policyAnswers sends the routes a policy judges their 403 and 429, from
// a daemon with a policy file: anonymous may take ok/* within a minute.
func policyAnswers(c *apiCheck, _ *daemon) {
	t := c.t
	p, err := policy.ParsePolicy("policy", []byte("allow anonymous * ok/* *\nquota anonymous max_ttl=1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	pd := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers(), root: "/seqd-test/openapi-policy",
		authority: policy.NewAuthority(policy.AuthorityOptions{Policy: policy.Fixed("policy", p)})})
	u := pd.srv.URL
	for _, f := range testFamilies {
		grant := fmt.Sprintf("/v1/%s/{name}/%s", f.name, f.grant)
		renew := fmt.Sprintf("/v1/%s/{name}/renew", f.name)
		at := func(name, action string) string { return u + "/v1/" + f.name + "/" + name + action }
		c.do(grant, "POST", at("no", "/"+f.grant), `{"owner":"o"`+f.extra+`}`, 403)
		c.do(grant, "POST", at("ok/x", "/"+f.grant), `{"owner":"o","ttl":"5m"`+f.extra+`}`, 429)
		l := c.do(grant, "POST", at("ok/x", "/"+f.grant), `{"owner":"o"`+f.extra+`}`, 200)
		c.do(renew, "POST", at("ok/x", "/renew"), fmt.Sprintf(`{"lease_id":%q,"token":%d,"ttl":"5m"}`, l["lease_id"], tokenOf(l)), 429)
		c.do(fmt.Sprintf("/v1/%s/{name}/%s", f.name, f.end), "POST", at("ok/x", "/"+f.end), fmt.Sprintf(`{"lease_id":%q,"token":%d}`, l["lease_id"], tokenOf(l)), 200)
		c.do(fmt.Sprintf("/v1/%s/{name}", f.name), "GET", at("no", ""), "", 403)
	}
	const acq, ren = "/v1/multilocks/acquire", "/v1/multilocks/renew"
	c.do(acq, "POST", u+acq, `{"names":["ok/m","no"],"owner":"o"}`, 403)
	c.do(acq, "POST", u+acq, `{"names":["ok/m"],"owner":"o","ttl":"5m"}`, 429)
	ml := c.do(acq, "POST", u+acq, `{"names":["ok/m"],"owner":"o"}`, 200)
	c.do(ren, "POST", u+ren, fmt.Sprintf(`{"lease_id":%q,"locks":[{"name":"ok/m","token":%d}],"ttl":"5m"}`, ml["lease_id"], tokenOf(ml["locks"].([]any)[0].(map[string]any))), 429)
}

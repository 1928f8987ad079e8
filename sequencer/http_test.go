package sequencer_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer/httpapi"

	"github.com/seqd/seqd/client"
)

var update = flag.Bool("update", false, "rewrite golden files")

// A bad-input table: each request is a 400 (405 for a wrong method) with a
// sentence, and nothing changes.
func TestBadInput(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 60*time.Second)
	held, err := d.client.Acquire(ctx, "held", "A", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	u := d.srv.URL
	big := `{"owner":"` + strings.Repeat("x", 1<<20) + `"}`
	renew := u + "/v1/locks/held/renew"
	lease := func(extra string) string {
		return fmt.Sprintf(`{"lease_id":%q,"token":%d%s}`, held.LeaseID, held.Token, extra)
	}
	for _, tc := range []struct {
		name, method, url, body string
		status                  int
		want                    string // in the error sentence
	}{
		{"dotdot", "POST", u + "/v1/locks/a/../b/acquire", `{"owner":"B"}`, 400, `".." segment`},
		{"leading dotdot", "POST", u + "/v1/locks/../x/acquire", `{"owner":"B"}`, 400, `".." segment`},
		{"dot segment", "POST", u + "/v1/locks/a/./b/acquire", `{"owner":"B"}`, 400, `"." segment`},
		{"empty segment", "POST", u + "/v1/locks/a//b/acquire", `{"owner":"B"}`, 400, "empty path segment"},
		{"300 bytes", "POST", u + "/v1/locks/" + strings.Repeat("n", 300) + "/acquire", `{"owner":"B"}`, 400, "the name is 300 bytes, longer than 256"},
		{"space", "POST", u + "/v1/locks/sp%20ace/acquire", `{"owner":"B"}`, 400, "has the character ' '"},
		{"non-ASCII", "POST", u + "/v1/locks/%C3%BCber/acquire", `{"owner":"B"}`, 400, "has the character"},
		{"status of a bad name", "GET", u + "/v1/locks/a%20b", "", 400, "has the character ' '"},
		{"ttl too short", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","ttl":"500ms"}`, 400, "ttl 500ms is out of range"},
		{"ttl too long", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","ttl":"2h"}`, 400, "ttl 2h0m0s is out of range"},
		{"ttl not a duration", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","ttl":"soon"}`, 400, "is not a duration"},
		{"ttl a number", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","ttl":15}`, 400, "duration must be a string"},
		{"wait too long", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","wait":"11m"}`, 400, "wait 11m0s is out of range"},
		{"negative wait", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","wait":"-1s"}`, 400, "wait -1s is out of range"},
		{"renew ttl out of range", "POST", renew, lease(`,"ttl":"3h"`), 400, "ttl 3h0m0s is out of range"},
		{"missing owner", "POST", u + "/v1/locks/x/acquire", `{}`, 400, "owner is required"},
		{"malformed JSON", "POST", u + "/v1/locks/x/acquire", `{"owner":`, 400, "malformed JSON"},
		{"JSON garbage", "POST", u + "/v1/locks/x/acquire", `owner=B`, 400, "malformed JSON"},
		{"invalid UTF-8 in a value", "POST", u + "/v1/locks/x/acquire", "{\"owner\":\"B\xff\"}", 400, "not valid UTF-8"},
		{"invalid UTF-8 in a key", "POST", u + "/v1/locks/x/acquire", "{\"owner\":\"B\",\"\xc3\":1}", 400, "not valid UTF-8"},
		{"a lone surrogate byte sequence", "POST", u + "/v1/locks/x/acquire", "{\"owner\":\"\xed\xa0\x80\"}", 400, "not valid UTF-8"},
		{"invalid UTF-8 in a batch", "POST", u + "/v1/renew", "{\"leases\":[{\"name\":\"held\xfe\",\"lease_id\":\"" + held.LeaseID + "\",\"token\":1}]}", 400, "not valid UTF-8"},
		{"trailing data", "POST", u + "/v1/locks/x/acquire", `{"owner":"B"} {}`, 400, "data after the JSON object"},
		{"unknown field", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","ttl":"5s","colour":"red"}`, 400, `unknown field "colour"`},
		{"duplicate key", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","owner":"A"}`, 400, `the key "owner" appears twice`},
		{"key in another case", "POST", u + "/v1/locks/x/acquire", `{"OWNER":"A"}`, 400, `the key "OWNER" must be spelt "owner"`},
		{"duplicate token", "POST", renew, lease(fmt.Sprintf(`,"token":%d`, held.Token)), 400, `the key "token" appears twice`},
		{"lease_id not hex", "POST", u + "/v1/locks/x/acquire", `{"owner":"B","lease_id":"zz"}`, 400, "must be 32 lowercase hex digits"},
		{"1 MiB body", "POST", u + "/v1/locks/x/acquire", big, 400, "larger than 64 KiB"},
		{"missing lease_id", "POST", renew, fmt.Sprintf(`{"token":%d}`, held.Token), 400, "lease_id is required"},
		{"missing token", "POST", renew, fmt.Sprintf(`{"lease_id":%q}`, held.LeaseID), 400, "token is required"},
		{"token as a string", "POST", renew, fmt.Sprintf(`{"lease_id":%q,"token":"%d"}`, held.LeaseID, held.Token), 400, `field "token" must be a positive integer, not a JSON string`},
		{"negative token", "POST", renew, fmt.Sprintf(`{"lease_id":%q,"token":-1}`, held.LeaseID), 400, `field "token" must be a positive integer`},
		{"token never issued", "POST", renew, fmt.Sprintf(`{"lease_id":%q,"token":%d}`, held.LeaseID, held.Token+1000), 400, "was never issued"},
		{"release with ttl", "POST", u + "/v1/locks/held/release", lease(`,"ttl":"5s"`), 400, "release takes no ttl"},
		{"lease of another lock", "POST", u + "/v1/locks/other/release", lease(""), 400, `is for lock "held"`},
		{"check both forms", "POST", u + "/v1/check", fmt.Sprintf(`{"sequencer":"held@%d","name":"held","token":%d}`, held.Token, held.Token), 400, "not both"},
		{"check bad sequencer", "POST", u + "/v1/check", `{"sequencer":"held@x"}`, 400, "invalid sequencer"},
		{"check nothing", "POST", u + "/v1/check", `{}`, 400, `send {"sequencer"`},
		{"check token zero", "POST", u + "/v1/check", `{"name":"held"}`, 400, "token is required"},
		{"wrong method on an action", "PUT", u + "/v1/locks/held/acquire", `{"owner":"B"}`, 405, "method PUT is not allowed"},
		{"wrong method on check", "GET", u + "/v1/check", "", 405, "method GET is not allowed"},
		{"wrong method on list", "DELETE", u + "/v1/locks", "", 405, "method DELETE is not allowed"},
		{"unknown action", "POST", u + "/v1/locks/held/steal", lease(""), 405, `POST needs an action`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := httpDo(t, tc.method, tc.url, tc.body)
			var eb ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("body %q is not an error object: %v", body, err)
			}
			if status != tc.status || !strings.Contains(eb.Error, tc.want) || eb.Code == "" {
				t.Fatalf("got %d %q, want %d with a sentence containing %q", status, body, tc.status, tc.want)
			}
			if status == 400 && eb.Code != CodeBadRequest {
				t.Fatalf("code %q, want bad_request", eb.Code)
			}
		})
	}
	// Nothing changed: the one lease, the one contender, no other lock node,
	// no grant, renewal or release counted beyond the first grant.
	ls := d.svc.Leases()
	if len(ls) != 1 || ls[0].Name != held.Name || ls[0].Token != held.Token || !ls[0].ExpiresAt.Equal(held.ExpiresAt) {
		t.Fatalf("leases after bad input = %+v, want only %+v unchanged", ls, held)
	}
	if ch := zkChildren(t, zkc.Servers(), d.svc.Config().Root); len(ch) != 1 || ch[0] != "held" {
		t.Fatalf("lock nodes after bad input = %v, want [held]", ch)
	}
	if ch := zkChildren(t, zkc.Servers(), d.svc.Config().Root+"/held"); len(ch) != 1 {
		t.Fatalf("contenders of held = %v, want 1", ch)
	}
	for _, m := range []string{"seqd_renewals_total", "seqd_releases_total", "seqd_stale_tokens_rejected_total"} {
		if got := counter(t, d.reg, m, nil); got != 0 {
			t.Errorf("%s = %v after bad input, want 0", m, got)
		}
	}
	if got := counter(t, d.reg, "seqd_grants_total", nil); got != 1 {
		t.Errorf("grants = %v, want 1", got)
	}
}

func TestAuthAndProbes(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	srv := httpTestServer(t, httpapi.NewHandler(d.svc.Service, httpapi.HandlerOptions{APIToken: "s3cret"}))
	if st, body := httpDo(t, "GET", srv+"/v1/locks", ""); st != 401 || !strings.Contains(body, "bearer token") {
		t.Fatalf("no token: %d %s, want 401", st, body)
	}
	req, _ := http.NewRequest("GET", srv+"/v1/locks", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("wrong token: %v %v, want 401", resp, err)
	}
	c := tokenClient(t, srv, "s3cret")
	if _, err := c.Leases(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("right token: %v", err)
	}
	// Probes need no token.
	if st, _ := httpDo(t, "GET", srv+"/healthz", ""); st != 200 {
		t.Fatalf("healthz = %d", st)
	}
	if st, _ := httpDo(t, "GET", srv+"/readyz", ""); st != 200 {
		t.Fatalf("readyz = %d", st)
	}
	d.svc.Close(ctxT(t, 10*time.Second))
	if st, body := httpDo(t, "GET", srv+"/readyz", ""); st != 503 || !strings.Contains(body, "unavailable") {
		t.Fatalf("readyz after the session closed = %d %s, want 503 unavailable", st, body)
	}
	if st, _ := httpDo(t, "GET", srv+"/healthz", ""); st != 200 {
		t.Fatalf("healthz after the session closed = %d, want 200", st)
	}
	if _, err := c.Acquire(ctxT(t, 10*time.Second), "x", "A", 0, 0); !isStatus(err, 503) {
		t.Fatalf("acquire without a session = %v, want 503", err)
	}
}

// Golden files for the JSON responses: a scripted session whose responses,
// with lease ids, times and tokens replaced by names, must match
// testdata/api.golden (go test -run Golden -update rewrites it).
func TestGoldenResponses(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	u := d.srv.URL
	var out bytes.Buffer
	names := map[string]string{}
	step := func(method, path, body string) string {
		status, resp := httpDo(t, method, u+path, body)
		fmt.Fprintf(&out, "%s %s %s\n%d %s\n", method, path, body, status, normalize(resp, names))
		return resp
	}
	var a, b Lease
	json.Unmarshal([]byte(step("POST", "/v1/locks/golden/acquire", `{"owner":"A","ttl":"10s"}`)), &a)
	names[strconv.FormatUint(a.Token, 10)] = "TOKEN_A"
	names[a.LeaseID] = "LEASE_A"
	step("POST", "/v1/locks/golden/acquire", `{"owner":"B"}`)
	step("POST", "/v1/locks/golden/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d,"ttl":"20s"}`, a.LeaseID, a.Token))
	step("GET", "/v1/locks/golden", "")
	step("GET", "/v1/locks", "")
	step("POST", "/v1/check", fmt.Sprintf(`{"sequencer":"golden@%d"}`, a.Token))
	step("POST", "/v1/locks/golden/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, a.LeaseID, a.Token))
	json.Unmarshal([]byte(step("POST", "/v1/locks/golden/acquire", `{"owner":"B","ttl":"5s"}`)), &b)
	names[strconv.FormatUint(b.Token, 10)] = "TOKEN_B"
	names[b.LeaseID] = "LEASE_B"
	step("POST", "/v1/locks/golden/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, a.LeaseID, a.Token))
	step("POST", "/v1/locks/golden/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, a.LeaseID, a.Token))
	step("POST", "/v1/check", fmt.Sprintf(`{"name":"golden","token":%d}`, a.Token))
	step("POST", "/v1/locks/golden/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, b.LeaseID, b.Token))
	step("POST", "/v1/locks/golden/release", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, b.LeaseID, b.Token))
	step("GET", "/v1/locks/golden", "")
	var e Lease
	json.Unmarshal([]byte(step("POST", "/v1/elections/golden/campaign", `{"owner":"E","value":"10.0.0.5:80","ttl":"10s"}`)), &e)
	names[strconv.FormatUint(e.Token, 10)] = "TERM_E"
	names[e.LeaseID] = "LEASE_E"
	step("POST", "/v1/elections/golden/campaign", `{"owner":"F"}`)
	step("POST", "/v1/elections/golden/proclaim", fmt.Sprintf(`{"lease_id":%q,"token":%d,"value":"10.0.0.5:81"}`, e.LeaseID, e.Token))
	step("GET", "/v1/elections/golden", "")
	step("POST", "/v1/elections/golden/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, e.LeaseID, e.Token))
	step("POST", "/v1/elections/golden/resign", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, e.LeaseID, e.Token))
	step("GET", "/v1/elections/golden", "")
	step("GET", "/healthz", "")
	step("GET", "/readyz", "")

	got := normalize(out.String(), names)
	path := filepath.Join("testdata", "api.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("responses differ from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var (
	timeRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)
	hexRE  = regexp.MustCompile(`[0-9a-f]{32}`)
	// Tokens where the API puts them: JSON fields, sequencers, sentences.
	numRE = regexp.MustCompile(`("token":|"term":|"current_token":|@|token |token is |term )(\d+)`)
)

// normalize replaces what changes from run to run with stable names: the
// known lease ids and tokens by their names, times by TIME.
var (
	indexRE  = regexp.MustCompile(`"index":\d+`)
	nodeRE   = regexp.MustCompile(`_c_[0-9a-f-]{36}-lock-\d{10}`)
	daemonRE = regexp.MustCompile(`"daemon":"[^"]*"`)
)

func normalize(s string, names map[string]string) string {
	s = timeRE.ReplaceAllString(s, `"TIME"`)
	s = indexRE.ReplaceAllString(s, `"index":INDEX`)
	s = nodeRE.ReplaceAllString(s, `NODE`)
	s = daemonRE.ReplaceAllString(s, `"daemon":"DAEMON"`)
	s = hexRE.ReplaceAllStringFunc(s, func(h string) string {
		if n, ok := names[h]; ok {
			return n
		}
		return h
	})
	s = numRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := numRE.FindStringSubmatch(m)
		if v, ok := names[sub[2]]; ok {
			return sub[1] + v
		}
		return m
	})
	return s
}

func tokenClient(t testing.TB, addr, token string) *tclient {
	c, err := client.New(addr, client.WithoutEnv(), client.WithAPIToken(token))
	if err != nil {
		t.Fatal(err)
	}
	return &tclient{c}
}

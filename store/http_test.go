package store

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/metrics"
)

func newServer(t *testing.T, mode FenceMode) (*httptest.Server, *Store, *prometheus.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	sm := metrics.NewStore(reg)
	s := mustOpen(t, Options{Dir: t.TempDir(), Fence: mode, StoreMetrics: sm})
	srv := httptest.NewServer(NewHandler(s, reg, sm, nil))
	t.Cleanup(srv.Close)
	return srv, s, reg
}

type response struct {
	status int
	header http.Header
	body   string
	err    errorBody
}

func do(t *testing.T, srv *httptest.Server, method, key, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/v1/kv/"+key, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &r.err); err != nil {
			t.Fatalf("%s %s: status %d with a body that is not a JSON error: %q", method, key, resp.StatusCode, b)
		}
	}
	return r
}

func tok(n int) []string { return []string{HeaderToken, strconv.Itoa(n)} }

// TestHTTPPausedHolderIsFenced is TestPausedHolderIsFenced through the HTTP API.
func TestHTTPPausedHolderIsFenced(t *testing.T) {
	srv, _, _ := newServer(t, FenceFull)
	if r := do(t, srv, "PUT", "file", "B", tok(2)...); r.status != 200 || r.body != `{"key":"file","token":2}`+"\n" {
		t.Fatalf("PUT with token 2: %d %q", r.status, r.body)
	}
	r := do(t, srv, "PUT", "file", "A", tok(1)...)
	if r.status != 409 || r.err.Code != "stale_token" || r.err.CurrentToken == nil || *r.err.CurrentToken != 2 || r.err.Error == "" {
		t.Fatalf("PUT with token 1 after 2: %d %q, want 409 stale_token current_token 2", r.status, r.body)
	}
	r = do(t, srv, "GET", "file", "")
	if r.status != 200 || r.body != "B" || r.header.Get(HeaderToken) != "2" || r.header.Get(HeaderMax) != "2" {
		t.Fatalf("GET: %d %q %v, want B with token 2", r.status, r.body, r.header)
	}
	for i := 0; i < 2; i++ {
		if r := do(t, srv, "PUT", "file", "same", HeaderSequencer, "jobs/x@3"); r.status != 200 {
			t.Fatalf("PUT #%d with the equal sequencer jobs/x@3: %d %q", i+1, r.status, r.body)
		}
	}

	off, _, _ := newServer(t, FenceOff)
	do(t, off, "PUT", "file", "B", tok(2)...)
	if r := do(t, off, "PUT", "file", "A", tok(1)...); r.status != 200 {
		t.Fatalf("unfenced PUT: %d %q", r.status, r.body)
	}
	if r := do(t, off, "GET", "file", ""); r.body != "A" {
		t.Fatalf("unfenced store holds %q; the negative control expects B's write lost to A", r.body)
	}
	if r := do(t, off, "PUT", "plain", "no token"); r.status != 200 {
		t.Errorf("PUT without a token on an unfenced store: %d %q", r.status, r.body)
	}
}

func TestHTTPReadModifyWriteRace(t *testing.T) {
	for _, tc := range []struct {
		mode FenceMode
		want int
	}{{FenceFull, 409}, {FenceWrites, 200}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			srv, _, _ := newServer(t, tc.mode)
			do(t, srv, "PUT", "counter", "10", tok(32)...)
			do(t, srv, "GET", "counter", "", tok(33)...)
			do(t, srv, "GET", "counter", "", tok(34)...)
			if r := do(t, srv, "PUT", "counter", "11", tok(33)...); r.status != tc.want {
				t.Errorf("old holder's PUT with 33 after a GET with 34: %d %q, want %d", r.status, r.body, tc.want)
			}
		})
	}
}

func TestHTTPDelete(t *testing.T) {
	srv, _, _ := newServer(t, FenceFull)
	do(t, srv, "PUT", "k", "v", tok(4)...)
	if r := do(t, srv, "DELETE", "k", "", tok(5)...); r.status != 200 || !strings.Contains(r.body, `"deleted":true`) {
		t.Fatalf("DELETE: %d %q", r.status, r.body)
	}
	r := do(t, srv, "GET", "k", "")
	if r.status != 404 || r.err.Code != "not_found" || r.err.CurrentToken == nil || *r.err.CurrentToken != 5 {
		t.Errorf("GET after DELETE: %d %q, want 404 not_found with current_token 5", r.status, r.body)
	}
	if r := do(t, srv, "PUT", "k", "zombie", tok(4)...); r.status != 409 {
		t.Errorf("PUT with 4 after a DELETE with 5: %d %q, want 409", r.status, r.body)
	}
}

// TestHTTPBadInput: every malformed request is refused with a sentence and
// changes nothing (the value, its token and the max stay).
func TestHTTPBadInput(t *testing.T) {
	big := strings.Repeat("x", MaxValueBytes+1)
	for _, tc := range []struct {
		name    string
		method  string
		key     string
		body    string
		headers []string
		status  int
	}{
		{"no token on a fenced PUT", "PUT", "k", "v", nil, 400},
		{"no token on a fenced DELETE", "DELETE", "k", "", nil, 400},
		{"token 0", "PUT", "k", "v", tok(0), 400},
		{"negative token", "PUT", "k", "v", []string{HeaderToken, "-5"}, 400},
		{"plus sign", "PUT", "k", "v", []string{HeaderToken, "+9"}, 400},
		{"string token", "PUT", "k", "v", []string{HeaderToken, "nine"}, 400},
		{"hex token", "PUT", "k", "v", []string{HeaderToken, "0x10"}, 400},
		{"empty token", "PUT", "k", "v", []string{HeaderToken, ""}, 400},
		{"overflowing token", "PUT", "k", "v", []string{HeaderToken, "18446744073709551616"}, 400},
		{"two token headers", "PUT", "k", "v", []string{HeaderToken, "9", HeaderToken, "10"}, 400},
		{"token list", "PUT", "k", "v", []string{HeaderToken, "9, 10"}, 400},
		{"malformed sequencer", "PUT", "k", "v", []string{HeaderSequencer, "jobs/x"}, 400},
		{"sequencer with a bad name", "PUT", "k", "v", []string{HeaderSequencer, "/abs@9"}, 400},
		{"sequencer with token 0", "PUT", "k", "v", []string{HeaderSequencer, "x@0"}, 400},
		{"headers disagree", "PUT", "k", "v", []string{HeaderToken, "9", HeaderSequencer, "x@10"}, 400},
		{"malformed token on a GET", "GET", "k", "", []string{HeaderToken, "abc"}, 400},
		{"bad key character", "PUT", "a%20b", "v", tok(9), 400},
		{"dot-dot key", "PUT", "a/../k", "v", tok(9), 400},
		{"empty segment", "PUT", "a//k", "v", tok(9), 400},
		{"empty key", "PUT", "", "v", tok(9), 400},
		{"key too long", "PUT", strings.Repeat("k", MaxKeyBytes+1), "v", tok(9), 400},
		{"oversized value", "PUT", "k", big, tok(9), 400},
		{"POST", "POST", "k", "v", tok(9), 405},
		{"PATCH", "PATCH", "k", "v", tok(9), 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, s, _ := newServer(t, FenceFull)
			do(t, srv, "PUT", "k", "original", tok(5)...)
			r := do(t, srv, tc.method, tc.key, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Errorf("got status %d %q, want %d", r.status, r.body, tc.status)
			}
			wantCode := map[int]string{400: "bad_request", 405: "method_not_allowed"}[tc.status]
			if r.err.Code != wantCode || len(r.err.Error) < 20 || !strings.HasPrefix(r.err.Error, "s") {
				t.Errorf("got error %+v, want code %q and a sentence", r.err, wantCode)
			}
			wantValue(t, s, "k", "original", 5)
			if got := s.Max("k"); got != 5 {
				t.Errorf("max moved to %d, want 5", got)
			}
		})
	}
}

func TestHTTPOtherPaths(t *testing.T) {
	srv, _, _ := newServer(t, FenceFull)
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200, "/nope": 404, "/v1/kv": 404} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// TestHealthSaysWhenTheStoreStopped: after a failed log write the store
// answers every request with an error, and /healthz says so with 503 and
// the reason instead of "ok"; the stopped gauge is set for an alert.
func TestHealthSaysWhenTheStoreStopped(t *testing.T) {
	srv, s, reg := newServer(t, FenceFull)
	health := func() (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := health(); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz of a serving store = %d %q, want 200 ok", code, body)
	}
	s.flushIOHook = func() { s.f.Close() } // the next write fails, as on a full disk
	if r := do(t, srv, http.MethodPut, "k", "v", tok(1)...); r.status != http.StatusInternalServerError && r.status != http.StatusServiceUnavailable {
		t.Fatalf("PUT with a failing log = %d, want 500 or 503", r.status)
	}
	code, body := health()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "writing the log") {
		t.Errorf("healthz after a failed write = %d %q, want 503 with the reason", code, body)
	}
	want := `# HELP seqd_store_stopped 1 once a write, fsync or compaction of the log failed (a full disk, an I/O error) and the store stopped serving until a restart.
# TYPE seqd_store_stopped gauge
seqd_store_stopped 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "seqd_store_stopped"); err != nil {
		t.Error(err)
	}
}

func TestHTTPMetrics(t *testing.T) {
	srv, _, reg := newServer(t, FenceFull)
	do(t, srv, "PUT", "k", "v", tok(2)...)
	do(t, srv, "PUT", "k", "v", tok(1)...)
	do(t, srv, "GET", "k", "", tok(1)...)
	do(t, srv, "GET", "k", "")
	do(t, srv, "PUT", "k", "v")
	const want = `
# HELP seqd_stale_tokens_rejected_total Operations refused because they carried a token below the current one.
# TYPE seqd_stale_tokens_rejected_total counter
seqd_stale_tokens_rejected_total{lock="k",source="fence"} 2
# HELP seqd_store_operations_total Store requests by operation (get, put, delete) and result (ok, stale_token, bad_request, not_found, error, unavailable, forbidden).
# TYPE seqd_store_operations_total counter
seqd_store_operations_total{op="get",result="ok"} 1
seqd_store_operations_total{op="get",result="stale_token"} 1
seqd_store_operations_total{op="put",result="bad_request"} 1
seqd_store_operations_total{op="put",result="ok"} 1
seqd_store_operations_total{op="put",result="stale_token"} 1
# HELP seqd_store_records_total Records appended to the log, one per acknowledged change of data or of a key's max token.
# TYPE seqd_store_records_total counter
seqd_store_records_total 1
# HELP seqd_store_keys Keys with a value (deleted keys, whose max token is kept, are not counted).
# TYPE seqd_store_keys gauge
seqd_store_keys 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"seqd_stale_tokens_rejected_total", "seqd_store_operations_total", "seqd_store_records_total", "seqd_store_keys"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

var headerTests = []struct {
	token, seq string
	want       uint64
	ok         bool
}{
	{"", "", 0, true},
	{"5", "", 5, true},
	{"", "a/b@6", 6, true},
	{"7", "x@7", 7, true},
	{"7", "x@8", 0, false},
	{"0", "", 0, false},
	{"-1", "", 0, false},
	{"+1", "", 0, false},
	{"01", "", 0, false},
	{" 1", "", 0, false},
	{"1x", "", 0, false},
	{"18446744073709551615", "", 18446744073709551615, true},
	{"18446744073709551616", "", 0, false},
	{"", "x@", 0, false},
	{"", "@1", 0, false},
	{"", "x@@1", 0, false},
}

func TestParseFencingHeaders(t *testing.T) {
	for _, tc := range headerTests {
		h := http.Header{}
		if tc.token != "" {
			h.Set(HeaderToken, tc.token)
		}
		if tc.seq != "" {
			h.Set(HeaderSequencer, tc.seq)
		}
		got, err := ParseFencingHeaders(h)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseFencingHeaders(token %q, sequencer %q) = %d, %v; want %d, ok %v", tc.token, tc.seq, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseFencingHeaders(f *testing.F) {
	for _, tc := range headerTests {
		f.Add(tc.token, tc.seq)
	}
	f.Fuzz(func(t *testing.T, token, seq string) {
		h := http.Header{}
		if token != "" {
			h.Set(HeaderToken, token)
		}
		if seq != "" {
			h.Set(HeaderSequencer, seq)
		}
		got, err := ParseFencingHeaders(h)
		if err != nil {
			if got != 0 {
				t.Fatalf("error %v with token %d", err, got)
			}
			return
		}
		if token != "" {
			if n, err := strconv.ParseUint(token, 10, 64); err != nil || n != got || strconv.FormatUint(n, 10) != token {
				t.Fatalf("accepted Fencing-Token %q as %d", token, got)
			}
		}
		if got == 0 && (token != "" || seq != "") {
			t.Fatalf("accepted token 0 from %q, %q", token, seq)
		}
	})
}

var keyTests = []struct {
	key string
	ok  bool
}{
	{"k", true}, {"a/b/c", true}, {"A-Z_0.9", true}, {strings.Repeat("k", MaxKeyBytes), true},
	{"", false}, {"/k", false}, {"k/", false}, {"a//b", false}, {"a/./b", false}, {"..", false},
	{"a b", false}, {"a%2Fb", false}, {"ü", false}, {"a\x00b", false}, {strings.Repeat("k", MaxKeyBytes+1), false},
}

func TestValidateKey(t *testing.T) {
	for _, tc := range keyTests {
		if err := ValidateKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("ValidateKey(%.40q) = %v, want ok %v", tc.key, err, tc.ok)
		}
	}
}

// FuzzValidateKey: an accepted key is safe to put in a URL path unescaped
// and comes back unchanged from the router.
func FuzzValidateKey(f *testing.F) {
	for _, tc := range keyTests {
		f.Add(tc.key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ValidateKey(key) != nil {
			return
		}
		if len(key) > MaxKeyBytes || strings.HasPrefix(key, "/") || strings.Contains(key, "//") {
			t.Fatalf("accepted %q", key)
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "." || seg == ".." || seg == "" {
				t.Fatalf("accepted %q with segment %q", key, seg)
			}
		}
		req := httptest.NewRequest("GET", "/v1/kv/"+key, nil)
		if got := strings.TrimPrefix(req.URL.Path, kvPrefix); got != key {
			t.Fatalf("key %q routes as %q", key, got)
		}
	})
}

// TestHTTPMetricsAreTheStores: the store exports its own metrics, the fence's
// stale-token counter and seqd_build_info, and none of the daemon's: a
// seqd_zk_connected 0 or seqd_locks_held 0 from a process that has no
// ZooKeeper session would page someone for nothing.
func TestHTTPMetricsAreTheStores(t *testing.T) {
	srv, _, _ := newServer(t, FenceFull)
	do(t, srv, "PUT", "k", "v", tok(2)...)
	do(t, srv, "PUT", "k", "v", tok(1)...)
	families := scrapeFamilies(t, srv.URL+"/metrics")
	for _, want := range []string{"seqd_build_info", "seqd_stale_tokens_rejected_total", "seqd_store_operations_total"} {
		if !families[want] {
			t.Errorf("/metrics has no %s", want)
		}
	}
	for name := range families {
		if !strings.HasPrefix(name, "seqd_") {
			continue
		}
		switch {
		case strings.HasPrefix(name, "seqd_store_"), name == "seqd_stale_tokens_rejected_total", name == "seqd_build_info":
		default:
			t.Errorf("/metrics exports %s, which is not the store's", name)
		}
	}
}

// scrapeFamilies returns the metric families named by # TYPE lines at url.
func scrapeFamilies(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	families := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = true
		}
	}
	return families
}

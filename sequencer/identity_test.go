package sequencer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/internal/security"
)

// The policy of the tests below: two teams named by their client
// certificates (a SPIFFE ID, a DNS name), an operator named by a token.
const testPolicy = `# who may do what
allow spiffe://example.org/team-a  lock,shared,semaphore  team-a/*  acquire,read,check
allow team-b.example.org           *                      team-b/*  *
allow ops                          *                      *         read,break
deny  *                            *                      team-b/*  *
quota spiffe://example.org/team-a  max_ttl=1m leases=3 names=2
`

const (
	teamA = "spiffe://example.org/team-a"
	teamB = "team-b.example.org"
	opsTk = "ops-token-0123456789abcdef"
)

// idDaemon is a daemon over mutual TLS whose handler names callers by
// certificate and by named token, under a policy file.
type idDaemon struct {
	d       *daemon
	url     string
	policy  *policy.Watched[policy.Policy]
	pfile   string
	clients map[string]*http.Client // by identity; "ops" presents no certificate
	audit   *syncBuffer
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startIDDaemon(t *testing.T, policyText string) *idDaemon {
	t.Helper()
	dir := t.TempDir()
	pfile := filepath.Join(dir, "policy")
	tfile := filepath.Join(dir, "tokens")
	writeFile(t, pfile, policyText)
	writeFile(t, tfile, "ops "+opsTk+"\n")
	pol, err := policy.WatchPolicy(pfile)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := policy.WatchTokens(tfile)
	if err != nil {
		t.Fatal(err)
	}
	audit := &syncBuffer{}
	auth := policy.NewAuthority(policy.AuthorityOptions{Tokens: toks, Policy: pol, CertIdentities: true})
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers(), audit: sequencer.NewAuditLog(audit, nil), authority: auth})
	ca, err := security.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	pair := func(cert, key []byte, err error) tls.Certificate {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		p, err := tls.X509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	logs := &syncBuffer{}
	h := httpapi.NewHandler(d.svc.Service, httpapi.HandlerOptions{Gatherer: d.reg, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair(ca.IssueServer([]string{"127.0.0.1"}, time.Hour))},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	clientFor := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
	}
	idc := &idDaemon{d: d, url: srv.URL, policy: pol, pfile: pfile, audit: audit, logs: logs, clients: map[string]*http.Client{
		teamA:      clientFor(pair(ca.IssueIdentity(teamA, time.Hour))),
		teamB:      clientFor(pair(ca.IssueIdentity(teamB, time.Hour))),
		"stranger": clientFor(pair(ca.IssueIdentity("stranger", time.Hour))),
		// Certificates named like the admin and like a named token.
		"cert:admin": clientFor(pair(ca.IssueIdentity("admin", time.Hour))),
		"cert:ops":   clientFor(pair(ca.IssueIdentity("ops", time.Hour))),
		"ops":        clientFor(),
	}}
	return idc
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// call sends a request as identity who and decodes the JSON answer.
func (c *idDaemon) call(t *testing.T, who, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if who == "ops" {
		req.Header.Set("Authorization", "Bearer "+opsTk)
	}
	resp, err := c.clients[who].Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, raw)
	}
	return resp.StatusCode, out
}

// want asserts status and, for an error, its code and a part of its
// sentence.
func want(t *testing.T, what string, status int, body map[string]any, wantStatus int, code, says string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: status %d %v, want %d", what, status, body, wantStatus)
	}
	if code != "" && body["code"] != code {
		t.Fatalf("%s: code %v, want %s (%v)", what, body["code"], code, body)
	}
	if says != "" && !strings.Contains(fmt.Sprint(body["error"]), says) {
		t.Fatalf("%s: error %q does not say %q", what, body["error"], says)
	}
}

// contenders lists the contender nodes of a lock under the daemon's root,
// read with a ZooKeeper client of its own.
func (c *idDaemon) contenders(t *testing.T, name string) []string {
	t.Helper()
	return zkChildren(t, sharedZK.Get(t).Servers(), c.d.svc.Config().Root+"/"+name)
}

// Two identities by certificate and one by named token under one policy:
// each allowed action works; each other is a 403 naming the rule, and
// ZooKeeper holds no contender for it; the listing, the overview and the
// status reads show each identity only its names; the audit log and the
// metrics name the identity.
func TestPolicyJudgesEachIdentity(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	acquire := func(who, name string) (int, map[string]any) {
		return c.call(t, who, "POST", "/v1/locks/"+name+"/acquire", `{"owner":"o","ttl":"30s"}`)
	}
	st, a := acquire(teamA, "team-a/x")
	want(t, "team-a acquires team-a/x", st, a, 200, "", "")
	st, b := acquire(teamB, "team-b/y")
	want(t, "team-b acquires team-b/y", st, b, 200, "", "")

	// team-a on team-b's names: the deny line names itself.
	st, e := acquire(teamA, "team-b/z")
	want(t, "team-a acquires team-b/z", st, e, 403, api.CodeForbidden, c.pfile+":5 (deny * * team-b/* *) refuses "+teamA+" to acquire lock")
	if n := c.contenders(t, "team-b/z"); len(n) != 0 {
		t.Fatalf("a refused acquire left contenders %v", n)
	}
	// A name no line allows: the sentence names the file.
	st, e = acquire(teamA, "elsewhere")
	want(t, "team-a acquires elsewhere", st, e, 403, api.CodeForbidden, "no rule of "+c.pfile+" lets "+teamA+" acquire lock \"elsewhere\"")
	if n := c.contenders(t, "elsewhere"); len(n) != 0 {
		t.Fatalf("a refused acquire left contenders %v", n)
	}
	// team-a may not take team-a's names as an election (kind not allowed).
	st, e = c.call(t, teamA, "POST", "/v1/elections/team-a/e/campaign", `{"owner":"o"}`)
	want(t, "team-a campaigns", st, e, 403, api.CodeForbidden, "no rule of")
	// team B on team A's names: no rule; its own election: allowed.
	st, e = acquire(teamB, "team-a/q")
	want(t, "team-b acquires team-a/q", st, e, 403, api.CodeForbidden, "no rule of "+c.pfile+" lets "+teamB+" acquire lock \"team-a/q\"")
	if n := c.contenders(t, "team-a/q"); len(n) != 0 {
		t.Fatalf("a refused acquire left contenders %v", n)
	}
	st, e = c.call(t, teamB, "POST", "/v1/elections/team-b/e/campaign", `{"owner":"o"}`)
	want(t, "team-b campaigns", st, e, 200, "", "")
	// ops reads and breaks, but acquires nothing.
	st, e = acquire("ops", "team-a/ops")
	want(t, "ops acquires", st, e, 403, api.CodeForbidden, "lets ops acquire lock")

	// Reads: status, listing, overview.
	st, e = c.call(t, teamA, "GET", "/v1/locks/team-b/y", "")
	want(t, "team-a reads team-b/y", st, e, 403, api.CodeForbidden, ":5 (deny")
	st, e = c.call(t, teamB, "GET", "/v1/locks/team-b/y", "")
	want(t, "team-b reads team-b/y", st, e, 200, "", "")
	for who, names := range map[string][]string{teamA: {"team-a/x"}, teamB: {"team-b/y"}, "ops": {"team-a/x", "team-b/y"}, "stranger": nil} {
		_, list := c.call(t, who, "GET", "/v1/locks", "")
		_, all := c.call(t, who, "GET", "/v1/locks?all=1", "")
		for what, got := range map[string][]string{"listing": leaseNames(list["locks"]), "overview": leaseNames(all["locks"])} {
			if fmt.Sprint(got) != fmt.Sprint(names) {
				t.Errorf("%s's %s shows %v, want %v", who, what, got, names)
			}
		}
	}

	// Check: team-a may, ops may not.
	tokA := uint64(a["token"].(float64))
	st, e = c.call(t, teamA, "POST", "/v1/check", fmt.Sprintf(`{"name":"team-a/x","token":%d}`, tokA))
	want(t, "team-a checks", st, e, 200, "", "")
	st, e = c.call(t, "ops", "POST", "/v1/check", fmt.Sprintf(`{"name":"team-a/x","token":%d}`, tokA))
	want(t, "ops checks", st, e, 403, api.CodeForbidden, "lets ops check lock")

	// Break: team-a may not (no admin token, no rule); ops may.
	brk := fmt.Sprintf(`{"reason":"test","token":%d}`, tokA)
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/x/break", brk)
	want(t, "team-a breaks", st, e, 403, api.CodeForbidden, "lets "+teamA+" break lock")
	if n := c.contenders(t, "team-a/x"); len(n) != 1 {
		t.Fatalf("after a refused break team-a/x has contenders %v, want its holder's", n)
	}
	st, e = c.call(t, "ops", "POST", "/v1/locks/team-a/x/break", brk)
	want(t, "ops breaks", st, e, 200, "", "")

	// A certificate no line names: refused, counted as _other.
	st, e = acquire("stranger", "team-a/s")
	want(t, "stranger acquires", st, e, 403, api.CodeForbidden, "lets stranger acquire")

	wantCounters(t, c.d.reg, []counterWant{
		{"seqd_policy_refusals_total", map[string]string{"identity": teamA, "code": "forbidden"}, 5},
		{"seqd_policy_refusals_total", map[string]string{"identity": "ops", "code": "forbidden"}, 2},
		{"seqd_policy_refusals_total", map[string]string{"identity": "_other", "code": "forbidden"}, 1},
		{"seqd_policy_refusals_total", map[string]string{"identity": teamB, "code": "forbidden"}, 1},
	})
	if got := gauge(t, c.d.reg, "seqd_identity_leases", map[string]string{"identity": teamB}); got != 2 {
		t.Errorf("seqd_identity_leases{identity=%q} = %v, want 2 (a lock, an election)", teamB, got)
	}
	// The audit log: who took each lease, who broke team-a's.
	var sawGrant, sawBreak bool
	for _, line := range strings.Split(strings.TrimSpace(c.audit.String()), "\n") {
		var ev sequencer.AuditEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		sawGrant = sawGrant || ev.Event == sequencer.AuditGrant && ev.Name == "team-b/y" && ev.Identity == teamB
		sawBreak = sawBreak || ev.Event == sequencer.AuditBreak && ev.Name == "team-a/x" && ev.Identity == "ops"
	}
	if !sawGrant || !sawBreak {
		t.Fatalf("audit log lacks team-b's grant (%v) or ops's break (%v) with the identity:\n%s", sawGrant, sawBreak, c.audit.String())
	}
}

func leaseNames(v any) []string {
	var out []string
	xs, _ := v.([]any)
	for _, x := range xs {
		out = append(out, x.(map[string]any)["name"].(string))
	}
	return out
}

// Quotas at their limit answer 429 naming the quota line and change
// nothing; a retry of a live lease takes nothing new; the Go client's
// error matches ErrQuotaExceeded.
func TestQuotasAtTheirLimit(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	sem := func(ttl string) (int, map[string]any) {
		return c.call(t, teamA, "POST", "/v1/semaphores/team-a/s/acquire", `{"owner":"o","limit":5,"ttl":"`+ttl+`"}`)
	}
	st, e := sem("2m")
	want(t, "ttl 2m", st, e, 429, api.CodeQuotaExceeded, c.pfile+":6 (quota "+teamA+" max_ttl=1m leases=3 names=2): "+teamA+" may ask a TTL of at most 1m0s")
	st, s1 := sem("30s")
	want(t, "semaphore lease 1", st, s1, 200, "", "")
	st, s2 := sem("30s")
	want(t, "semaphore lease 2", st, s2, 200, "", "")
	st, x := c.call(t, teamA, "POST", "/v1/locks/team-a/x/acquire", `{"owner":"o"}`)
	want(t, "lock x", st, x, 200, "", "")
	// 3 leases held: a fourth is refused, and leaves no contender.
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/y/acquire", `{"owner":"o"}`)
	want(t, "a fourth lease", st, e, 429, api.CodeQuotaExceeded, "may hold 3 leases at once; it holds 3")
	if n := c.contenders(t, "team-a/y"); len(n) != 0 {
		t.Fatalf("a refused acquire left contenders %v", n)
	}
	// A retry of a live lease is no new lease.
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/x/acquire", fmt.Sprintf(`{"owner":"o","lease_id":%q}`, x["lease_id"]))
	want(t, "a retry at the limit", st, e, 200, "", "")
	// Names: with a semaphore lease released, 2 leases on 2 names; a third
	// name is refused, another lease on a held name is not.
	st, e = c.call(t, teamA, "POST", "/v1/semaphores/team-a/s/release", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, s1["lease_id"], s1["token"]))
	want(t, "release", st, e, 200, "", "")
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/y/acquire", `{"owner":"o"}`)
	want(t, "a third name", st, e, 429, api.CodeQuotaExceeded, "may hold 2 distinct names at once; this request would make it 3")
	st, e = sem("30s")
	want(t, "a lease on a held name", st, e, 200, "", "")
	// A renewal asking more than max_ttl.
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/x/renew", fmt.Sprintf(`{"lease_id":%q,"token":%v,"ttl":"5m"}`, x["lease_id"], x["token"]))
	want(t, "a renewal for 5m", st, e, 429, api.CodeQuotaExceeded, "at most 1m0s")

	// The Go client maps the codes to its errors.
	gc, err := client.New(c.url, client.WithoutEnv(), client.WithHTTPClient(c.clients[teamA]))
	if err != nil {
		t.Fatal(err)
	}
	_, err = gc.Acquire(ctxT(t, 10*time.Second), "team-a/z", client.Owner("o"))
	if !errors.Is(err, client.ErrQuotaExceeded) || errors.Is(err, client.ErrForbidden) {
		t.Fatalf("client error %v: want ErrQuotaExceeded only", err)
	}
	_, err = gc.Acquire(ctxT(t, 10*time.Second), "team-b/z", client.Owner("o"))
	if !errors.Is(err, client.ErrForbidden) || !errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrQuotaExceeded) {
		t.Fatalf("client error %v: want ErrForbidden (and ErrUnauthorized)", err)
	}
	wantCounters(t, c.d.reg, []counterWant{
		{"seqd_policy_refusals_total", map[string]string{"identity": teamA, "code": "quota_exceeded"}, 5},
	})
}

// Acquires in flight count against waiters: one waiting, a second is
// refused until the first is granted.
func TestQuotaOfWaiters(t *testing.T) {
	c := startIDDaemon(t, testPolicy+"quota team-b.example.org waiters=1\n")
	st, b := c.call(t, teamB, "POST", "/v1/locks/team-b/w/acquire", `{"owner":"o"}`)
	want(t, "hold team-b/w", st, b, 200, "", "")
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", c.url+"/v1/locks/team-b/w/acquire", strings.NewReader(`{"owner":"o2","wait":"30s"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.clients[teamB].Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(c.contenders(t, "team-b/w")) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the waiting acquire never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, e := c.call(t, teamB, "POST", "/v1/locks/team-b/v/acquire", `{"owner":"o"}`)
	want(t, "a second acquire while one waits", st, e, 429, api.CodeQuotaExceeded, "may have 1 acquires in flight at once, and has 1")
	st, e = c.call(t, teamB, "POST", "/v1/locks/team-b/w/release", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, b["lease_id"], b["token"]))
	want(t, "release", st, e, 200, "", "")
	if got := <-done; got != 200 {
		t.Fatalf("the waiter got %d, want 200", got)
	}
	st, e = c.call(t, teamB, "POST", "/v1/locks/team-b/v/acquire", `{"owner":"o"}`)
	want(t, "an acquire once none waits", st, e, 200, "", "")
}

// A changed policy takes effect without a restart; a change that does not
// parse keeps the old policy in force, and the log and a metric say so.
func TestPolicyReload(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	st, e := c.call(t, teamA, "GET", "/v1/locks/team-b/y", "")
	want(t, "before the reload", st, e, 403, api.CodeForbidden, "")
	writeFile(t, c.pfile, "allow "+teamA+" * * read\n"+testPolicy)
	policy.ReloadAll(slog.New(slog.NewTextHandler(c.logs, nil)), c.d.svc.Metrics(), c.policy)
	st, e = c.call(t, teamA, "GET", "/v1/locks/team-b/y", "")
	want(t, "after the reload", st, e, 200, "", "")

	writeFile(t, c.pfile, "allow "+teamA+" * * read\nallow * bogus * *\n")
	policy.ReloadAll(slog.New(slog.NewTextHandler(c.logs, nil)), c.d.svc.Metrics(), c.policy)
	st, e = c.call(t, teamA, "GET", "/v1/locks/team-b/y", "")
	want(t, "after a bad reload", st, e, 200, "", "")
	st, e = c.call(t, teamA, "POST", "/v1/locks/team-a/x/acquire", `{"owner":"o"}`)
	want(t, "acquire after a bad reload", st, e, 200, "", "")
	if !strings.Contains(c.logs.String(), c.pfile+`:2: unknown kind \"bogus\"`) || !strings.Contains(c.logs.String(), "the old one stays in force") {
		t.Fatalf("the log does not say the reload failed and why:\n%s", c.logs.String())
	}
	if got := gauge(t, c.d.reg, "seqd_config_reload_failed", map[string]string{"file": "policy"}); got != 1 {
		t.Fatalf("seqd_config_reload_failed{file=policy} = %v, want 1", got)
	}
	// Polled: the next change is picked up by Poll itself.
	writeFile(t, c.pfile, testPolicy)
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() { policy.Poll(ctx, tick, nil, c.d.svc.Metrics(), c.policy); close(polled) }()
	defer func() { cancel(); <-polled }()
	tick <- time.Now()
	tick <- time.Now() // the first tick's reload is done once the second is taken
	st, e = c.call(t, teamA, "GET", "/v1/locks/team-b/y", "")
	want(t, "after the polled reload", st, e, 403, api.CodeForbidden, "")
	if got := gauge(t, c.d.reg, "seqd_config_reload_failed", map[string]string{"file": "policy"}); got != 0 {
		t.Fatalf("seqd_config_reload_failed{file=policy} = %v after a good reload, want 0", got)
	}
}

// The negative control of the reads' filter: the admin, whom no policy
// judges, sees every name of the same daemon.
func TestWithoutPolicyEveryoneSeesAll(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	c.call(t, teamA, "POST", "/v1/locks/team-a/x/acquire", `{"owner":"o"}`)
	c.call(t, teamB, "POST", "/v1/locks/team-b/y/acquire", `{"owner":"o"}`)
	admin := policy.WithCaller(context.Background(), policy.Caller{ID: policy.Admin, Via: policy.ViaAdmin})
	var got []string
	for _, l := range c.d.svc.Service.Leases(admin, api.Locks) {
		got = append(got, l.Name)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[team-a/x team-b/y]" {
		t.Fatalf("unjudged, the listing shows %v, want both names", got)
	}
	if ls := c.d.svc.Service.Leases(context.Background(), api.Locks); len(ls) != 0 {
		t.Fatalf("an anonymous in-process caller sees %v under a policy that lets it read nothing", ls)
	}
}

// gauge is a gauge's value in reg (0 when absent).
func gauge(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// With named tokens and no API token, a call needs a named token or a
// client certificate; a named token names its caller over a certificate.
func TestTokensFileNeedsATokenOrACertificate(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	nobody := &http.Client{Transport: &http.Transport{TLSClientConfig: c.clients["ops"].Transport.(*http.Transport).TLSClientConfig}}
	req, _ := http.NewRequest("GET", c.url+"/v1/locks", nil)
	resp, err := nobody.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("no certificate, no token: %d, want 401", resp.StatusCode)
	}
	st, e := c.call(t, "stranger", "GET", "/v1/locks", "")
	want(t, "a certificate without a token", st, e, 200, "", "")
	// team A's certificate with the operator's token: the operator.
	req, _ = http.NewRequest("POST", c.url+"/v1/locks/team-a/t/acquire", strings.NewReader(`{"owner":"o"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+opsTk)
	resp, err = c.clients[teamA].Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(raw), "lets ops acquire") {
		t.Fatalf("team A's certificate with the operator's token: %d %s, want the operator's refusal", resp.StatusCode, raw)
	}
}

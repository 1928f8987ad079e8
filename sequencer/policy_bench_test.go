package sequencer_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"
)

// What a policy costs per request: two daemons on one ZooKeeper, served
// over loopback HTTP, one without a policy and one with a policy
// of 60 rules (the caller's allowing rule last) and a quota, its caller
// named by one of 20 named tokens; requests alternate between them in
// one run. Two mixes: a lease listing (answered from memory: the check is
// the largest share it can be) and an acquire with its release (two
// ZooKeeper round trips, the usual request). In process: the daemon and
// the client share the machine and the process.
func BenchmarkPolicyCost(b *testing.B) {
	d := startDaemon(b, daemonOpts{servers: sharedZK.Get(b).Servers(), logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	dir := b.TempDir()
	var pol, toks strings.Builder
	for i := range 59 {
		fmt.Fprintf(&pol, "allow team-%02d lock,shared team-%02d/* acquire,read,check\n", i, i)
	}
	pol.WriteString("allow bench * bench/* *\nquota bench max_ttl=1m leases=1000 waiters=100 names=1000\n")
	for i := range 19 {
		fmt.Fprintf(&toks, "team-%02d token-%02d-0123456789abcdef\n", i, i)
	}
	toks.WriteString("bench bench-token-0123456789abcdef\n")
	pfile, tfile := filepath.Join(dir, "policy"), filepath.Join(dir, "tokens")
	for f, text := range map[string]string{pfile: pol.String(), tfile: toks.String()} {
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	p, err := policy.WatchPolicy(pfile)
	if err != nil {
		b.Fatal(err)
	}
	tk, err := policy.WatchTokens(tfile)
	if err != nil {
		b.Fatal(err)
	}
	bare := httptest.NewServer(httpapi.NewHandler(d.svc.Service, httpapi.HandlerOptions{}))
	defer bare.Close()
	jd := startDaemon(b, daemonOpts{servers: sharedZK.Get(b).Servers(), root: "/seqd-test/policy-cost-judged", logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		authority: policy.NewAuthority(policy.AuthorityOptions{Policy: p, Tokens: tk})})
	judged := jd.srv
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url, method, path, body string, token bool) string {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token {
			req.Header.Set("Authorization", "Bearer bench-token-0123456789abcdef")
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return string(raw)
	}
	// Some leases to list.
	for i := range 20 {
		do(bare.URL, "POST", fmt.Sprintf("/v1/locks/bench/held-%d/acquire", i), `{"owner":"o","ttl":"1m"}`, false)
	}
	mixes := []struct {
		name string
		run  func(url string, token bool)
	}{
		{"listing", func(url string, token bool) { do(url, "GET", "/v1/locks", "", token) }},
		{"acquire+release", func(url string, token bool) {
			raw := do(url, "POST", "/v1/locks/bench/cycle/acquire", `{"owner":"o","ttl":"30s"}`, token)
			var id, tok string
			if _, rest, ok := strings.Cut(raw, `"lease_id":"`); ok {
				id, _, _ = strings.Cut(rest, `"`)
			}
			if _, rest, ok := strings.Cut(raw, `"token":`); ok {
				tok, _, _ = strings.Cut(rest, `,`)
			}
			do(url, "POST", "/v1/locks/bench/cycle/release", `{"lease_id":"`+id+`","token":`+tok+`}`, token)
		}},
	}
	for _, mix := range mixes {
		b.Run(mix.name, func(b *testing.B) {
			var tBare, tJudged time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				mix.run(bare.URL, false)
				tBare += time.Since(t0)
				t0 = time.Now()
				mix.run(judged.URL, true)
				tJudged += time.Since(t0)
				n++
			}
			b.ReportMetric(float64(tBare.Nanoseconds())/float64(n), "ns/req-no-policy")
			b.ReportMetric(float64(tJudged.Nanoseconds())/float64(n), "ns/req-policy")
			b.ReportMetric(float64(tJudged)/float64(tBare), "ratio")
		})
	}
}

// The policy's decision alone: the caller's allowing rule is the last
// of 60.
func BenchmarkPolicyDecide(b *testing.B) {
	var pol strings.Builder
	for i := range 59 {
		fmt.Fprintf(&pol, "allow team-%02d lock,shared team-%02d/* acquire,read,check\n", i, i)
	}
	pol.WriteString("allow bench * bench/* *\n")
	p, err := policy.ParsePolicy("p", []byte(pol.String()))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if e := p.Decide("bench", "lock", "acquire", "bench/cycle"); e != nil {
			b.Fatal(e)
		}
	}
}

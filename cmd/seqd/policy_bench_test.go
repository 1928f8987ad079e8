package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// What a policy costs per request, as deployed: two `seqd serve`
// processes on one ZooKeeper, one without a policy and one with a policy of
// 60 rules (the caller's allowing rule last), a quota and 20 named tokens;
// this benchmark is their client, alternating requests between them in one
// run. Two mixes: a lease listing (from memory: the check's largest share)
// and an acquire with its release (two ZooKeeper round trips).
func BenchmarkPolicyCostDeployed(b *testing.B) {
	zkc := zktest.StartT(b, testenv.Options{})
	dir := b.TempDir()
	bin := filepath.Join(dir, "seqd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
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
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	start := func(args ...string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, append([]string{"serve", "--zk", zkc.ConnectString(), "--listen", addr, "--log-level", "warn"}, args...)...)
		cmd.Env = lockEnv()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			if resp, err := hc.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return "http://" + addr
				}
			}
			if time.Now().After(deadline) {
				b.Fatalf("seqd serve %v did not get ready", args)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	bare := start("--root", "/bench/bare")
	judged := start("--root", "/bench/judged", "--policy-file", pfile, "--tokens-file", tfile)
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
	for i := range 20 {
		do(bare, "POST", fmt.Sprintf("/v1/locks/bench/held-%d/acquire", i), `{"owner":"o","ttl":"1m"}`, false)
		do(judged, "POST", fmt.Sprintf("/v1/locks/bench/held-%d/acquire", i), `{"owner":"o","ttl":"1m"}`, true)
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
				// Alternate which goes first, so that neither always
				// follows the other's ZooKeeper traffic.
				first, second := bare, judged
				if n%2 == 1 {
					first, second = judged, bare
				}
				for _, url := range []string{first, second} {
					t0 := time.Now()
					mix.run(url, url == judged)
					if url == judged {
						tJudged += time.Since(t0)
					} else {
						tBare += time.Since(t0)
					}
				}
				n++
			}
			b.ReportMetric(float64(tBare.Nanoseconds())/float64(n), "ns/req-no-policy")
			b.ReportMetric(float64(tJudged.Nanoseconds())/float64(n), "ns/req-policy")
			b.ReportMetric(float64(tJudged)/float64(tBare), "ratio")
		})
	}
}

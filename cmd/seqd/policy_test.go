package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// docText is the ```text block of docs/security.md after the comment that
// contains marker.
func docText(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("docs/security.md has no %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```text\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("docs/security.md: no text block after %q", marker)
	}
	return block
}

// TestServeWithTheDocsPolicy: the policy and tokens examples of
// docs/security.md, given to the daemon seqd init set up (with
// certificates from init --identity), do what the doc says they do; a
// change of the file takes effect within seconds, without a restart; a
// bad line at start is exit 64 naming it.
func TestServeWithTheDocsPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zkc := zktest.StartT(t, testenv.Options{})
	dir := filepath.Join(t.TempDir(), "ids")
	const teamA, teamB = "spiffe://example.org/team-a", "team-b.example.org"
	code, out, errs := runCLI(ctx, "init", "--dir", dir, "--listen", "127.0.0.1:"+freePort(t), "--zk", zkc.ConnectString(), "--identity", teamA, "--identity", teamB)
	if code != 0 {
		t.Fatalf("seqd init = %d\n%s%s", code, out, errs)
	}
	work := t.TempDir()
	policy, tokens := filepath.Join(work, "policy"), filepath.Join(work, "tokens")
	policyText, tokensText := docText(t, "<!-- the policy example:"), docText(t, "<!-- the tokens example:")
	writeSecret(t, policy, policyText)
	writeSecret(t, tokens, tokensText)

	bad := filepath.Join(work, "bad")
	writeSecret(t, bad, policyText+"allow oncall * * reads\n")
	serveArgs := printedCommand(t, out, "serve")[1:]
	if code, _, errs := runCLI(ctx, append([]string{"serve"}, append(serveArgs, "--policy-file", bad)...)...); code != ExitUsage || !strings.Contains(errs, bad+`:11: unknown action "reads"`) {
		t.Fatalf("serve with a bad policy line: exit %d %q, want 64 naming %s:11", code, errs, bad)
	}

	addr, _ := startServe(t, append(serveArgs, "--policy-file", policy, "--tokens-file", tokens)...)
	addr = strings.Replace(addr, "http://", "https://", 1)
	apiToken := readFirstLine(t, filepath.Join(dir, lockdown.APITokenFile))
	oncall := strings.Fields(strings.Split(strings.TrimSpace(tokensText), "\n")[1])[1]
	client := func(id string) *http.Client {
		pool := x509.NewCertPool()
		ca, _ := os.ReadFile(filepath.Join(dir, lockdown.CAFile))
		pool.AppendCertsFromPEM(ca)
		cfg := &tls.Config{RootCAs: pool}
		if id != "" {
			i := map[string]int{teamA: 0, teamB: 1}[id]
			cf, kf := lockdown.IdentityCertFiles(i)
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, cf), filepath.Join(dir, kf))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		} else {
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, lockdown.ClientCertFile), filepath.Join(dir, lockdown.ClientKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	call := func(c *http.Client, token, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(raw, &m)
		return resp.StatusCode, m
	}
	a, b := client(teamA), client(teamB)
	expect := func(what string, st int, m map[string]any, want int, says string) {
		t.Helper()
		if st != want || !strings.Contains(fmt.Sprint(m["error"]), says) {
			t.Fatalf("%s: %d %v, want %d saying %q", what, st, m, want, says)
		}
	}
	st, m := call(a, apiToken, "POST", "/v1/locks/team-a/nightly/acquire", `{"owner":"job"}`)
	expect("team A acquires team-a/nightly", st, m, 200, "")
	st, m = call(a, apiToken, "POST", "/v1/locks/team-b/x/acquire", `{"owner":"job"}`)
	expect("team A acquires team-b/x", st, m, 403, `policy:8 (deny * * team-b/* *) refuses spiffe://example.org/team-a to acquire lock "team-b/x"`)
	st, m = call(a, apiToken, "POST", "/v1/elections/team-a/leader/campaign", `{"owner":"job"}`)
	expect("team A campaigns", st, m, 403, `no rule of `+policy+` lets spiffe://example.org/team-a acquire election "team-a/leader"`)
	st, m = call(a, apiToken, "POST", "/v1/locks/team-a/long/acquire", `{"owner":"job","ttl":"5m"}`)
	expect("team A asks 5m", st, m, 429, "policy:10")
	st, m = call(b, apiToken, "POST", "/v1/locks/team-b/x/acquire", `{"owner":"daemon"}`)
	expect("team B acquires team-b/x", st, m, 200, "")
	st, m = call(a, apiToken, "GET", "/v1/locks/team-b/x", "")
	expect("team A reads team-b/x", st, m, 403, "policy:8")
	st, m = call(a, apiToken, "GET", "/v1/locks?all=1", "")
	if st != 200 || fmt.Sprint(m["locks"]) == "" || strings.Contains(fmt.Sprint(m["locks"]), "team-b") {
		t.Fatalf("team A's overview: %d %v, want team-a's names only", st, m)
	}
	// The init client certificate names seqd-client, an identity like any
	// other: without a rule for it, refused under this policy. With the
	// operator's named token it opens the connection, and the token names
	// the caller: it reads everything and breaks.
	init := client("")
	st, m = call(init, apiToken, "GET", "/v1/locks/team-a/nightly", "")
	expect("the init certificate under a policy", st, m, 403, "lets seqd-client read")
	st, m = call(init, oncall, "GET", "/v1/locks?all=1", "")
	if all := fmt.Sprint(m["locks"]); st != 200 || !strings.Contains(all, "team-a/nightly") || !strings.Contains(all, "team-b/x") {
		t.Fatalf("oncall's overview: %d %v, want both teams' names", st, m)
	}
	st, x := call(b, apiToken, "GET", "/v1/locks/team-b/x", "")
	expect("team B reads its lock", st, x, 200, "")
	// On the command line: a 403 for team A's certificate names the
	// certificate, and oncall's named token breaks without the admin token.
	cf, kf := lockdown.IdentityCertFiles(0)
	tls := []string{"--addr", addr, "--cacert", filepath.Join(dir, lockdown.CAFile)}
	teamAFlags := append([]string{"--cert", filepath.Join(dir, cf), "--key", filepath.Join(dir, kf), "--api-token-file", filepath.Join(dir, lockdown.APITokenFile)}, tls...)
	code, _, errs = runCLI(ctx, append(append([]string{"acquire"}, teamAFlags...), "team-b/x")...)
	if code != ExitAuth || !strings.Contains(errs, "else the client certificate of --cert "+filepath.Join(dir, cf)+" does") {
		t.Fatalf("team A's seqd acquire team-b/x: exit %d %q, want 77 naming the certificate of --cert", code, errs)
	}
	oncallFile := filepath.Join(work, "oncall.token")
	writeSecret(t, oncallFile, oncall+"\n")
	initFlags := append([]string{"--cert", filepath.Join(dir, lockdown.ClientCertFile), "--key", filepath.Join(dir, lockdown.ClientKeyFile)}, tls...)
	code, out, errs = runCLI(ctx, append(append([]string{"break", "--api-token-file", oncallFile, "--reason", "stuck", "--token", fmt.Sprint(x["token"])}, initFlags...), "team-b/x")...)
	if code != 0 || !strings.Contains(out, `"broken": true`) {
		t.Fatalf("oncall's seqd break of team-b/x: exit %d %q %q, want 0", code, out, errs)
	}
	st, m = call(init, oncall, "POST", "/v1/locks/team-c/y/acquire", `{"owner":"me"}`)
	expect("oncall acquires", st, m, 403, "no rule of")

	// A change takes effect without a restart.
	writeSecret(t, policy, "allow spiffe://example.org/team-a * team-b/* read\n"+policyText)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if st, _ = call(a, apiToken, "GET", "/v1/locks/team-b/x", ""); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed policy was not in force within 15s: a read is still %d", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeSecret(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFirstLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
}

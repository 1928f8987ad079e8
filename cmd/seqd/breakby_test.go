package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// policyDaemon is a daemon whose policy lets the bearer of allowed break
// and nothing else: a break by allowed is answered 200, any other request
// 403. breaks returns the bearers of the breaks it got.
func policyDaemon(t *testing.T, allowed string) (addr string, breaks func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		isBreak := strings.HasSuffix(r.URL.Path, "/break")
		if isBreak {
			mu.Lock()
			seen = append(seen, bearer)
			mu.Unlock()
		}
		if !isBreak || bearer != allowed {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":"no rule of policy lets this caller do this to lock \"jobs/a\"","code":"forbidden"}`))
			return
		}
		w.Write([]byte(`{"broken":true,"token":7,"holder":{"node":"_c_x-lock-0000000001","client":"seqd","owner":"job"},"reason":"stuck"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// An identity the policy lets break (the operator on call, by a named
// token) breaks with seqd break and its --api-token-file, without the
// admin token: the daemon decides, not the command line.
func TestBreakByAPolicyIdentity(t *testing.T) {
	const oncall = "3f1c0e5d7a9b2c4e6f8091a2b3c4d5e6"
	dir := t.TempDir()
	oncallFile, otherFile := filepath.Join(dir, "oncall"), filepath.Join(dir, "other")
	writeSecret(t, oncallFile, oncall+"\n")
	writeSecret(t, otherFile, "0000000000000000-not-oncall\n")
	addr, breaks := policyDaemon(t, oncall)
	ctx := context.Background()

	code, out, errs := runCLI(ctx, "break", "--addr", addr, "--api-token-file", oncallFile, "--reason", "stuck", "--token", "7", "jobs/a")
	if code != 0 || !strings.Contains(out, `"broken": true`) {
		t.Fatalf("break by oncall's named token: exit %d %q %q, want 0 and the break's answer", code, out, errs)
	}
	if b := breaks(); len(b) != 1 || b[0] != oncall {
		t.Fatalf("the daemon saw breaks by %q, want one by oncall's token", breaks())
	}
	// The control: another token is refused by the daemon (77), not by the
	// command line.
	code, _, errs = runCLI(ctx, "break", "--addr", addr, "--api-token-file", otherFile, "--reason", "stuck", "--token", "7", "jobs/a")
	if code != ExitAuth || len(breaks()) != 2 {
		t.Fatalf("break by another token: exit %d %q after %d breaks, want 77 from the daemon's 403", code, errs, len(breaks()))
	}
}

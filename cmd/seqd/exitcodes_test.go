package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// answering is a daemon that gives every request the same answer.
func answering(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A quota refusal has an exit status of its own: not 70 (a bug) and not
// 75 (not granted within --wait), so that a script can tell "over my
// quota" from "busy, try later".
func TestQuotaRefusalHasItsOwnExitCode(t *testing.T) {
	ctx := context.Background()
	quota := answering(t, http.StatusTooManyRequests, `{"error":"caller \"team-a\" holds 2 leases, its quota's leases=2","code":"quota_exceeded"}`)
	held := answering(t, http.StatusConflict, `{"error":"lock jobs/a is held","code":"held","current_token":7}`)
	for _, args := range [][]string{
		{"acquire", "jobs/a"},
		{"renew", "--lease-id", "0123456789abcdef0123456789abcdef", "--token", "7", "jobs/a"},
	} {
		code, _, errs := runCLI(ctx, append([]string{args[0], "--addr", quota}, args[1:]...)...)
		if code != ExitQuota || !strings.Contains(errs, "quota") {
			t.Errorf("%s against a 429: exit %d %q, want %d and the daemon's sentence", args[0], code, errs, ExitQuota)
		}
	}
	if ExitQuota == ExitSoftware || ExitQuota == ExitTimeout {
		t.Fatalf("ExitQuota = %d shares a status with a bug or a timeout", ExitQuota)
	}
	// The control: a 409 held stays "not granted within --wait".
	if code, _, errs := runCLI(ctx, "acquire", "--addr", held, "jobs/a"); code != ExitTimeout {
		t.Errorf("acquire against a 409 held: exit %d %q, want %d", code, errs, ExitTimeout)
	}
}

// With no daemon at --addr a client command exits 69 with one sentence:
// one "seqd:" prefix, what is wrong in words, and which command or flag
// helps; no Go error text (dial tcp, the request's method and URL).
func TestNoDaemonSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, args := range [][]string{{"status", "jobs/a"}, {"acquire", "jobs/a"}} {
		code, _, errs := runCLI(context.Background(), append([]string{args[0], "--addr", addr}, args[1:]...)...)
		if code != ExitUnavailable {
			t.Errorf("%s: exit %d %q, want %d", args[0], code, errs, ExitUnavailable)
		}
		for _, want := range []string{"no daemon answers at " + addr, "connection refused", "seqd dev", "--addr"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%s: %q does not say %q", args[0], errs, want)
			}
		}
		for _, not := range []string{"seqd: seqd:", "dial tcp", "Get \"", "Post \""} {
			if strings.Contains(errs, not) {
				t.Errorf("%s: %q has %q", args[0], errs, not)
			}
		}
		if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: %q is more than one line", args[0], errs)
		}
	}
}

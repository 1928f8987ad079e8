package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
)

// hangingDaemon accepts requests and answers none until they are
// abandoned; arrived receives each request as it comes.
func hangingDaemon(t *testing.T) (addr string, arrived <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body, so that the server notices the client going away.
		io.Copy(io.Discard, r.Body)
		ch <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) }) // first: no handler outlives the test
	return srv.URL, ch
}

// A client command cut short by Ctrl-C (its context cancelled) exits 130,
// or 128+N for the signal N that cancelled it, and says it was interrupted
// rather than that the daemon is unreachable.
func TestClientCommandInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  int
	}{
		{"cancelled", nil, ExitInterrupted},
		{"SIGINT", &exit.SignalError{Sig: syscall.SIGINT}, 130},
		{"SIGTERM", &exit.SignalError{Sig: syscall.SIGTERM}, 143},
	} {
		for _, args := range [][]string{
			{"acquire", "--wait", "1m", "jobs/a"},
			{"renew", "--lease-id", "x", "--token", "1", "jobs/a"},
			{"release", "--lease-id", "x", "--token", "1", "jobs/a"},
			{"check", "jobs/a@1"},
			{"status", "jobs/a"},
			{"status"},
		} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				addr, arrived := hangingDaemon(t)
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				go func() {
					select {
					case <-arrived:
						cancel(tc.cause)
					case <-time.After(30 * time.Second):
					}
				}()
				code, _, errs := runCLI(ctx, append([]string{args[0], "--addr", addr}, args[1:]...)...)
				if code != tc.want {
					t.Errorf("exit %d (%q), want %d", code, errs, tc.want)
				}
				if !strings.Contains(errs, "interrupted") || strings.Contains(errs, "unreachable") {
					t.Errorf("stderr %q: want it to say interrupted, not unreachable", errs)
				}
			})
		}
	}
}

// An --addr that is not a base URL is a usage error with a sentence, before
// any request.
func TestClientBadAddr(t *testing.T) {
	ctx := context.Background()
	for _, addr := range []string{"127.0.0.1:7070", "localhost:7070", "http://", "ftp://127.0.0.1:7070", "http://127.0.0.1:7070/?x=1"} {
		code, _, errs := runCLI(ctx, "status", "--addr", addr)
		if code != ExitUsage || !strings.Contains(errs, "--addr") || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("--addr %q: exit %d %q, want 64 and one sentence naming --addr", addr, code, errs)
		}
	}
	t.Setenv("SEQD_ADDR", "127.0.0.1:7070")
	if code, _, errs := runCLI(ctx, "status"); code != ExitUsage {
		t.Errorf("SEQD_ADDR without a scheme: exit %d %q, want 64", code, errs)
	}
}

// A 401 exits 77 and says how to send the token: --api-token-file on the
// client side too.
func TestClientUnauthorized(t *testing.T) {
	const token = "0123456789abcdef-secret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"missing or wrong bearer token: send Authorization: Bearer <token>","code":"unauthorized"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"name":"jobs/a","held":false}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	wrong, right := filepath.Join(dir, "wrong"), filepath.Join(dir, "right")
	if err := os.WriteFile(wrong, []byte("not-the-token-at-all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(right, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"no token", nil, ExitAuth, "give --api-token-file"},
		{"wrong token", []string{"--api-token-file", wrong}, ExitAuth, "refused the bearer token read from --api-token-file " + wrong},
		{"right token", []string{"--api-token-file", right}, 0, ""},
	} {
		args := append(append([]string{"status", "--addr", srv.URL}, tc.args...), "jobs/a")
		code, _, errs := runCLI(ctx, args...)
		if code != tc.want || !strings.Contains(errs, tc.msg) {
			t.Errorf("%s: exit %d %q, want %d with %q", tc.name, code, errs, tc.want, tc.msg)
		}
	}
}

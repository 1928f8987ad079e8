package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// Owner strings are anybody's: a terminal escape in one (here OSC 52, a
// clipboard write, and a cursor move) or a newline and tab that forge a
// table row reach the operator's terminal only as visible escapes, in
// the status tables, the listing and the JSON they print.
func TestOperatorOutputEscapesControls(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.New(addr, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	hostile := "evil\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2A\n1\tholder\t7\tforged\r\u202eroot\u009b1m\x7f"
	if _, err := cl.Acquire(ctx, "jobs/a", client.Owner(hostile), client.TTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AcquireSemaphore(ctx, "pool", 2, client.Owner(hostile), client.TTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		lines int // of a table: a forged row would add one; 0 for JSON
	}{
		{[]string{"status", "--table", "jobs/a"}, 3},
		{[]string{"status", "--table"}, 2},
		{[]string{"status", "jobs/a"}, 0},
		{[]string{"status"}, 0},
		{[]string{"status", "--kind", "semaphore", "--table", "pool"}, 3},
		{[]string{"status", "--kind", "semaphore", "--table"}, 2},
	} {
		args := append([]string{tc.args[0], "--addr", addr}, tc.args[1:]...)
		code, out, errs := runCLI(ctx, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		if i := strings.IndexFunc(out, isTerminalControl); i >= 0 {
			t.Errorf("%v printed the control %q at byte %d:\n%s", tc.args, out[i:i+1], i, out)
		}
		if n := strings.Count(out, "\n"); tc.lines > 0 && n != tc.lines {
			t.Errorf("%v printed %d lines, want %d (a newline in the owner forged a row):\n%s", tc.args, n, tc.lines, out)
		}
		if !strings.Contains(out, `\x1b]52`) && !strings.Contains(out, `\u001b]52`) {
			t.Errorf("%v: the escape is not shown as one:\n%s", tc.args, out)
		}
	}
}

// An error sentence is the daemon's text, or a proxy's in front of it: the
// operator sees its escapes, not their effect.
func TestErrorsEscapeControls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":"lock \"a\" is held by \u001b]52;c;cm0gLXJmIH4=\u0007\u001b[1A\nseqd: all is well","code":"held","current_token":3}`)
	}))
	defer srv.Close()
	code, _, errs := runCLI(context.Background(), "acquire", "--addr", srv.URL, "a")
	if code == 0 || strings.IndexFunc(strings.TrimSuffix(errs, "\n"), isTerminalControl) >= 0 || strings.Count(errs, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q: want one line of refusal without controls", code, errs)
	}
	if !strings.Contains(errs, `\x1b]52`) {
		t.Fatalf("stderr %q: want the escape shown as \\x1b", errs)
	}
}

// isTerminalControl reports whether a terminal would act on r rather than
// show it: C0 and C1 controls, DEL, and the bidirectional overrides.
func isTerminalControl(r rune) bool {
	return r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

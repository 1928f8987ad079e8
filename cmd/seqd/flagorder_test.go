package main

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestFlagsFirst: flags after a command's arguments move in front of them,
// with their values; "--" ends the flags; seqd lock and seqd campaign are
// left alone.
func TestFlagsFirst(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		{"seqd acquire demo --token-only", "seqd acquire --token-only demo"},
		{"seqd acquire demo --ttl 30s --owner alice", "seqd acquire --ttl 30s --owner alice demo"},
		{"seqd acquire --ttl=30s demo --token-only", "seqd acquire --ttl=30s --token-only demo"},
		{"seqd check demo 12 --token-only", "seqd check --token-only demo 12"},
		{"seqd release demo --lease-id ab --token 3", "seqd release --lease-id ab --token 3 demo"},
		{"seqd acquire --token-only demo", "seqd acquire --token-only demo"},
		{"seqd check -- -1 --token-only", "seqd check -- -1 --token-only"},
		{"seqd lock demo --wait 1s -- true", "seqd lock demo --wait 1s -- true"},
		{"seqd campaign leader --value v -- true", "seqd campaign leader --value v -- true"},
	} {
		got := strings.Join(flagsFirst(app, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlagsAfterName: `seqd acquire demo --token-only` against a daemon
// prints the token, as with the flag first; the lock runner says where its
// flags go.
func TestFlagsAfterName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--listen", "127.0.0.1:0")
	code, out, errs := runCLI(ctx, "acquire", "demo", "--addr", addr, "--token-only", "--ttl", "10s")
	if _, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64); code != 0 || err != nil {
		t.Fatalf("seqd acquire demo --addr … --token-only = %d %q %s; want a token", code, out, errs)
	}
	code, out, errs = runCLI(ctx, "check", "demo@"+strings.TrimSpace(out), "--addr", addr, "--token-only")
	if code != 0 || strings.TrimSpace(out) == "" || strings.Contains(out, "{") {
		t.Errorf("seqd check SEQUENCER --addr … --token-only = %d %q %s; want the token alone", code, out, errs)
	}
	// The control: without the reordering, the same words are refused.
	var stderr strings.Builder
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	err := app.RunContext(ctx, []string{"seqd", "acquire", "demo", "--addr", addr, "--token-only"})
	if code := exitCode(err, &stderr); code != ExitUsage {
		t.Errorf("the words as given, not reordered: exit %d %s; want %d (the parser stops at NAME)", code, stderr.String(), ExitUsage)
	}
	code, _, errs = runCLI(ctx, "lock", "demo", "--wait", "1s", "--", "true")
	if code != ExitUsage || !strings.Contains(errs, "flags go before NAME") {
		t.Errorf("seqd lock demo --wait 1s -- true = %d %q; want %d saying flags go before NAME", code, errs, ExitUsage)
	}
}

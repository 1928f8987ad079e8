package main

import (
	"context"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// seqd acquire --mode shared: two owners hold one lock together; an
// exclusive acquire is refused while they do (the control: exclusive twice
// is refused the second time too, shared twice is not); a bad mode is a
// usage error.
func TestAcquireSharedMode(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-shared-test")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, owner := range []string{"A", "B"} {
		if code, _, errs := runCLI(ctx, "acquire", "--addr", addr, "--owner", owner, "--mode", "shared", "--token-only", "data/table"); code != 0 {
			t.Fatalf("shared acquire by %s: exit %d: %s", owner, code, errs)
		}
	}
	if code, _, _ := runCLI(ctx, "acquire", "--addr", addr, "--owner", "C", "--token-only", "data/table"); code != ExitTimeout {
		t.Fatalf("exclusive acquire while shared leases hold: exit %d, want %d", code, ExitTimeout)
	}
	if code, _, errs := runCLI(ctx, "acquire", "--addr", addr, "--owner", "D", "--token-only", "data/other"); code != 0 {
		t.Fatalf("exclusive acquire of a free lock: exit %d: %s", code, errs)
	}
	if code, _, _ := runCLI(ctx, "acquire", "--addr", addr, "--owner", "E", "--token-only", "data/other"); code != ExitTimeout {
		t.Fatalf("second exclusive acquire: exit %d, want %d", code, ExitTimeout)
	}
	if code, _, _ := runCLI(ctx, "acquire", "--addr", addr, "--owner", "F", "--mode", "reader", "data/table"); code != ExitUsage {
		t.Fatalf("--mode reader: exit %d, want %d", code, ExitUsage)
	}
}

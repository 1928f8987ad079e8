package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
)

// TestInitThenKeygenRotates: the verify.keys seqd init writes is one that
// seqd keygen adds a key to, as after its own first run.
func TestInitThenKeygenRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, _, errs := runCLI(ctx, "init", "--dir", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	if err := os.Rename(filepath.Join(dir, "signing.key"), filepath.Join(dir, "signing.key.old")); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(ctx, "keygen", "--dir", dir, "--kid", "next"); code != 0 {
		t.Fatalf("keygen into seqd init's directory: exit %d %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "verify.keys"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := fence.ParseVerifyKeys(b)
	if err != nil || len(keys) != 2 {
		t.Fatalf("verify.keys after the rotation: %d keys, %v; want init's and keygen's", len(keys), err)
	}
}

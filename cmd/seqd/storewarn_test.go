package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/store"
)

// storeStartLog starts `seqd store` in process with args, waits until it
// listens, stops it and returns what it logged.
func storeStartLog(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &addrWriter{addr: make(chan string, 1)}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		run(ctx, append([]string{"seqd", "store", "--dir", t.TempDir(), "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	select {
	case <-stderr.addr:
	case <-exited:
		t.Fatalf("seqd store returned before listening\n%s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("seqd store did not log its address\n%s", stderr)
	}
	cancel()
	<-exited
	return stderr.String()
}

// TestStoreWarnsWithoutVerifyKeys: a store that admits bare tokens can be
// locked for ever by one request with the highest token; it says so at
// start and names the flag that prevents it. With --verify-keys-file it does
// not warn (the control).
func TestStoreWarnsWithoutVerifyKeys(t *testing.T) {
	out := storeStartLog(t)
	var warn string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "--verify-keys-file") {
			warn = line
		}
	}
	if warn == "" || !strings.Contains(warn, "18446744073709551615") || !strings.Contains(warn, "any client") {
		t.Fatalf("no warning naming --verify-keys-file, the poisoning token and who can send it in:\n%s", out)
	}

	_, verify, err := fence.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "verify.keys")
	if err := os.WriteFile(keys, verify, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := storeStartLog(t, "--verify-keys-file", keys); strings.Contains(out, "level=WARN") {
		t.Errorf("a store with --verify-keys-file warned:\n%s", out)
	}
}

// TestDamagedStoreLogExits65: a store whose log lost a batch refuses to
// start with exit 65 and a sentence naming the damage, not 70 (a bug).
func TestDamagedStoreLogExits65(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A log with a few batches, then its tail cut at a batch boundary and
	// store.meta left saying more was written.
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := st.Put("k", []byte(fmt.Sprint("v", i)), uint64(10*i)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	log := filepath.Join(dir, "store.log")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, b[:len(b)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(ctx, "store", "--dir", dir, "--listen", "127.0.0.1:0")
	if code != ExitDataErr || !strings.Contains(errs, "missing") || !strings.Contains(errs, "seqd store --repair") {
		t.Fatalf("seqd store on a cut log: exit %d %q, want 65 naming what is missing and the flag that repairs it", code, errs)
	}
}

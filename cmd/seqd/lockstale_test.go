package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestLockKilledSocketDirRemovedAtStart: the real binary killed with
// SIGKILL leaves its socket directory; the next seqd lock removes it.
func TestLockKilledSocketDirRemovedAtStart(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	tmp, out := t.TempDir(), t.TempDir()
	env := []string{"SEQD_ZK=" + c.ConnectString(), "TMPDIR=" + tmp, "D=" + out}
	p := startLock(t, env, "killed", "--", "sh", "-c", `echo "$$ $SEQD_LOCK_SOCKET" > "$D/sock"; exec sleep 60`)
	var child int
	var sock string
	zktest.Eventually(t, 30*time.Second, "the command to write its pid and the socket path", func() bool {
		b, err := os.ReadFile(filepath.Join(out, "sock"))
		_, err2 := fmt.Sscan(string(b), &child, &sock)
		return err == nil && err2 == nil
	})
	p.cmd.Process.Signal(syscall.SIGKILL)
	syscall.Kill(-child, syscall.SIGKILL) // the command's own process group
	p.wait(t, 10*time.Second)
	dir := filepath.Dir(sock)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("seqd lock killed with SIGKILL left no directory to clean (%v): the test cannot see the cleanup", err)
	}
	if code, _, stderr := runLockT(t, time.Minute, env, "next", "--", "true"); code != 0 {
		t.Fatalf("the next seqd lock = %d: %s", code, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed seqd lock's directory %s is still there after the next one started (%v)", dir, err)
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestLockRemovesStaleSocketDirs: `seqd lock` killed with SIGKILL leaves its
// socket directory behind. The cleanup at start removes such a directory of
// a dead pid, and keeps a live pid's, a name outside seqd's pattern, a
// symbolic link (and what it points to), and a directory of another user.
func TestLockRemovesStaleSocketDirs(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "lock.sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := deadPid(t)
	stale := mk(fmt.Sprintf("seqd-lock-%d-123", dead))
	live := mk(fmt.Sprintf("seqd-lock-%d-456", os.Getpid()))
	other := mk("seqd-lock-notapid-1")
	target := mk("elsewhere")
	link := filepath.Join(tmp, fmt.Sprintf("seqd-lock-%d-789", dead))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	var foreign string
	if os.Geteuid() == 0 {
		foreign = mk(fmt.Sprintf("seqd-lock-%d-999", dead))
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}

	removed := removeStaleLockDirs(tmp)

	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the directory of dead pid %d is still there (%v)", dead, err)
	}
	for _, kept := range []string{live, other, target, filepath.Join(target, "lock.sock"), link, foreign} {
		if kept == "" {
			continue
		}
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
	if removed != 1 {
		t.Errorf("removed %d directories, want 1", removed)
	}
}

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

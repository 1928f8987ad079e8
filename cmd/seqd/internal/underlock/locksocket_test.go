package underlock

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

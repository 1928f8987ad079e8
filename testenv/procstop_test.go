package testenv

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// waitStopped returns only once every process of a group is stopped, and
// reports an error for a process that keeps running.
func TestWaitStopped(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		cmd.Wait()
	})
	var pids []int
	for start := time.Now(); len(pids) < 3; {
		var err error
		if pids, err = groupPIDs(pgid); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("group %d has processes %v, want the shell and its two sleeps", pgid, pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Contains(pids, pgid) {
		t.Fatalf("group %d lists %v, without its leader", pgid, pids)
	}
	// A running group does not pass for a stopped one.
	if err := waitStopped(pids, 50*time.Millisecond); err == nil {
		t.Fatal("waitStopped returned nil for running processes")
	}
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := waitStopped(pids, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if ok, err := allStopped(pid); err != nil || !ok {
			t.Errorf("process %d: stopped = %v, %v after waitStopped", pid, ok, err)
		}
	}
	syscall.Kill(-pgid, syscall.SIGCONT)
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// semaphoreRun starts n `seqd lock -n limit` processes at once, each
// running a command that marks itself present in a directory for a while,
// and samples the directory until they have all exited: it returns the
// most commands seen running at once.
func semaphoreRun(t *testing.T, c *testenv.Cluster, name string, limit, n int) int {
	t.Helper()
	dir := t.TempDir()
	env := []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}
	procs := make([]*lockProc, n)
	for i := range procs {
		procs[i] = startLock(t, env, "-n", fmt.Sprint(limit), "--wait", "60s", name, "--",
			"sh", "-c", `touch "$D/$$"; sleep 0.3; rm "$D/$$"`)
	}
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	most := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if es, err := os.ReadDir(dir); err == nil && len(es) > most {
				most = len(es)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for i, p := range procs {
		if code := p.wait(t, 90*time.Second); code != 0 {
			t.Errorf("seqd lock %d exited %d; stderr:\n%s", i, code, p.stderr.String())
		}
	}
	close(done)
	wg.Wait()
	return most
}

// seqd lock -n N: never more than N commands at once across processes, and
// N are reached. The control runs a semaphore of twice the limit: the
// sampling sees more than N.
func TestLockSemaphore(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	const limit = 2
	most := semaphoreRun(t, c, "sem", limit, 6)
	t.Logf("-n %d: at most %d commands at once", limit, most)
	if most > limit {
		t.Fatalf("%d commands ran at once under -n %d", most, limit)
	}
	if most < limit {
		t.Fatalf("at most %d commands at once: -n %d never reached", most, limit)
	}
	if most := semaphoreRun(t, c, "sem-control", 2*limit, 6); most <= limit {
		t.Fatalf("control: -n %d never ran more than %d at once; the sampling could not fail", 2*limit, most)
	}
}

// A holder of the only slot killed with SIGKILL frees it once ZooKeeper
// expires its session; while it lives, another seqd lock -n 1 times out.
func TestLockSemaphoreSlotFreedOnKill(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	dir := t.TempDir()
	env := []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}
	holder := startLock(t, env, "-n", "1", "--session-timeout", "2s", "slot", "--",
		"sh", "-c", `touch "$D/running"; exec sleep 1000`)
	zktest.Eventually(t, 30*time.Second, "the holder's command starts", func() bool { return fileExists(filepath.Join(dir, "running")) })
	if code, _, stderr := runLockT(t, 30*time.Second, env, "-n", "1", "--wait", "1s", "slot", "--", "true"); code != ExitTimeout {
		t.Fatalf("with the slot held: exit %d, want %d; stderr:\n%s", code, ExitTimeout, stderr)
	}
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if code, _, stderr := runLockT(t, 60*time.Second, env, "-n", "1", "--wait", "30s", "slot", "--", "true"); code != 0 {
		t.Fatalf("after the holder was killed: exit %d; stderr:\n%s", code, stderr)
	}
	t.Logf("slot taken %v after the holder was killed (session timeout 2s)", time.Since(killed).Round(time.Millisecond))
}

// -n out of range, with --lock-delay or with version tokens is a usage
// error before ZooKeeper is touched; the control, a valid -n, runs.
func TestLockSemaphoreUsage(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	env := []string{"SEQD_ZK=" + c.ConnectString()}
	for _, args := range [][]string{
		{"-n", "0"},
		{"-n", "-3"},
		{"-n", "2", "--lock-delay", "1s"},
		{"-n", "2", "--token-mode", "version"},
	} {
		code, _, stderr := runLockT(t, 30*time.Second, env, append(args, "u", "--", "true")...)
		if code != ExitUsage {
			t.Errorf("seqd lock %q: exit %d, want %d; stderr:\n%s", args, code, ExitUsage, stderr)
		}
	}
	if code, _, stderr := runLockT(t, 30*time.Second, env, "-n", "2", "u", "--", "true"); code != 0 {
		t.Fatalf("seqd lock -n 2: exit %d; stderr:\n%s", code, stderr)
	}
}

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// `seqd lock --lock-delay` killed with SIGKILL while holding: once
// ZooKeeper has expired its session, another `seqd lock` waits out the
// delay before it runs its command. The control ends the first one's
// command normally (a clean release): the second runs at once.
func TestLockDelayAfterKill(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	const delay = 2 * time.Second
	for _, tc := range []struct {
		name    string
		kill    bool
		delayed bool
	}{
		{"killed", true, true},
		{"exits", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := "delay-" + tc.name
			env := []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}
			first := startLock(t, env, "--lock-delay", delay.String(), "--session-timeout", "2s", name, "--",
				"sh", "-c", `touch "$D/running"; while [ ! -e "$D/go" ]; do sleep 0.02; done`)
			zktest.Eventually(t, 30*time.Second, "the first command starts", func() bool { return fileExists(filepath.Join(dir, "running")) })
			second := startLock(t, env, "--wait", "60s", name, "--", "true")
			waitContenders(t, conn, name, 2, 30*time.Second)
			if tc.kill {
				if err := first.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			first.wait(t, 30*time.Second)
			// The first holder's node goes at once, or when its session
			// expires; the second may be done by then.
			zktest.Eventually(t, 30*time.Second, "the first holder's node to go", func() bool {
				ch, _, err := conn.Children(zklock.DefaultRoot + "/" + name)
				return err == nil && len(ch) < 2 || errors.Is(err, zk.ErrNoNode)
			})
			gone := time.Now()
			if code := second.wait(t, 30*time.Second); code != 0 {
				t.Fatalf("second seqd lock exited %d; stderr:\n%s", code, second.stderr.String())
			}
			got := time.Since(gone)
			t.Logf("the second command ran %v after the first holder's node went", got.Round(time.Millisecond))
			if tc.delayed && got < delay-100*time.Millisecond {
				t.Fatalf("ran %v after the holder was killed, want at least the lock-delay %v", got, delay)
			}
			if !tc.delayed && got > delay/2 {
				t.Fatalf("ran %v after a clean release, want at once", got)
			}
		})
	}
}

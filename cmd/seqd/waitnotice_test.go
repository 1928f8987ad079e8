package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestLockSaysWhomItWaitsFor: a seqd lock that waits says on stderr, after
// a second, since when it waits and for whom (the holder's owner, its
// command and token); its timeout names the lock it waited for, also in a
// set of several. A lock that is free says nothing of the kind (the
// control: the notice is not printed regardless).
func TestLockSaysWhomItWaitsFor(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	env := []string{"SEQD_ZK=" + c.ConnectString()}
	holder := startLock(t, env, "held-b", "--", "sleep", "60")
	conn := zkConn(t, c)
	zktest.Eventually(t, 30*time.Second, "the holder to take held-b", func() bool {
		return len(contenders(t, conn, "held-b")) == 1
	})

	code, _, stderr := runLockT(t, time.Minute, env, "--wait", "2500ms", "held-b", "--", "true")
	notice := regexp.MustCompile(`(?m)^seqd: lock held-b: waiting since \d\d:\d\d:\d\d for lock held-b, held by \S+@\S+:\d+ running "sleep 60" with token \d+ \(queued at \d\d:\d\d:\d\d\)$`)
	if code != ExitTimeout || !notice.MatchString(stderr) {
		t.Errorf("seqd lock on a held lock = %d, stderr %q; want %d and a line matching %s", code, stderr, ExitTimeout, notice)
	}
	if !strings.Contains(stderr, "lock held-b was not acquired within 2.5s: it waited for lock held-b, held by ") {
		t.Errorf("the timeout %q does not name the lock and its holder", stderr)
	}

	code, _, stderr = runLockT(t, time.Minute, env, "--wait", "2500ms", "set-a", "held-b", "set-c", "--", "true")
	if code != ExitTimeout || !strings.Contains(stderr, "locks set-a, held-b, set-c were not acquired within 2.5s: it waited for lock held-b, held by ") {
		t.Errorf("seqd lock on a set with one held lock = %d, stderr %q; want %d naming lock held-b", code, stderr, ExitTimeout)
	}
	if strings.Contains(stderr, "lock set-a,") || strings.Contains(stderr, "lock set-c,") {
		t.Errorf("the set's message names locks nobody holds: %q", stderr)
	}

	code, _, stderr = runLockT(t, time.Minute, env, "free", "--", "sleep", "1.5")
	if code != 0 || strings.Contains(stderr, "waiting") {
		t.Errorf("seqd lock on a free lock = %d, stderr %q; want 0 and no notice", code, stderr)
	}
	holder.cmd.Process.Kill()
}

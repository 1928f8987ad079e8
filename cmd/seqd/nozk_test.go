package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// With nothing at --zk, seqd lock and seqd serve say in one sentence that
// they cannot reach ZooKeeper there, and which flag to give; no Go context
// error ("context deadline exceeded").
func TestNoZooKeeperSaysWhatToDo(t *testing.T) {
	zkAddr := closedPort(t)
	check := func(what string, code int, errs string) {
		t.Helper()
		if code != ExitUnavailable {
			t.Errorf("%s: exit %d %q, want %d", what, code, errs, ExitUnavailable)
		}
		last := strings.TrimSpace(errs)
		last = last[strings.LastIndex(last, "\n")+1:]
		for _, want := range []string{"cannot reach ZooKeeper at " + zkAddr, "--zk", "SEQD_ZK"} {
			if !strings.Contains(last, want) {
				t.Errorf("%s: %q does not say %q", what, last, want)
			}
		}
		if strings.Contains(errs, "context deadline exceeded") {
			t.Errorf("%s: %q says context deadline exceeded", what, errs)
		}
	}
	code, _, errs := runLockT(t, time.Minute, []string{"SEQD_ZK=" + zkAddr}, "--session-timeout", "2s", "jobs/a", "--", "true")
	check("seqd lock", code, errs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, _, errs = runCLI(ctx, "serve", "--zk", zkAddr, "--session-timeout", "2s", "--listen", "127.0.0.1:0")
	check("seqd serve", code, errs)
}

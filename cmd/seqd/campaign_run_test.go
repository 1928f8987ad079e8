package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestCampaignRunsCommandWhileLeader: two `seqd campaign` on one election;
// only the leader's command runs; SIGTERM to the leader's seqd ends its
// command, resigns at once, and the other's command starts with a higher
// term, well within the session timeout.
func TestCampaignRunsCommandWhileLeader(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	dir := t.TempDir()
	const script = `trap 'exit 0' TERM; echo "$SEQD_TERM $SEQD_ELECTION" > "$D/$WHO.tmp" && mv "$D/$WHO.tmp" "$D/$WHO"; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`
	start := func(who string) *lockProc {
		return startRunner(t, "campaign", []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir, "WHO=" + who},
			"--session-timeout", "10s", "--value", who, "scheduler", "--", "sh", "-c", script)
	}
	read := func(who string) (uint64, bool) {
		b, err := os.ReadFile(filepath.Join(dir, who))
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) != 2 || f[1] != "scheduler" {
			t.Fatalf("%s's command saw %q, want its term and SEQD_ELECTION=scheduler", who, b)
		}
		term, err := strconv.ParseUint(f[0], 10, 64)
		return term, err == nil
	}
	a := start("a")
	zktest.Eventually(t, 30*time.Second, "a's command to run", func() bool { _, ok := read("a"); return ok })
	b := start("b")
	// b says whom it waits for once it has waited a second as a candidate
	// behind a: by then its command must not have run.
	waiting := regexp.MustCompile(`waiting since \d\d:\d\d:\d\d for leader "a" of election scheduler`)
	zktest.Eventually(t, 30*time.Second, "b to say it waits for a, or its command to run", func() bool {
		_, ran := read("b")
		return ran || waiting.MatchString(b.stderr.String())
	})
	if _, ok := read("b"); ok {
		t.Fatalf("b's command runs while a leads; b's stderr:\n%s", b.stderr.String())
	}
	termA, _ := read("a")
	stopped := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	var termB uint64
	zktest.Eventually(t, 30*time.Second, "b's command to run", func() bool {
		var ok bool
		termB, ok = read("b")
		return ok
	})
	handover := time.Since(stopped)
	if termB <= termA {
		t.Fatalf("b's term %d is not above a's %d", termB, termA)
	}
	if code := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("a's seqd exit = %d, want its command's 0", code)
	}
	t.Logf("hand-over after SIGTERM: %v (%.3f of the 10s session timeout); terms %d -> %d", handover.Round(time.Millisecond), handover.Seconds()/10, termA, termB)
	if handover > 5*time.Second {
		t.Errorf("hand-over took %v: the leader did not resign", handover)
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.wait(t, 10*time.Second)
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// seqd lock A B C -- CMD takes the three locks at once: CMD gets the first
// lock's variables and every lock's sequencer in SEQD_SEQUENCERS (one
// token: the czxid of the transaction that queued the set), and its socket
// lists them; meanwhile another `seqd lock B --wait 0` finds B held. When
// CMD exits every lock is released. Losing one lock of the set (its
// contender deleted) kills CMD and exits 76.
func TestLockSeveralNames(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	dir := t.TempDir()
	env := []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}
	names := []string{"acct-a", "acct-b", "acct-c"}
	p := startLock(t, env, append(names, "--", "sh", "-c",
		`printf '%s\n%s\n%s\n' "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER" "$SEQD_SEQUENCERS" "$SEQD_LOCK_SOCKET" > "$D/env.tmp"; mv "$D/env.tmp" "$D/env"; while [ ! -e "$D/stop" ]; do sleep 0.02; done`)...)
	var lines []string
	zktest.Eventually(t, 30*time.Second, "the command to write its environment", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "env"))
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return err == nil && len(lines) == 3
	})
	f := strings.Fields(lines[0])
	if len(f) != 3 || f[0] != "acct-a" || f[2] != "acct-a@"+f[1] {
		t.Fatalf("SEQD_LOCK SEQD_TOKEN SEQD_SEQUENCER = %q, want the first lock's", lines[0])
	}
	want := "acct-a@" + f[1] + " acct-b@" + f[1] + " acct-c@" + f[1]
	if lines[1] != want {
		t.Errorf("SEQD_SEQUENCERS = %q, want %q", lines[1], want)
	}
	st, err := askLockSocket(lines[2])
	if err != nil || !st.Held || st.Sequencer != "acct-a@"+f[1] || strings.Join(st.Sequencers, " ") != want {
		t.Errorf("lock socket = %+v, %v; want held, with every sequencer", st, err)
	}
	if code, _, stderr := runLockT(t, time.Minute, env, "--wait", "0", "acct-b", "--", "true"); code != ExitTimeout {
		t.Errorf("seqd lock acct-b --wait 0 while the set holds it: exit %d, want %d; stderr: %s", code, ExitTimeout, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("exit %d, want 0; stderr: %s", code, p.stderr.String())
	}
	for _, name := range names {
		if ch := contenders(t, conn, name); len(ch) != 0 {
			t.Errorf("contenders of %s left behind: %v", name, ch)
		}
	}

	// The loss of one lock of the set.
	os.Remove(filepath.Join(dir, "env"))
	p = startLock(t, env, "--kill-grace", "5s", "lost-a", "lost-b", "--", "sh", "-c",
		`trap 'exit 3' TERM; touch "$D/env"; while :; do sleep 0.02; done`)
	zktest.Eventually(t, 30*time.Second, "the command to start", func() bool { return fileExists(filepath.Join(dir, "env")) })
	ch := contenders(t, conn, "lost-b")
	if len(ch) != 1 {
		t.Fatalf("contenders of lost-b = %v, want one", ch)
	}
	if err := conn.Delete(zklock.DefaultRoot+"/lost-b/"+ch[0], -1); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != ExitLockLost {
		t.Errorf("exit %d after one lock of the set was lost, want %d; stderr: %s", code, ExitLockLost, p.stderr.String())
	}
	if s := p.stderr.String(); !strings.Contains(s, "lost-b") {
		t.Errorf("stderr %q does not name the lock lost", s)
	}
	zktest.Eventually(t, 10*time.Second, "the set's other contender deleted", func() bool { return len(contenders(t, conn, "lost-a")) == 0 })
}

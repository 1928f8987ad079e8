package kube_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/client"
)

// candidate starts the candidate id of election (a process of its own).
func candidate(t *testing.T, daemon, store, election, id string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(withoutSeqdVars(os.Environ()),
		envCandidate+"="+id, envElection+"="+election, envStore+"="+store, "SEQD_ADDR="+daemon)
	return start(t, "candidate "+id, cmd)
}

// leads waits for p's "leading ID TERM" line, checks that the daemon names
// id as the election's one leader in that term, and returns the term.
func leads(t *testing.T, c *client.Client, p *proc, election, id string, within time.Duration) uint64 {
	t.Helper()
	line := p.expect(t, "leading "+id+" ", within)
	term, err := strconv.ParseUint(strings.TrimPrefix(line, "leading "+id+" "), 10, 64)
	if err != nil {
		t.Fatalf("%s printed %q: %v", p.name, line, err)
	}
	st, err := c.Election(context.Background(), election)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader == nil || st.Leader.Value != id || st.Leader.Term != term {
		t.Fatalf("%s leads in term %d, but the daemon says the leader is %+v", id, term, st.Leader)
	}
	return term
}

func storeValue(t *testing.T, store string) (string, string) {
	t.Helper()
	resp, err := http.Get(store + "/v1/kv/leader")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Header.Get("Fencing-Max-Token")
}

// TestElectorsLeadOneAtATimeFencedByTerm: two client-go electors in
// processes of their own on one daemon. The first leads and writes; it is
// paused (SIGSTOP) just after deciding to write again, past its lease; the
// other is elected with a higher term and writes; the first wakes and sends
// its write, stamped with its old term, which the fenced store refuses, and
// its leadership's context ends with the seqd lease's loss as the cause.
// Then the leader is killed (SIGKILL) and a third candidate is elected with
// a higher term still.
func TestElectorsLeadOneAtATimeFencedByTerm(t *testing.T) {
	daemon, store := startDaemon(t), startStore(t, "full")
	c, err := client.New(daemon, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	const election = "kube-fenced"
	a := candidate(t, daemon, store, election, "a")
	t1 := leads(t, c, a, election, "a", 30*time.Second)
	b := candidate(t, daemon, store, election, "b")

	a.send(t, "write from-a")
	if got := a.expect(t, "wrote ", 10*time.Second); !strings.HasPrefix(got, "wrote 200") {
		t.Fatalf("the leader's write: %s, want 200", got)
	}
	a.send(t, "prepare")
	a.expect(t, "prepared ", 10*time.Second)
	a.signal(t, syscall.SIGSTOP)

	t2 := leads(t, c, b, election, "b", 30*time.Second)
	if t2 <= t1 {
		t.Fatalf("b leads in term %d after a's term %d: terms must rise", t2, t1)
	}
	b.send(t, "write from-b")
	if got := b.expect(t, "wrote ", 10*time.Second); !strings.HasPrefix(got, "wrote 200") {
		t.Fatalf("the new leader's write: %s, want 200", got)
	}

	a.signal(t, syscall.SIGCONT)
	a.send(t, "late late-from-a")
	if got := a.expect(t, "late ", 10*time.Second); !strings.HasPrefix(got, "late 409") || !strings.Contains(got, "stale_token") {
		t.Errorf("the old leader's late write: %s, want 409 stale_token", got)
	}
	if v, max := storeValue(t, store); v != "from-b" || max != strconv.FormatUint(t2, 10) {
		t.Errorf("the store holds %q with max token %s, want %q with %d", v, max, "from-b", t2)
	}
	ended := a.expect(t, "ended a ", 10*time.Second)
	if strings.Contains(ended, "context canceled") {
		t.Errorf("a's leadership ended with %q: want the seqd lease's end as the cause, not client-go's cancellation", ended)
	}
	a.expect(t, "stopped a", 10*time.Second)

	b.signal(t, syscall.SIGKILL)
	cand := candidate(t, daemon, store, election, "c")
	t3 := leads(t, c, cand, election, "c", 30*time.Second)
	if t3 <= t2 {
		t.Fatalf("c leads in term %d after b's term %d: terms must rise", t3, t2)
	}
	cand.send(t, "write from-c")
	if got := cand.expect(t, "wrote ", 10*time.Second); !strings.HasPrefix(got, "wrote 200") {
		t.Fatalf("the third leader's write: %s, want 200", got)
	}
	if v, _ := storeValue(t, store); v != "from-c" {
		t.Errorf("the store holds %q, want %q", v, "from-c")
	}
}

package zklock

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv/zktest"
)

// startLineProc starts cmd and collects its stdout lines, like startKazoo.
func startLineProc(t *testing.T, what string, cmd *exec.Cmd) *kazoo {
	t.Helper()
	k := &kazoo{cmd: cmd, lines: make(chan string, 16), stderr: &syncBuffer{}}
	cmd.Stderr = k.stderr
	var err error
	if k.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(k.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-read
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", what, k.stderr.String())
		}
	})
	return k
}

// curatorClasspath compiles testdata/CuratorLeader.java against Debian's
// Curator jars (libcurator-recipes-java), or skips.
func curatorClasspath(t *testing.T) string {
	t.Helper()
	const jars = "/usr/share/java/"
	cp := []string{}
	for _, j := range []string{"curator-client", "curator-framework", "curator-recipes", "zookeeper", "zookeeper-jute", "guava", "slf4j-api", "slf4j-nop"} {
		cp = append(cp, jars+j+".jar")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac not installed")
	}
	if out, err := exec.Command("test", "-f", jars+"curator-recipes.jar").CombinedOutput(); err != nil {
		t.Skipf("Curator not installed (apt-get install libcurator-recipes-java, as scripts/deps.sh does): %s", out)
	}
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/CuratorLeader.java")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-d", dir, "-cp", strings.Join(cp, ":"), src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return strings.Join(append(cp, dir), ":")
}

// interopElection checks that a foreign candidate and ours on one path
// take turns: it queues behind our leader and leads once we resign (its
// value then is the leader's), and our candidate queues behind it and
// leads with a higher term once it resigns.
func interopElection(t *testing.T, e *Election, start func() *kazoo, theirID string) {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	ours, err := e.Campaign(ctx, []byte("ours"))
	if err != nil {
		t.Fatal(err)
	}
	k := start()
	zktest.Eventually(t, 60*time.Second, "their candidate to queue", func() bool {
		l, err := e.Leader(ctx)
		return err == nil && l.Candidates == 2
	})
	select {
	case l := <-k.lines:
		t.Fatalf("they printed %q while we lead", l)
	case <-time.After(stillBlocked):
	}
	if err := ours.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if got := k.line(t, 30*time.Second); got != "leader" {
		t.Fatalf("they printed %q after we resigned, want leader", got)
	}
	theirs, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !theirs.Elected || string(theirs.Value) != theirID || theirs.Term <= ours.Term {
		t.Fatalf("Leader() while they lead = %+v (value %q), want their id %q and a term above %d", theirs, theirs.Value, theirID, ours.Term)
	}
	type res struct {
		l   *Leadership
		err error
	}
	won := make(chan res, 1)
	go func() {
		l, err := e.Campaign(ctx, []byte("ours again"))
		won <- res{l, err}
	}()
	zktest.Eventually(t, 10*time.Second, "our candidate to queue", func() bool {
		l, err := e.Leader(ctx)
		return err == nil && l.Candidates == 2
	})
	select {
	case r := <-won:
		t.Fatalf("Campaign returned (%v) while they lead", r.err)
	case <-time.After(stillBlocked):
	}
	if _, err := io.WriteString(k.stdin, "resign\n"); err != nil {
		t.Fatal(err)
	}
	r := <-won
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.l.Term <= theirs.Term {
		t.Fatalf("our term %d after theirs %d", r.l.Term, theirs.Term)
	}
	if err := r.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInteropElectionKazoo(t *testing.T) {
	needKazoo(t)
	c := shared.Get(t)
	e := election(t, dial(t, c.Servers(), Options{}), "interop/kazoo")
	interopElection(t, e, func() *kazoo {
		cmd := exec.CommandContext(context.Background(), systemPython, "testdata/kazoo_election.py", c.ConnectString(), e.Path(), "kazoo-candidate")
		return startLineProc(t, "kazoo", cmd)
	}, "kazoo-candidate")
}

func TestInteropElectionCurator(t *testing.T) {
	cp := curatorClasspath(t)
	c := shared.Get(t)
	e := election(t, dial(t, c.Servers(), Options{}), "interop/curator")
	interopElection(t, e, func() *kazoo {
		cmd := exec.Command("java", "-cp", cp, "CuratorLeader", c.ConnectString(), e.Path(), "curator-candidate")
		return startLineProc(t, "curator", cmd)
	}, "curator-candidate")
}

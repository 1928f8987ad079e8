package zklock

import (
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv/zktest"
)

// curatorLeaderClasspath compiles testdata/CuratorLeader.java against Debian's
// Curator jars (libcurator-recipes-java); it fails, never skips, without them.
func curatorLeaderClasspath(t *testing.T) string {
	t.Helper()
	const jars = "/usr/share/java/"
	cp := []string{}
	for _, j := range []string{"curator-client", "curator-framework", "curator-recipes", "zookeeper", "zookeeper-jute", "guava", "slf4j-api", "slf4j-nop"} {
		cp = append(cp, jars+j+".jar")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Fatal("javac not installed: the JDK is needed for the Curator interop test")
	}
	if out, err := exec.Command("test", "-f", jars+"curator-recipes.jar").CombinedOutput(); err != nil {
		t.Fatalf("Curator not installed (apt-get install libcurator-recipes-java, as scripts/deps.sh does): %s", out)
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
func interopElection(t *testing.T, e *Election, start func() *peer, theirID string) {
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
	t.Parallel()
	needKazoo(t)
	c := shared.Get(t)
	e := election(t, dial(t, c.Servers(), Options{}), "interop/kazoo")
	interopElection(t, e, func() *peer {
		return startPeer(t, "kazoo", "", systemPython, "testdata/kazoo_election.py", c.ConnectString(), e.Path(), "kazoo-candidate")
	}, "kazoo-candidate")
}

func TestInteropElectionCurator(t *testing.T) {
	t.Parallel()
	cp := curatorLeaderClasspath(t)
	c := shared.Get(t)
	e := election(t, dial(t, c.Servers(), Options{}), "interop/curator")
	interopElection(t, e, func() *peer {
		return startPeer(t, "curator", "", "java", "-cp", cp, "CuratorLeader", c.ConnectString(), e.Path(), "curator-candidate")
	}, "curator-candidate")
}

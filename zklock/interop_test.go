package zklock

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv/zktest"
)

// stillBlocked is how long a blocked contender must stay blocked for the
// test to believe it is waiting (a bound, not an ordering sleep).
const stillBlocked = 300 * time.Millisecond

// rawConn is a plain go-zookeeper connection with a session, for other
// recipes on the same path.
func rawConn(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() { // drain, so that go-zookeeper never blocks on us
					for range events {
					}
				}()
				return conn
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %v", servers)
		}
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// go-zookeeper's zk.Lock and zklock on one path exclude each other, in both
// directions.
func TestInteropZkLock(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	m := mutex(t, s, "interop/zklock")
	theirs := zk.NewLock(rawConn(t, c.Servers()), m.Path(), zk.WorldACL(zk.PermAll))

	t.Run("they hold", func(t *testing.T) {
		if err := theirs.Lock(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquire while zk.Lock holds = %v, want ErrHeld", err)
		}
		type res struct {
			g   *Grant
			err error
		}
		got := make(chan res, 1)
		ctx := ctxT(t, 30*time.Second)
		go func() {
			g, err := m.Acquire(ctx)
			got <- res{g, err}
		}()
		zktest.Eventually(t, 10*time.Second, "our contender to queue", func() bool { return len(children(t, s, m.Path())) == 2 })
		select {
		case r := <-got:
			t.Fatalf("Acquire returned (%v) while zk.Lock holds", r.err)
		case <-time.After(stillBlocked):
		}
		if err := theirs.Unlock(); err != nil {
			t.Fatal(err)
		}
		var r res
		select {
		case r = <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("Acquire not granted after zk.Lock unlocked")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.g.Token == 0 {
			t.Error("token 0")
		}
		if err := r.g.Release(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("we hold", func(t *testing.T) {
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		locked := make(chan error, 1)
		go func() { locked <- theirs.Lock() }()
		zktest.Eventually(t, 10*time.Second, "zk.Lock's contender to queue", func() bool { return len(children(t, s, m.Path())) == 2 })
		select {
		case err := <-locked:
			t.Fatalf("zk.Lock returned (%v) while we hold", err)
		case <-time.After(stillBlocked):
		}
		if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-locked:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("zk.Lock not granted after we released")
		}
		if _, err := m.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquire while zk.Lock holds = %v, want ErrHeld", err)
		}
		if err := theirs.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// peer is a running lock script of another recipe: testdata/kazoo_lock.py
// or testdata/CuratorLock.java. Both take try|hold HOSTS PATH and answer in
// lines on stdout.
type peer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *zktest.Buffer
}

const systemPython = "/usr/bin/python3" // Debian's, where python3-kazoo lives

// curatorClasspath is Debian's libcurator-recipes-java; its manifest names
// the framework, the client and ZooKeeper's jars.
const curatorClasspath = "/usr/share/java/curator-recipes.jar"

func needKazoo(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(systemPython, "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Fatalf("kazoo not installed (%s -c 'import kazoo': %v %s); apt-get install python3-kazoo, as make test does", systemPython, err, strings.TrimSpace(string(out)))
	}
}

func needCurator(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(curatorClasspath); err != nil {
		t.Fatalf("Curator not installed (%v); apt-get install libcurator-recipes-java, as scripts/deps.sh does", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("no java: %v", err)
	}
}

// peerStarter starts a peer of one recipe in mode (try or hold) on path.
type peerStarter func(t *testing.T, mode, hosts, path string) *peer

// kazooPeer starts kazoo_lock.py; auth ("user:password" or "") is the
// digest identity it authenticates with and puts in its nodes' ACL.
func kazooPeer(auth string) peerStarter {
	return func(t *testing.T, mode, hosts, path string) *peer {
		t.Helper()
		return startPeer(t, "kazoo "+mode, auth, systemPython, "testdata/kazoo_lock.py", mode, hosts, path)
	}
}

// curatorPeer starts CuratorLock.java (an InterProcessMutex), with auth as
// for kazooPeer.
func curatorPeer(auth string) peerStarter {
	return func(t *testing.T, mode, hosts, path string) *peer {
		t.Helper()
		return startPeer(t, "curator "+mode, auth, "java", "-cp", curatorClasspath, "testdata/CuratorLock.java", mode, hosts, path)
	}
}

func startPeer(t *testing.T, label, auth, bin string, args ...string) *peer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SEQD_TEST_ZK_AUTH="+auth)
	k := &peer{cmd: cmd, lines: make(chan string, 16), stderr: &zktest.Buffer{}}
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
		cancel()
		<-read
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", label, k.stderr.String())
		}
	})
	return k
}

// line waits for the peer's next output line.
func (k *peer) line(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-k.lines:
		if !ok {
			t.Fatalf("peer exited without output; stderr:\n%s", k.stderr.String())
		}
		return l
	case <-time.After(d):
		t.Fatalf("no output from peer within %v; stderr:\n%s", d, k.stderr.String())
	}
	return ""
}

// kazoo's Lock(extra_lock_patterns=["-lock-"]) and zklock on one path
// exclude each other, in both directions.
func TestInteropKazoo(t *testing.T) {
	t.Parallel()
	needKazoo(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	testExclusion(t, s, mutex(t, s, "interop/kazoo"), c.ConnectString(), kazooPeer(""))
}

// Curator's InterProcessMutex and zklock on one path exclude each other, in
// both directions.
func TestInteropCurator(t *testing.T) {
	t.Parallel()
	needCurator(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	testExclusion(t, s, mutex(t, s, "interop/curator"), c.ConnectString(), curatorPeer(""))
}

// With one digest identity, under the creator ACL, kazoo and Curator still
// exclude zklock and are excluded by it: their contenders go under the
// lock node that zklock created with that identity's ACL.
func TestInteropDigestAuth(t *testing.T) {
	const auth = "interop:s3cret-interop"
	c := shared.Get(t)
	da, _ := ParseDigestAuth(auth)
	s := dial(t, c.Servers(), Options{Auth: &da, ACL: ACLCreator})
	// A root of its own, which this identity creates: under the creator
	// ACL a root that others made open is refused.
	root := WithRoot("/interop-auth-" + newGUID())
	t.Run("kazoo", func(t *testing.T) {
		needKazoo(t)
		testExclusion(t, s, mutex(t, s, "interop-auth/kazoo", root), c.ConnectString(), kazooPeer(auth))
	})
	t.Run("curator", func(t *testing.T) {
		needCurator(t)
		testExclusion(t, s, mutex(t, s, "interop-auth/curator", root), c.ConnectString(), curatorPeer(auth))
	})
}

// testExclusion checks that m and a peer of another recipe on m's path
// exclude each other in both directions.
func testExclusion(t *testing.T, s *Session, m *Mutex, hosts string, start peerStarter) {
	t.Helper()
	testExclusionOf(t, s, mutexLocker{m}, m.Path(), hosts, start)
}

// releaser is a grant as testExclusionOf releases it.
type releaser interface{ Release(context.Context) error }

// locker is what testExclusionOf acquires: a Mutex, or a MultiMutex one of
// whose locks is at lockPath.
type locker interface {
	Acquire(context.Context) (releaser, error)
	TryAcquire(context.Context) (releaser, error)
}

type mutexLocker struct{ m *Mutex }

func (l mutexLocker) Acquire(ctx context.Context) (releaser, error)    { return l.m.Acquire(ctx) }
func (l mutexLocker) TryAcquire(ctx context.Context) (releaser, error) { return l.m.TryAcquire(ctx) }

// testExclusionOf checks that m and a peer of another recipe on lockPath
// exclude each other in both directions.
func testExclusionOf(t *testing.T, s *Session, m locker, lockPath, hosts string, start peerStarter) {
	t.Helper()
	// We hold: the peer's non-blocking attempt fails, its blocking one
	// waits for our release.
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := start(t, "try", hosts, lockPath).line(t, 60*time.Second); !strings.EqualFold(got, "false") {
		t.Fatalf("peer's try while we hold printed %q, want false", got)
	}
	if ch := children(t, s, lockPath); len(ch) != 1 {
		t.Fatalf("children after the peer's failed try = %v, want only ours", ch)
	}
	k := start(t, "hold", hosts, lockPath)
	zktest.Eventually(t, 60*time.Second, "the peer's contender to queue", func() bool { return len(children(t, s, lockPath)) == 2 })
	select {
	case l := <-k.lines:
		t.Fatalf("peer printed %q while we hold", l)
	case <-time.After(stillBlocked):
	}
	if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := k.line(t, 20*time.Second); got != "held" {
		t.Fatalf("peer printed %q after our release, want held", got)
	}

	// The peer holds: our TryAcquire fails, our Acquire waits for its
	// release.
	if _, err := m.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire while the peer holds = %v, want ErrHeld", err)
	}
	type res struct {
		g   releaser
		err error
	}
	got := make(chan res, 1)
	ctx := ctxT(t, 30*time.Second)
	go func() {
		g, err := m.Acquire(ctx)
		got <- res{g, err}
	}()
	zktest.Eventually(t, 10*time.Second, "our contender to queue", func() bool { return len(children(t, s, lockPath)) == 2 })
	select {
	case r := <-got:
		t.Fatalf("Acquire returned (%v) while the peer holds", r.err)
	case <-time.After(stillBlocked):
	}
	if _, err := io.WriteString(k.stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	if l := k.line(t, 20*time.Second); l != "released" {
		t.Fatalf("peer printed %q, want released", l)
	}
	var r res
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("Acquire not granted after the peer released")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := r.g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// The control: with nobody holding, the peer's try succeeds, so the
	// false above was exclusion and not a broken script.
	if got := start(t, "try", hosts, lockPath).line(t, 60*time.Second); !strings.EqualFold(got, "true") {
		t.Fatalf("peer's try on a free lock printed %q, want true", got)
	}
}

package testenv_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// echoServer echoes every connection and counts the bytes it received.
type echoServer struct {
	l  net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	n  int
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{l: l}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					s.mu.Lock()
					s.n += n
					s.mu.Unlock()
					if err != nil {
						return
					}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); s.wg.Wait() })
	return s
}

func (s *echoServer) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads its echo within d; it returns the error of
// the read (os.ErrDeadlineExceeded when nothing came back).
func roundTrip(c net.Conn, msg string, d time.Duration) error {
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echo garbled: " + string(buf))
	}
	return nil
}

func TestProxyStates(t *testing.T) {
	echo := startEcho(t)
	p := testenv.NewProxy("test")
	t.Cleanup(p.Close)
	addr, err := p.Forward(echo.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	c := dial(t, addr)
	if err := roundTrip(c, "pass", time.Second); err != nil {
		t.Fatalf("pass: got %v, want the echo", err)
	}

	p.Delay(150 * time.Millisecond)
	start := time.Now()
	if err := roundTrip(c, "slow", 5*time.Second); err != nil {
		t.Fatalf("delay: got %v, want the echo", err)
	}
	if got := time.Since(start); got < 300*time.Millisecond {
		t.Errorf("delay: round trip %v, want at least 2x150ms (one chunk each way)", got)
	}

	p.Drop(testenv.FromTarget)
	before := echo.received()
	if err := roundTrip(c, "half", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("drop from target: got %v, want no answer", err)
	}
	if got := echo.received() - before; got != len("half") {
		t.Errorf("drop from target: target received %d bytes, want %d", got, len("half"))
	}
	p.Drop(testenv.ToTarget)
	before = echo.received()
	if err := roundTrip(c, "lost", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("drop to target: got %v, want no answer", err)
	}
	if got := echo.received() - before; got != 0 {
		t.Errorf("drop to target: target received %d bytes, want 0", got)
	}
	p.Pass() // the connection lost bytes: it is closed
	if err := roundTrip(c, "more", time.Second); err == nil {
		t.Fatal("a connection that lost bytes still forwards after Pass; want it closed")
	}

	c = dial(t, addr)
	if err := roundTrip(c, "again", time.Second); err != nil {
		t.Fatalf("pass after drop: got %v, want the echo", err)
	}
	p.Cut()
	if err := roundTrip(c, "cut", time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut: existing connection got %v, want it closed", err)
	}
	held := dial(t, addr) // accepted, then blackholed
	if err := roundTrip(held, "void", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut: new connection got %v, want no answer", err)
	}
	p.Pass()
	if err := roundTrip(held, "void", time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("heal: held connection got %v, want it closed", err)
	}
	if err := roundTrip(dial(t, addr), "healed", time.Second); err != nil {
		t.Fatalf("heal: got %v, want the echo", err)
	}
	st := p.Stats()
	if st.Blackholed != 1 || st.DroppedBytes == 0 {
		t.Errorf("stats = %+v, want 1 blackholed connection and dropped bytes", st)
	}
}

// A delayed connection is a delay line: a chunk sent right behind another
// arrives d after it was sent, right behind the first, not d after the
// first was delivered (which would make a busy connection's round trip grow
// with its load). Their order is kept.
func TestProxyDelayLine(t *testing.T) {
	echo := startEcho(t)
	p := testenv.NewProxy("line")
	t.Cleanup(p.Close)
	addr, err := p.Forward(echo.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	const d = 500 * time.Millisecond
	p.Delay(d)
	if _, err := c.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a second chunk, not for ordering
	if _, err := c.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var at [2]time.Time
	for i, want := range []byte("ab") {
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if b[0] != want {
			t.Fatalf("echo %d is %q, want %q: out of order", i, b[0], want)
		}
		at[i] = time.Now()
	}
	if gap := at[1].Sub(at[0]); gap > d/2 {
		t.Errorf("the second echo came %v after the first; want about the 20ms between them (a chunk queued behind another is not delayed twice)", gap)
	}
}

// DelayOneWay holds one direction only: a round trip takes the delay once.
func TestProxyDelayOneWay(t *testing.T) {
	echo := startEcho(t)
	p := testenv.NewProxy("oneway")
	t.Cleanup(p.Close)
	addr, err := p.Forward(echo.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	for _, dir := range []testenv.Direction{testenv.ToTarget, testenv.FromTarget} {
		p.DelayOneWay(dir, 300*time.Millisecond)
		start := time.Now()
		if err := roundTrip(c, "x", 5*time.Second); err != nil {
			t.Fatalf("%v: %v", dir, err)
		}
		if got := time.Since(start); got < 300*time.Millisecond || got >= 600*time.Millisecond {
			t.Errorf("delay %v of 300ms: round trip %v, want 300ms and not twice that", dir, got)
		}
	}
}

func TestProxyBounded(t *testing.T) {
	echo := startEcho(t)
	p := testenv.NewProxy("bounded")
	addr, err := p.Forward(echo.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < testenv.MaxConns; i++ {
		if err := roundTrip(dial(t, addr), "x", time.Second); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	if err := roundTrip(dial(t, addr), "x", time.Second); err == nil {
		t.Fatalf("connection %d was forwarded, want it refused", testenv.MaxConns+1)
	}
	p.Close() // returns only once every goroutine of the proxy is gone
	if _, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		t.Error("a closed proxy still accepts")
	}
}

// TestIsolatedLeader cuts the leader from both followers through the
// member-to-member proxies: the followers elect a new leader, the old one
// stops serving (no election traffic goes around the proxies), and it
// rejoins once the links pass again.
func TestIsolatedLeader(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3, PeerProxies: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if m != old {
			c.CutLinks(old.ID, m.ID)
		}
	}
	var next *testenv.Member
	zktest.Eventually(t, 30*time.Second, "a new leader among the followers", func() bool {
		l, err := c.Leader(ctx)
		next = l
		return err == nil && l != old
	})
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if mode, err := old.Mode(); err == nil {
			t.Fatalf("isolated zk%d serves as %s, want it out of service (zk%d leads)", old.ID, mode, next.ID)
		}
	}
	for _, m := range c.Members {
		if m != old {
			c.HealLinks(old.ID, m.ID)
		}
	}
	zktest.Eventually(t, 30*time.Second, "the old leader to serve again", func() bool {
		mode, err := old.Mode()
		return err == nil && mode == "follower"
	})
}

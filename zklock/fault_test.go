package zklock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/seqd/seqd/testenv/zktest"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/testenv"
)

// Fault tests: each breaks its own ensemble, never the shared server.

// grantRecord is one grant of a stream: its token and when it was made.
type grantRecord struct {
	token uint64
	at    time.Time
}

// stream alternates grants of one lock between two sessions, one grant at a
// time, until stop closes. Acquire and Release failures while ZooKeeper
// elects a leader are expected (the caller retries, as a real one would);
// anything else ends the stream with an error.
func stream(mode TokenMode, a, b *Session, name string, stop <-chan struct{}, grants chan<- grantRecord) error {
	ms := [2]*Mutex{}
	for i, s := range []*Session{a, b} {
		m, err := NewMutex(s, name, WithTokenMode(mode))
		if err != nil {
			return err
		}
		ms[i] = m
	}
	retryable := func(err error) bool {
		return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrLockLost)
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := ms[i%2].Acquire(ctx)
		cancel()
		if err != nil {
			if retryable(err) {
				continue
			}
			return fmt.Errorf("grant %d: %w", i, err)
		}
		grants <- grantRecord{g.Token, time.Now()}
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		err = g.Release(ctx)
		cancel()
		if err != nil && !retryable(err) {
			return fmt.Errorf("release %d: %w", i, err)
		}
	}
}

// Kill the leader in the middle of two streams of grants (one per token
// mode): grants resume after the election and every token is above every
// earlier one of its lock.
func TestFailoverKeepsTokensRising(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3})
	modes := []TokenMode{TokenZxid, TokenVersion}
	const before, after = 30, 30

	type run struct {
		grants chan grantRecord
		err    chan error
		got    []grantRecord
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runs := make([]*run, len(modes))
	for i, mode := range modes {
		a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
		r := &run{grants: make(chan grantRecord, 4096), err: make(chan error, 1)}
		runs[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err <- stream(mode, a, b, "failover/"+mode.String(), stop, r.grants)
		}()
	}
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopAll()

	// collect waits until stream i has want[i] grants, or fails.
	collect := func(want []int, d time.Duration) {
		t.Helper()
		deadline := time.After(d)
		for i, r := range runs {
			n := want[i]
			for len(r.got) < n {
				select {
				case g := <-r.grants:
					r.got = append(r.got, g)
				case err := <-r.err:
					stopAll()
					t.Fatalf("%v stream ended: %v", modes[i], err)
				case <-deadline:
					stopAll()
					t.Fatalf("%v stream: %d grants within %v, want %d", modes[i], len(r.got), d, n)
				}
			}
		}
	}
	collect([]int{before, before}, 30*time.Second)

	ctx := ctxT(t, 10*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.Kill()
	t.Logf("killed leader zk%d at %s", leader.ID, killed.Format("15:04:05.000"))
	// Wait for `after` more grants per stream than were made by now (the
	// grants' own times tell which came after the kill).
	want := make([]int, len(runs))
	for i, r := range runs {
		for len(r.grants) > 0 {
			r.got = append(r.got, <-r.grants)
		}
		want[i] = len(r.got) + after
	}
	collect(want, 60*time.Second)
	stopAll()
	for i, r := range runs {
		for len(r.grants) > 0 {
			r.got = append(r.got, <-r.grants)
		}
		select {
		case err := <-r.err:
			if err != nil {
				t.Fatalf("%v stream: %v", modes[i], err)
			}
		default:
		}
	}

	timeout := 4 * time.Second // dial's default
	for i, r := range runs {
		var maxGap time.Duration
		resumed := -1
		for j := 1; j < len(r.got); j++ {
			if r.got[j].token <= r.got[j-1].token {
				t.Errorf("%v: grant %d token %d not above grant %d token %d", modes[i], j, r.got[j].token, j-1, r.got[j-1].token)
			}
			if r.got[j].at.After(killed) && resumed < 0 {
				resumed = j
			}
			if gap := r.got[j].at.Sub(r.got[j-1].at); gap > maxGap {
				maxGap = gap
			}
		}
		if resumed < 0 {
			t.Fatalf("%v: no grant after the kill", modes[i])
		}
		first := r.got[resumed]
		t.Logf("%v: %d grants, %d after the kill; first grant %v after the kill (%.2f of the %v session timeout); longest pause between grants %v (%.2f); tokens %#x … %#x",
			modes[i], len(r.got), len(r.got)-resumed, first.at.Sub(killed).Round(time.Millisecond),
			float64(first.at.Sub(killed))/float64(timeout), timeout, maxGap.Round(time.Millisecond),
			float64(maxGap)/float64(timeout), r.got[0].token, r.got[len(r.got)-1].token)
		if modes[i] == TokenZxid && r.got[len(r.got)-1].token>>32 == r.got[0].token>>32 {
			t.Errorf("zxid: epoch did not change across the failover (%#x → %#x)", r.got[0].token, r.got[len(r.got)-1].token)
		}
	}
}

// pausedCluster is a 3-node ensemble with its followers, for tests that cut
// one client off by pausing the only server it knows.
func pausedCluster(t *testing.T) (c *testenv.Cluster, holderSrv, otherSrv *testenv.Member) {
	t.Helper()
	c = zktest.StartT(t, testenv.Options{Servers: 3})
	fs := c.Followers()
	if len(fs) != 2 {
		t.Fatalf("followers = %d, want 2", len(fs))
	}
	return c, fs[0], fs[1]
}

// A holder cut off from ZooKeeper (its only server paused): Lost closes
// before ZooKeeper expires its session and grants the lock to the waiter on
// another server; the waiter's token is higher; after the server resumes no
// contender of the holder is left.
func TestLossBeforeOtherGrant(t *testing.T) {
	_, holderSrv, otherSrv := pausedCluster(t)
	const timeout = 2 * time.Second
	holderS := dial(t, []string{holderSrv.ClientAddr}, Options{SessionTimeout: timeout})
	waiterS := dial(t, []string{otherSrv.ClientAddr}, Options{SessionTimeout: timeout})
	if holderS.Timeout() != timeout {
		t.Fatalf("negotiated session timeout %v, want %v", holderS.Timeout(), timeout)
	}
	holder, waiter := mutex(t, holderS, "loss"), mutex(t, waiterS, "loss")
	hg, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   *Grant
		err error
		at  time.Time
	}
	waited := make(chan result, 1)
	wctx := ctxT(t, 30*time.Second)
	go func() {
		g, err := waiter.Acquire(wctx)
		waited <- result{g, err, time.Now()}
	}()
	zktest.Eventually(t, 10*time.Second, "the waiter to queue", func() bool { return len(children(t, waiterS, waiter.Path())) == 2 })

	if err := holderSrv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := holderSrv.Resume(); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()

	var lostAt time.Time
	select {
	case <-hg.Lost():
		lostAt = time.Now()
	case r := <-waited:
		t.Fatalf("waiter granted (%v) after %v while the holder's Lost is still open", r.err, r.at.Sub(paused))
	case <-time.After(3 * timeout):
		t.Fatalf("Lost not closed %v after the holder's server was paused", 3*timeout)
	}
	var r result
	select {
	case r = <-waited:
	case <-time.After(5 * timeout):
		t.Fatalf("waiter not granted %v after the pause", 5*timeout)
	}
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	t.Logf("session timeout %v: holder's Lost closed %v after the pause (%.2f of the timeout); waiter granted %v after the pause (%.2f), %v after Lost",
		timeout, lostAt.Sub(paused).Round(time.Millisecond), float64(lostAt.Sub(paused))/float64(timeout),
		r.at.Sub(paused).Round(time.Millisecond), float64(r.at.Sub(paused))/float64(timeout), r.at.Sub(lostAt).Round(time.Millisecond))
	if !lostAt.Before(r.at) {
		t.Errorf("Lost closed at %v, not before the waiter's grant at %v", lostAt, r.at)
	}
	if r.g.Token <= hg.Token {
		t.Errorf("waiter token %d not above holder token %d", r.g.Token, hg.Token)
	}
	if !errors.Is(hg.Err(), ErrLockLost) {
		t.Errorf("holder Err = %v, want ErrLockLost", hg.Err())
	}

	resume()
	// The holder learns its session expired once it reaches its server again.
	select {
	case <-holderS.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("holder's session not done 30s after its server resumed")
	}
	if !errors.Is(holderS.Err(), ErrSessionExpired) {
		t.Errorf("holder session Err = %v, want ErrSessionExpired", holderS.Err())
	}
	if err := hg.Release(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Errorf("Release of the lost grant = %v, want ErrLockLost", err)
	}
	if got, want := children(t, waiterS, waiter.Path()), []string{path.Base(r.g.Path)}; !slices.Equal(got, want) {
		t.Errorf("children after the holder's expiry = %v, want only the waiter's %v", got, want)
	}
	select {
	case <-r.g.Lost():
		t.Errorf("waiter's grant lost: %v", r.g.Err())
	default:
	}
	if err := r.g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// Session expiry reaches the grant through Session.Done. The holder's clock
// is fake and never advanced, so its own deadline cannot fire first: Lost
// can only close because ZooKeeper expired the session.
func TestSessionExpiry(t *testing.T) {
	_, holderSrv, otherSrv := pausedCluster(t)
	reg := prometheus.NewRegistry()
	const timeout = 2 * time.Second
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	holderS := dial(t, []string{holderSrv.ClientAddr}, Options{
		SessionTimeout: timeout,
		Clock:          fake,
		Observer:       metrics.New(reg, metrics.Options{}),
	})
	watcherS := dial(t, []string{otherSrv.ClientAddr}, Options{SessionTimeout: timeout})
	g, err := mutex(t, holderS, "expiry").Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := holderSrv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			holderSrv.Resume()
		}
	}()
	// ZooKeeper expires the session on the other members: the contender goes.
	zktest.Eventually(t, 10*timeout, "ZooKeeper to expire the holder's session", func() bool {
		ok, _, err := watcherS.conn.Exists(g.Path)
		return err == nil && !ok
	})
	t.Logf("ZooKeeper removed the holder's contender %v after the pause (%.2f of the %v timeout)",
		time.Since(paused).Round(time.Millisecond), float64(time.Since(paused))/float64(timeout), timeout)
	select {
	case <-g.Lost():
		t.Fatalf("Lost closed while the holder cannot have heard of the expiry: %v", g.Err())
	default:
	}
	resumed = true
	if err := holderSrv.Resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holderS.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed 30s after the server resumed")
	}
	if err := holderS.Err(); err != ErrSessionExpired {
		t.Errorf("Session.Err = %v, want ErrSessionExpired", err)
	}
	select {
	case <-g.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("grant's Lost not closed after the session expired")
	}
	if err := g.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrSessionExpired) {
		t.Errorf("grant Err = %v, want ErrLockLost wrapping ErrSessionExpired", err)
	}
	if holderS.Connected() {
		t.Error("Connected after expiry")
	}
	want := `
# HELP seqd_zk_session_expirations_total ZooKeeper sessions that expired; every lock they held was lost.
# TYPE seqd_zk_session_expirations_total counter
seqd_zk_session_expirations_total 1
# HELP seqd_zk_connected 1 while the ZooKeeper session is connected, else 0.
# TYPE seqd_zk_connected gauge
seqd_zk_connected 0
# HELP seqd_locks_held Locks currently held through this process.
# TYPE seqd_locks_held gauge
seqd_locks_held 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"seqd_zk_session_expirations_total", "seqd_zk_connected", "seqd_locks_held"); err != nil {
		t.Error(err)
	}
	if _, err := mutex(t, holderS, "expiry").Acquire(ctxT(t, 5*time.Second)); !errors.Is(err, ErrSessionExpired) {
		t.Errorf("Acquire on an expired session = %v, want ErrSessionExpired", err)
	}
}

// The loss deadline on a fake clock: no heartbeats (one an hour), so the
// only ZooKeeper answers recorded are the ones the test makes. The grant is
// lost exactly when the clock passes LastHeard + timeout - margin, an answer
// moves that deadline, and the lost contender is deleted by the janitor
// since the session itself is fine.
func TestLossDeadlineFakeClock(t *testing.T) {
	c := shared.Get(t)
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := dial(t, c.Servers(), Options{SessionTimeout: 4 * time.Second, Clock: fake, Heartbeat: time.Hour})
	other := dial(t, c.Servers(), Options{})
	m := mutex(t, s, "fakeclock")
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first := s.Deadline()
	if want := s.LastHeard().Add(s.Timeout() * 3 / 4); !first.Equal(want) {
		t.Fatalf("Deadline = %v, want LastHeard + 3/4 timeout = %v", first, want)
	}
	// The janitor's heartbeat timer and the grant's deadline timer.
	if !fake.WaitPending(2, g.Lost()) {
		t.Fatalf("grant lost before the clock moved: %v", g.Err())
	}

	fake.Set(first.Add(-time.Millisecond))
	if n := fake.Pending(); n != 2 {
		t.Fatalf("pending timers = %d after advancing to just before the deadline, want 2 (none fired)", n)
	}
	select {
	case <-g.Lost():
		t.Fatalf("lost before the deadline: %v", g.Err())
	default:
	}

	// ZooKeeper answers now: the deadline moves.
	if err := s.call(func() error { _, _, err := s.conn.Exists("/"); return err }); err != nil {
		t.Fatal(err)
	}
	second := s.Deadline()
	if want := first.Add(-time.Millisecond).Add(s.Timeout() * 3 / 4); !second.Equal(want) {
		t.Fatalf("Deadline after an answer = %v, want %v", second, want)
	}
	fake.Set(first.Add(time.Millisecond)) // the old deadline fires; the grant re-arms
	if !fake.WaitPending(2, g.Lost()) {
		t.Fatalf("lost at the old deadline although ZooKeeper answered since: %v", g.Err())
	}

	fake.Set(second)
	select {
	case <-g.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed at the deadline")
	}
	if err := g.Err(); !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), "not heard from") {
		t.Errorf("Err = %v, want ErrLockLost for a silent ZooKeeper", err)
	}
	if s.Err() != nil {
		t.Errorf("session ended: %v", s.Err())
	}
	// The session lives on, so the janitor deletes the contender: nobody may
	// stay blocked behind a holder that was told it lost.
	zktest.Eventually(t, 10*time.Second, "the lost contender to be deleted", func() bool {
		return len(children(t, other, m.Path())) == 0
	})
	if n := s.pendingCleanups(); n != 0 {
		t.Errorf("pending cleanups = %d, want 0", n)
	}
	if err := g.Release(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Errorf("Release after loss = %v, want ErrLockLost", err)
	}
}

// The recovery step of a create whose reply was lost: findOwn finds our
// contender by its GUID and nothing else. (The lost reply itself is provoked
// in TestCreateReplyLost.)
func TestFindOwn(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 10*time.Second)
	m := mutex(t, s, "findown")
	if got, err := m.findOwn(ctx, newGUID()); got != "" || err != nil {
		t.Fatalf("findOwn without a lock node = %q, %v; want \"\", nil", got, err)
	}
	if err := m.ensureLockNode(ctx); err != nil {
		t.Fatal(err)
	}
	guid, otherGUID := newGUID(), newGUID()
	create := func(prefix string) string {
		t.Helper()
		p, err := s.conn.Create(m.Path()+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	create(contenderPrefix(otherGUID))
	create("x" + guid + "__lock__") // a kazoo contender that merely contains the GUID
	if got, err := m.findOwn(ctx, guid); got != "" || err != nil {
		t.Fatalf("findOwn before our create = %q, %v; want \"\", nil", got, err)
	}
	own := create(contenderPrefix(guid))
	if got, err := m.findOwn(ctx, guid); got != own || err != nil {
		t.Fatalf("findOwn = %q, %v; want %q", got, err, own)
	}
}

// A create whose reply is lost: a proxy between the session and its server
// forwards our create to ZooKeeper, drops the reply and cuts the connection.
// go-zookeeper fails the create with a connection error although the node
// exists; Acquire must find it by its GUID and use it, leaving no twin.
func TestCreateReplyLost(t *testing.T) {
	c := shared.Get(t)
	p := startDropProxy(t, c.Servers()[0])
	s := dial(t, []string{p.addr()}, Options{})
	other := dial(t, c.Servers(), Options{})
	m := mutex(t, s, "lostreply")
	g, err := m.Acquire(ctxT(t, 10*time.Second)) // the lock node now exists
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}

	p.arm(m.Path() + "/" + protectedPrefix)
	g, err = m.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Acquire after a lost create reply: %v", err)
	}
	var dropped string
	select {
	case dropped = <-p.dropped:
	default:
		t.Fatal("the proxy dropped no create reply: the test tested nothing")
	}
	if !strings.HasPrefix(g.Path, dropped) {
		t.Errorf("granted %s, not the node of the create whose reply was lost (%s…)", g.Path, dropped)
	}
	if got, want := children(t, other, m.Path()), []string{path.Base(g.Path)}; !slices.Equal(got, want) {
		t.Errorf("children = %v, want only %v (no twin)", got, want)
	}
	if s.Err() != nil {
		t.Fatalf("session ended: %v", s.Err())
	}
	if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := children(t, other, m.Path()); len(got) != 0 {
		t.Errorf("children after release = %v, want none", got)
	}
}

// dropProxy is a TCP proxy to one ZooKeeper server that, once armed, drops
// the reply to the next create of a path with the armed prefix and closes
// the client's connection.
type dropProxy struct {
	ln      net.Listener
	target  string
	dropped chan string // the path of each create whose reply was dropped

	mu     sync.Mutex
	prefix string // armed when not empty
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target, dropped: make(chan string, 4)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) addr() string { return p.ln.Addr().String() }

func (p *dropProxy) arm(prefix string) {
	p.mu.Lock()
	p.prefix = prefix
	p.mu.Unlock()
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var (
			dropMu   sync.Mutex
			dropXid  int32
			dropPath string
			dropping bool
		)
		cut := func() { client.Close(); server.Close() }
		p.wg.Add(2)
		go func() { // client → server: spot the armed create
			defer p.wg.Done()
			defer cut()
			for first := true; ; first = false {
				frame, err := readFrame(client)
				if err != nil {
					return
				}
				// After the connect request: xid, opcode, then for create
				// (1) and create2 (15) the path.
				if !first && len(frame) >= 12 {
					xid := int32(binary.BigEndian.Uint32(frame[0:4]))
					op := int32(binary.BigEndian.Uint32(frame[4:8]))
					n := int(binary.BigEndian.Uint32(frame[8:12]))
					if (op == 1 || op == 15) && n >= 0 && 12+n <= len(frame) {
						pth := string(frame[12 : 12+n])
						p.mu.Lock()
						if p.prefix != "" && strings.HasPrefix(pth, p.prefix) {
							p.prefix = ""
							dropMu.Lock()
							dropXid, dropPath, dropping = xid, pth, true
							dropMu.Unlock()
						}
						p.mu.Unlock()
					}
				}
				if err := writeFrame(server, frame); err != nil {
					return
				}
			}
		}()
		go func() { // server → client: drop that create's reply and cut
			defer p.wg.Done()
			defer cut()
			for first := true; ; first = false {
				frame, err := readFrame(server)
				if err != nil {
					return
				}
				if !first && len(frame) >= 4 {
					xid := int32(binary.BigEndian.Uint32(frame[0:4]))
					dropMu.Lock()
					drop := dropping && xid == dropXid
					pth := dropPath
					dropMu.Unlock()
					if drop {
						p.dropped <- pth
						return
					}
				}
				if err := writeFrame(client, frame); err != nil {
					return
				}
			}
		}()
	}
}

// readFrame reads one length-prefixed ZooKeeper packet.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 16<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := w.Write(buf)
	return err
}

// pollUntil polls cond every 10ms until it holds or d passes.

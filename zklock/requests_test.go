package zklock

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestUncontendedCycleRequests counts the requests one session writes per
// uncontended acquire and release: the create (in one multi with the stamp
// of the lock node, whose answer carries the token and proves the node
// ours), the children read sent right behind it (its watch becomes the
// grant's), and the release's delete. The lock-delay marker is not read
// while no lock under the root has one; the control: once one does, every
// grant reads it, and the count shows that fourth request. The session's
// clock is fake and never moves, so its heartbeat never fires, and
// go-zookeeper's pings are not zklock's requests: the counts are exact.
func TestUncontendedCycleRequests(t *testing.T) {
	c := shared.Get(t)
	requests := newRequestCounter()
	s := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second, Clock: clock.NewFake(time.Unix(1_700_000_000, 0)), wire: requests.wrap})
	root := "/reqcount-" + newGUID() + "/locks"
	m := mutex(t, s, "plain", WithRoot(root))
	cycle := func() {
		t.Helper()
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	const n = 200
	// The create's multi and the children read go from two goroutines: a
	// read that went first on the wire does not show our node and is sent
	// again. Those are seen in the order of the requests, and counted.
	count := func() (got map[string]int, early int) {
		cycle() // the root, the lock node and what the session knows of them
		mark := requests.mark()
		for range n {
			cycle()
		}
		ops := requests.sent(mark)
		for i := 1; i < len(ops); i++ {
			if ops[i-1] == "getChildren2" && ops[i] == "multi" {
				early++
			}
		}
		return requests.since(mark), early
	}
	got, early := count()
	t.Logf("requests in %d uncontended cycles: %v, %d children reads sent before the create", n, got, early)
	if want := map[string]int{"multi": n, "getChildren2": n + early, "delete": n}; !maps.Equal(got, want) {
		t.Errorf("%d uncontended cycles sent %v, want %v (create, children, delete, and a children read again after each of the %d sent before the create)", n, got, want, early)
	}

	// The control: a lock under the same root that asks for a lock-delay
	// writes a marker, and from then on every grant reads its own.
	d := mutex(t, s, "delayed", WithRoot(root), WithLockDelay(time.Second))
	g, err := d.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, early = count()
	t.Logf("requests in %d uncontended cycles once markers exist: %v, %d children reads sent before the create", n, got, early)
	if want := map[string]int{"multi": n, "getChildren2": n + early, "getData": n, "delete": n}; !maps.Equal(got, want) {
		t.Errorf("%d cycles with a marker directory sent %v, want %v (the marker read): the count does not see what it should", n, got, want)
	}
}

// requestCounter records, in the order they went on the wire, the
// requests a session writes on its connections (Options.wire): the
// requests zklock makes. go-zookeeper's own (its pings, and the watches and
// identity it sends again after a reconnect) carry a negative xid and are
// not recorded, nor is the connect request that opens each connection.
type requestCounter struct {
	mu  sync.Mutex
	ops []string
}

func newRequestCounter() *requestCounter { return &requestCounter{} }

func (rc *requestCounter) wrap(c net.Conn) net.Conn { return &requestConn{Conn: c, rc: rc} }

// mark is how many requests were recorded so far.
func (rc *requestCounter) mark() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.ops)
}

// sent is the requests recorded after mark, in order.
func (rc *requestCounter) sent(mark int) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.ops[mark:])
}

// since counts the requests recorded after mark by operation.
func (rc *requestCounter) since(mark int) map[string]int {
	n := map[string]int{}
	for _, op := range rc.sent(mark) {
		n[op]++
	}
	return n
}

// opNames names the operations zklock sends (go-zookeeper's opcodes).
var opNames = map[int32]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
	9: "sync", 12: "getChildren2", 13: "check", 14: "multi", 19: "createContainer", -11: "close",
}

// requestConn is a connection whose writes are split into ZooKeeper's
// length-prefixed packets and counted.
type requestConn struct {
	net.Conn
	rc     *requestCounter
	opened bool   // the connect request went by
	buf    []byte // a packet not written whole yet
}

func (c *requestConn) Write(p []byte) (int, error) {
	c.rc.mu.Lock()
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		n := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+n {
			break
		}
		pkt := c.buf[4 : 4+n]
		switch {
		case !c.opened:
			c.opened = true
		case n >= 8 && int32(binary.BigEndian.Uint32(pkt)) >= 0:
			op := int32(binary.BigEndian.Uint32(pkt[4:]))
			name, ok := opNames[op]
			if !ok {
				name = fmt.Sprintf("op%d", op)
			}
			c.rc.ops = append(c.rc.ops, name)
		}
		c.buf = c.buf[4+n:]
	}
	c.rc.mu.Unlock()
	return c.Conn.Write(p)
}

var recvedRE = regexp.MustCompile(`recved=(\d+)`)

// received is how many packets the server has received on the connection
// of session id, from the cons four-letter word.
func received(t testing.TB, c *testenv.Cluster, id int64) int {
	t.Helper()
	out, err := testenv.FourLetter(c.Servers()[0], "cons", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sid := fmt.Sprintf("sid=0x%x", id)
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, sid+",") && !strings.Contains(line, sid+")") {
			continue
		}
		m := recvedRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no recved= in %q", line)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	t.Fatalf("session 0x%x not in cons:\n%s", id, out)
	return 0
}

// TestHandOverReadsNothing: on a lock handed over inside one session, the
// next holder is granted on its predecessor's deletion without a look at
// the children, and a grant released within lookEvery reads nothing: the
// hand-over and the next holder's tenure cost the two deletes and no more.
// The control: with no pacing, the new holder's monitor reads the children
// (and sets its watch) right after the grant, one more request. The
// requests are counted as the session writes them, on a fake clock that
// never moves: no heartbeat and no ping is among them.
func TestHandOverReadsNothing(t *testing.T) {
	c := shared.Get(t)
	for _, tc := range []struct {
		name  string
		pace  time.Duration
		extra int
	}{{"paced", time.Minute, 0}, {"control", 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			requests := newRequestCounter()
			s := dial(t, c.Servers(), Options{SessionTimeout: 60 * time.Second, Clock: clock.NewFake(time.Unix(1_700_000_000, 0)), wire: requests.wrap})
			s.lookEvery = tc.pace
			root := "/handover-" + newGUID()
			a, b := mutex(t, s, "l", WithRoot(root)), mutex(t, s, "l", WithRoot(root))
			ga, err := a.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			granted := make(chan *Grant, 1)
			go func() {
				g, err := b.Acquire(ctxT(t, 30*time.Second))
				if err != nil {
					t.Error(err)
				}
				granted <- g
			}()
			// b waits once its node is there and its watch on a's is set.
			zktest.Eventually(t, 10*time.Second, "b to wait behind a", func() bool {
				out, err := testenv.FourLetter(c.Servers()[0], "wchp", 5*time.Second)
				return err == nil && strings.Contains(out, ga.Path)
			})
			if tc.pace == 0 {
				// b's create fired a's watch on the children before
				// it was answered, and with no pacing a's look reads
				// them at once: the count starts once a is parked
				// again, or that read would fall inside it.
				zktest.Eventually(t, 10*time.Second, "a's look to be over", func() bool {
					s.mon.mu.Lock()
					defer s.mon.mu.Unlock()
					return ga.mon.state == parked
				})
			}
			before := requests.mark()
			if err := ga.Release(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			gb := <-granted
			if gb == nil {
				t.FailNow()
			}
			if tc.extra > 0 {
				zktest.Eventually(t, 10*time.Second, "the new holder's look", func() bool { return len(requests.sent(before)) >= 1+tc.extra })
			}
			if err := gb.Release(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"delete": 2}
			if tc.extra > 0 {
				want["getChildren2"] = tc.extra
			}
			if got := requests.since(before); !maps.Equal(got, want) {
				t.Errorf("from a's release to b's: %v, want %v (a's delete, b's delete%s)", got, want, map[bool]string{true: ", b's look"}[tc.extra > 0])
			}
		})
	}
}

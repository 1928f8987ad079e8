//go:build !race

package zklock

// Replies lost on the wire: a proxy between a session and its server drops
// the answer to a create (or a multi) and cuts the connection, and the
// session reconnects with its watches. go-zookeeper v1.0.4 reads its last
// zxid (sendSetWatches) while its receive loop writes it when a session
// with watches reconnects, and the race detector flags that in
// go-zookeeper's own code: these tests run in make test's race-free pass,
// with the leader-failover ones.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

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
				// (1) and create2 (15) the path; for a multi (14) whose
				// first request is a create, that request's header (type,
				// done, err: 9 bytes) and then its path.
				if !first && len(frame) >= 12 {
					xid := int32(binary.BigEndian.Uint32(frame[0:4]))
					op := int32(binary.BigEndian.Uint32(frame[4:8]))
					at := 8
					if op == 14 && len(frame) >= 21 && binary.BigEndian.Uint32(frame[8:12]) == 1 {
						op, at = 1, 17
					}
					n := int(binary.BigEndian.Uint32(frame[at : at+4]))
					if (op == 1 || op == 15) && n >= 0 && at+4+n <= len(frame) {
						pth := string(frame[at+4 : at+4+n])
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

// A multi whose answer is lost: the contenders exist in every lock, and
// Acquire finds them by their GUID and uses them, leaving no twin.
func TestMultiMutexReplyLost(t *testing.T) {
	c := shared.Get(t)
	p := startDropProxy(t, c.Servers()[0])
	s := dial(t, []string{p.addr()}, Options{})
	other := dial(t, c.Servers(), Options{})
	names := uniqueNames("multi/lostreply", 2)
	mm := multiMutex(t, s, names)
	g, err := mm.Acquire(ctxT(t, 10*time.Second)) // the lock nodes now exist
	if err != nil {
		t.Fatal(err)
	}
	g.Release(ctxT(t, 10*time.Second))
	before := g.Locks

	p.arm(DefaultRoot + "/" + names[0] + "/" + protectedPrefix)
	g, err = mm.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("Acquire after a lost multi answer: %v", err)
	}
	select {
	case <-p.dropped:
	default:
		t.Fatal("the proxy dropped no answer: the test tested nothing")
	}
	for i, l := range g.Locks {
		if got, want := children(t, other, path.Dir(l.Path)), []string{path.Base(l.Path)}; !slices.Equal(got, want) {
			t.Errorf("lock %s: children %v, want only %v (no twin)", l.Name, got, want)
		}
		// The multi whose answer was lost made the next contender in each
		// lock: that one is used, not a second multi's.
		was, _ := parseContender(path.Base(before[i].Path))
		now, _ := parseContender(path.Base(l.Path))
		if now.seq != was.seq+1 {
			t.Errorf("lock %s: granted contender %d, want %d, the one the lost multi made", l.Name, now.seq, was.seq+1)
		}
	}
	if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

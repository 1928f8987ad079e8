package zklock

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

	"github.com/go-zookeeper/zk"
)

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

// pollUntil polls cond every 10ms until it holds or d passes.

// A create stamps the lock node in its multi: the grant's token is our
// contender's czxid (as a read of the node says), the node is ours, and a
// reader's token too. Where the stamp is refused (a lock node whose ACL
// lets us create children but not write its data), the create goes alone
// and the grant is the same.
func TestStampedCreate(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	rogue := rawConn(t, c.Servers())
	root := "/stamp-" + newGUID()
	check := func(t *testing.T, g *Grant) {
		t.Helper()
		_, st, err := rogue.Get(g.Path)
		if err != nil {
			t.Fatal(err)
		}
		if g.Token != uint64(st.Czxid) || st.EphemeralOwner != s.ID() {
			t.Errorf("token %d, node czxid %d owner 0x%x; want the czxid, and our session 0x%x", g.Token, st.Czxid, st.EphemeralOwner, s.ID())
		}
		if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("mutex", func(t *testing.T) {
		m := mutex(t, s, "plain", WithRoot(root))
		for range 3 {
			g, err := m.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			check(t, g)
		}
		_, st, err := rogue.Get(m.Path())
		if err != nil {
			t.Fatal(err)
		}
		if st.Version < 3 {
			t.Errorf("lock node data version %d after 3 grants; want each create to have stamped it", st.Version)
		}
	})
	t.Run("reader", func(t *testing.T) {
		r, err := NewReadLock(s, "shared", WithRoot(root))
		if err != nil {
			t.Fatal(err)
		}
		g, err := r.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		check(t, g)
	})
	t.Run("refused", func(t *testing.T) {
		p := root + "/nowrite"
		acl := zk.WorldACL(zk.PermCreate | zk.PermRead | zk.PermDelete)
		if _, err := rogue.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
		m := mutex(t, s, "nowrite", WithRoot(root))
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatalf("acquire under a lock node we may not write: %v", err)
		}
		check(t, g)
		if _, st, err := rogue.Get(p); err != nil || st.Version != 0 {
			t.Errorf("the lock node we may not write: version %v, %v; want 0", st, err)
		}
	})
}

package zklock

import (
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

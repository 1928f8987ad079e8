package zklock

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv/zktest"
)

// A sequential node's suffix is its parent's count of creates before it,
// so a children read that finds the parent's cversion at suffix + 1 might
// seem to prove that nothing changed since our create, making the parent's
// pzxid our czxid: the token without a read of our own node. These tests
// hold that idea against a real server. The cversion a client sees counts
// deletes as well as creates (the server reports 2 × creates − children),
// and a delete moves pzxid too, so the idea holds only under a parent that
// never lost a child; once one did, a children read cannot tell whether
// pzxid is our create's or a later delete's. zklock therefore reads its
// own node after every create.

// parentStatProbe creates and deletes children of a fresh parent, and
// reads what a children read after our create would see.
type parentStatProbe struct {
	t    *testing.T
	conn *zk.Conn
	base string
}

func newParentStatProbe(t *testing.T) *parentStatProbe {
	c := shared.Get(t)
	p := &parentStatProbe{t: t, conn: rawConn(t, c.Servers()), base: "/parentstat-" + newGUID()}
	if _, err := p.conn.Create(p.base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return p
}

// create makes a sequential child and returns its path, suffix and czxid.
func (p *parentStatProbe) create() (string, int32, int64) {
	p.t.Helper()
	node, err := p.conn.Create(p.base+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		p.t.Fatal(err)
	}
	suffix, err := strconv.ParseInt(node[len(node)-10:], 10, 32)
	if err != nil {
		p.t.Fatal(err)
	}
	_, st, err := p.conn.Exists(node)
	if err != nil {
		p.t.Fatal(err)
	}
	return node, int32(suffix), st.Czxid
}

func (p *parentStatProbe) delete(node string) {
	p.t.Helper()
	if err := p.conn.Delete(node, -1); err != nil {
		p.t.Fatal(err)
	}
}

// read is the parent's stat as a children read answers it.
func (p *parentStatProbe) read() *zk.Stat {
	p.t.Helper()
	_, st, err := p.conn.Children(p.base)
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}

// Under a parent whose children were only ever created, cversion = suffix +
// 1 right after our create, and pzxid is then our czxid.
func TestParentStatNamesOurCreateWithoutDeletes(t *testing.T) {
	p := newParentStatProbe(t)
	for i := range 3 {
		_, suffix, czxid := p.create()
		st := p.read()
		if suffix != int32(i) || st.Cversion != suffix+1 || st.Pzxid != czxid {
			t.Errorf("create %d: suffix %d, parent cversion %d, pzxid %d, our czxid %d; want suffix %d, cversion suffix+1, pzxid = czxid",
				i, suffix, st.Cversion, st.Pzxid, czxid, i)
		}
	}
}

// Deletes do not move the sequence (it counts creates) but do move the
// cversion a client sees (2 × creates − children) and pzxid: after one,
// cversion = suffix + 1 no longer holds, even when nothing changed since
// our create. A child removed by its session's end counts the same way.
func TestParentStatCountsDeletes(t *testing.T) {
	t.Parallel()
	p := newParentStatProbe(t)
	x, _, _ := p.create()
	p.delete(x)
	other := rawConn(t, shared.Get(t).Servers())
	if _, err := other.Create(p.base+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	other.Close() // its ephemeral child goes with the session
	zktest.Eventually(t, 10*time.Second, "the closed session's child to go", func() bool { return p.read().NumChildren == 0 })
	_, suffix, czxid := p.create()
	st := p.read()
	if suffix != 2 {
		t.Errorf("suffix %d after two creates, want 2: deletes do not advance the sequence", suffix)
	}
	if creates := suffix + 1; st.Cversion != 2*creates-st.NumChildren {
		t.Errorf("cversion %d with %d creates and %d children, want 2 × creates − children = %d", st.Cversion, creates, st.NumChildren, 2*creates-st.NumChildren)
	}
	if st.Cversion == suffix+1 {
		t.Errorf("cversion %d = suffix + 1 after two removals: removals do not count", st.Cversion)
	}
	if st.Pzxid != czxid {
		t.Errorf("pzxid %d, our czxid %d, with nothing changed since our create", st.Pzxid, czxid)
	}
}

// Two histories whose children reads after our create look the same (same
// children by suffix, same cversion, same count) while pzxid is our czxid
// in one and a later delete's in the other: once deletes happen, no
// reading of the parent's stat names our czxid.
func TestParentStatCannotTellALaterDelete(t *testing.T) {
	type seen struct {
		cversion, children int32
		suffixes           string
		pzxidIsOurs        bool
	}
	run := func(deleteFirst bool) seen {
		p := newParentStatProbe(t)
		x, _, _ := p.create()
		p.create()
		if deleteFirst {
			p.delete(x)
		}
		_, _, czxid := p.create()
		if !deleteFirst {
			p.delete(x)
		}
		names, st, err := p.conn.Children(p.base)
		if err != nil {
			t.Fatal(err)
		}
		s := seen{cversion: st.Cversion, children: st.NumChildren, pzxidIsOurs: st.Pzxid == czxid}
		slices.Sort(names) // "n-" and the suffix
		for _, n := range names {
			s.suffixes += n[len(n)-10:] + " "
		}
		return s
	}
	before, after := run(true), run(false)
	t.Logf("delete before our create: %+v; delete after it: %+v", before, after)
	if before.cversion != after.cversion || before.children != after.children || before.suffixes != after.suffixes {
		t.Errorf("the two histories read differently: %+v and %+v", before, after)
	}
	if !before.pzxidIsOurs || after.pzxidIsOurs {
		t.Errorf("pzxid is our czxid: %v with the delete before our create, %v with it after; want true and false", before.pzxidIsOurs, after.pzxidIsOurs)
	}
}

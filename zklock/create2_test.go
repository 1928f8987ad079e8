package zklock

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// The go-zookeeper copy in third_party adds create2 (a create that answers
// with the node's Stat) and an asynchronous form of it. These run them
// against a real server.

func TestCreate2AnswersTheNodesStat(t *testing.T) {
	c := shared.Get(t)
	conn := rawConn(t, c.Servers())
	base := "/create2-" + newGUID()
	if _, err := conn.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p, st, err := conn.Create2(base+"/n-", []byte("data"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, base+"/n-") || len(p) != len(base+"/n-")+10 {
		t.Errorf("path %q is not a sequential child of %s", p, base)
	}
	_, want, err := conn.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	if *st != *want {
		t.Errorf("create2's stat %+v, exists says %+v", *st, *want)
	}
	if st.EphemeralOwner != conn.SessionID() || st.DataLength != 4 || st.Czxid == 0 {
		t.Errorf("stat %+v: want our session 0x%x as owner, 4 bytes, a czxid", *st, conn.SessionID())
	}
	// Errors are upstream's.
	if _, _, err := conn.Create2(base+"/missing/n", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("create2 under a missing parent: %v, want ErrNoNode", err)
	}
	if _, _, err := conn.Create2(base, nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNodeExists) {
		t.Errorf("create2 of an existing node: %v, want ErrNodeExists", err)
	}
	if _, _, err := conn.Create2(base+"/c", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrInvalidFlags) {
		t.Errorf("create2 of a container: %v, want ErrInvalidFlags", err)
	}
}

func TestReadQueuedBehindCreate2AsyncSeesTheNode(t *testing.T) {
	c := shared.Get(t)
	conn := rawConn(t, c.Servers())
	base := "/create2-" + newGUID()
	if _, err := conn.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		answer := conn.Create2Async(base+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		children, _, err := conn.Children(base)
		if err != nil {
			t.Fatal(err)
		}
		p, st, err := answer()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(children, p[len(base)+1:]) || len(children) != i+1 {
			t.Fatalf("children read behind the create of %s: %v", p, children)
		}
		if st.Czxid == 0 {
			t.Fatalf("no czxid in %+v", *st)
		}
	}
}

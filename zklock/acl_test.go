package zklock

import (
	"errors"
	"os/exec"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv/zktest"
)

var testAuth = DigestAuth{User: "seqd", Password: "correct-horse-battery"}

// rogueOps are what a ZooKeeper client without seqd's identity tries on a
// held lock: plant a lower contender, rewrite the holder's data, plant a
// lock under the root, and delete the holder's contender (last: it breaks
// the lock when allowed).
func rogueOps(m *Mutex, g *Grant) []struct {
	name string
	op   func(c *zk.Conn) error
} {
	return []struct {
		name string
		op   func(c *zk.Conn) error
	}{
		{"read lock node", func(c *zk.Conn) error { _, _, err := c.Get(m.Path()); return err }},
		{"read contender", func(c *zk.Conn) error { _, _, err := c.Get(g.Path); return err }},
		{"plant contender", func(c *zk.Conn) error {
			_, err := c.Create(m.Path()+"/x-lock-0000000000", []byte("rogue"), 0, zk.WorldACL(zk.PermAll))
			return err
		}},
		{"rewrite contender", func(c *zk.Conn) error { _, err := c.Set(g.Path, []byte(`{"owner":"rogue"}`), -1); return err }},
		{"plant lock", func(c *zk.Conn) error {
			_, err := c.Create(path.Dir(m.Path())+"/planted-"+m.Name()[strings.LastIndex(m.Name(), "/")+1:], nil, 0, zk.WorldACL(zk.PermAll))
			return err
		}},
		{"delete contender", func(c *zk.Conn) error { return c.Delete(g.Path, -1) }},
	}
}

// Under the creator ACL a client without the identity can read a lock but
// not delete, plant or rewrite anything (NoAuth); under the open ACL, the
// control, it can do all of it, and deleting the contender breaks the grant.
func TestACLKeepsOthersOut(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	rogue := rawConn(t, c.Servers())
	for _, tc := range []struct {
		policy ACLPolicy
		denied bool
	}{
		{ACLCreator, true},
		{ACLOpen, false},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			root := "/acl-" + tc.policy.String()
			s := dial(t, c.Servers(), Options{Auth: &testAuth, ACL: tc.policy})
			m := mutex(t, s, "a/lock", WithRoot(root))
			g, err := m.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range rogueOps(m, g) {
				err := op.op(rogue)
				switch {
				case strings.HasPrefix(op.name, "read"):
					if err != nil {
						t.Errorf("%s: %v, want it readable", op.name, err)
					}
				case tc.denied && !errors.Is(err, zk.ErrNoAuth):
					t.Errorf("%s under the creator ACL: got %v, want %v", op.name, err, zk.ErrNoAuth)
				case !tc.denied && err != nil:
					t.Errorf("%s under the open ACL: got %v, want it done", op.name, err)
				}
			}
			select {
			case <-g.Lost():
				if tc.denied {
					t.Fatalf("grant lost under the creator ACL: %v", g.Err())
				}
			case <-time.After(2 * time.Second):
				if !tc.denied {
					t.Fatal("grant not lost after its contender was deleted under the open ACL")
				}
			}
			want := zk.WorldACL(zk.PermAll)
			if tc.denied {
				want = append(zk.DigestACL(zk.PermAll, testAuth.User, testAuth.Password), zk.WorldACL(zk.PermRead)...)
			}
			nodes := []string{root, path.Dir(m.Path()), m.Path()}
			if tc.denied {
				nodes = append(nodes, g.Path) // under the open ACL it was deleted
			}
			for _, p := range nodes {
				// Read by the owner: ZooKeeper shows others a digest as "x".
				if got := nodeACL(t, s.conn, p); !reflect.DeepEqual(got, want) {
					t.Errorf("ACL of %s = %v, want %v", p, got, want)
				}
			}
		})
	}
}

func nodeACL(t *testing.T, c *zk.Conn, p string) []zk.ACL {
	t.Helper()
	acl, _, err := c.GetACL(p)
	if err != nil {
		t.Fatalf("GetACL %s: %v", p, err)
	}
	return acl
}

// The same, tried by an unauthenticated kazoo client.
func TestACLKeepsKazooOut(t *testing.T) {
	needKazoo(t)
	c := shared.Get(t)
	for _, tc := range []struct {
		policy ACLPolicy
		want   string // the answer to each write
	}{
		{ACLCreator, "NoAuthError"},
		{ACLOpen, "ok"},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			s := dial(t, c.Servers(), Options{Auth: &testAuth, ACL: tc.policy})
			m := mutex(t, s, "a/lock", WithRoot("/acl-kazoo-"+tc.policy.String()+"-"+newGUID()))
			g, err := m.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(systemPython, "testdata/kazoo_probe.py", c.ConnectString(),
				"read", g.Path,
				"set", g.Path,
				"delete", g.Path,
				// Last: a contender planted below ours ends the grant at
				// once, and seqd then deletes its own node.
				"create", m.Path()+"/x-lock-0000000000").Output()
			if err != nil {
				t.Fatalf("kazoo_probe.py: %v", err)
			}
			got := strings.Split(strings.TrimSpace(string(out)), "\n")
			want := []string{"read ok", "set " + tc.want, "delete " + tc.want, "create " + tc.want}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("kazoo without the identity: got %q, want %q", got, want)
			}
			if tc.want == "ok" {
				zktest.Eventually(t, 5*time.Second, "the grant to be lost", func() bool { return g.Err() != nil })
			} else if err := g.Err(); err != nil {
				t.Fatalf("grant lost under the creator ACL: %v", err)
			}
		})
	}
}

// The creator policy needs an identity; an unknown policy is refused.
func TestACLPolicyNeedsAuth(t *testing.T) {
	if _, err := aclFor(ACLCreator, nil); err == nil {
		t.Error("creator ACL without auth accepted")
	}
	if acl, err := aclFor(ACLDefault, nil); err != nil || !reflect.DeepEqual(acl, zk.WorldACL(zk.PermAll)) {
		t.Errorf("default ACL without auth = %v, %v; want world:anyone ALL", acl, err)
	}
	if acl, err := aclFor(ACLDefault, &testAuth); err != nil || len(acl) != 2 || acl[0].Scheme != "digest" {
		t.Errorf("default ACL with auth = %v, %v; want digest + world READ", acl, err)
	}
	for _, s := range []string{"", "creator", "open"} {
		if _, err := ParseACLPolicy(s); err != nil {
			t.Errorf("ParseACLPolicy(%q): %v", s, err)
		}
	}
	if _, err := ParseACLPolicy("world"); err == nil {
		t.Error("ParseACLPolicy(world) accepted")
	}
	for in, ok := range map[string]bool{"u:p": true, "u:p:q": true, "u": false, ":p": false, "u:": false} {
		if _, err := ParseDigestAuth(in); (err == nil) != ok {
			t.Errorf("ParseDigestAuth(%q) error = %v, want ok=%v", in, err, ok)
		}
	}
}

// A session without an identity is refused a root that only a digest
// identity may create under, at its first acquire (with an error that
// matches zk.ErrNoAuth, as ZooKeeper's own answer would), before any node
// is tried; on an open root, the control, it is granted.
func TestAnonymousSessionRefusedAClosedRoot(t *testing.T) {
	c := shared.Get(t)
	for _, tc := range []struct {
		policy ACLPolicy
		refuse bool
	}{
		{ACLCreator, true},
		{ACLOpen, false},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			root := "/acl-anonymous-" + tc.policy.String() + "-" + newGUID()
			owner := dial(t, c.Servers(), Options{Auth: &testAuth, ACL: tc.policy})
			if _, err := mutex(t, owner, "a", WithRoot(root)).Acquire(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			anon := dial(t, c.Servers(), Options{})
			_, err := mutex(t, anon, "b", WithRoot(root)).TryAcquire(ctxT(t, 10*time.Second))
			var nr *NoAuthRootError
			switch {
			case tc.refuse && (!errors.Is(err, zk.ErrNoAuth) || !errors.As(err, &nr) || nr.Root != root || len(nr.Users) != 1):
				t.Fatalf("anonymous acquire under %s: %v, want a NoAuthRootError for %s naming one user", root, err, root)
			case !tc.refuse && err != nil:
				t.Fatalf("anonymous acquire on the open root: %v", err)
			}
		})
	}
}

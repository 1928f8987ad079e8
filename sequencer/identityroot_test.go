package sequencer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/zklock"
)

// Two teams' daemons, each with a root and a ZooKeeper digest identity of
// its own: team B's identity can read team A's holder but not delete its
// contender, plant a contender or rewrite the lock node; team A's own
// identity can (the control: the refusal is the identity's, not the
// test's).
func TestIdentityRootsKeepOtherTeamsOut(t *testing.T) {
	servers := sharedZK.Get(t).Servers()
	base := "/seqd-test/" + t.Name()
	// An administrator makes each team's node, writable by the team only.
	admin := zkConn(t, servers)
	for _, n := range []struct {
		path string
		acl  []zk.ACL
	}{
		{"/seqd-test", zk.WorldACL(zk.PermAll)},
		{base, zk.WorldACL(zk.PermAll)},
		{base + "/team-a", teamACL("team-a", "a-secret")},
		{base + "/team-b", teamACL("team-b", "b-secret")},
	} {
		if _, err := admin.Create(n.path, nil, 0, n.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	a := startDaemon(t, daemonOpts{servers: servers, root: base + "/team-a/locks", zkAuth: &zklock.DigestAuth{User: "team-a", Password: "a-secret"}})
	b := startDaemon(t, daemonOpts{servers: servers, root: base + "/team-b/locks", zkAuth: &zklock.DigestAuth{User: "team-b", Password: "b-secret"}})
	ctx := ctxT(t, 20*time.Second)
	if _, err := a.client.Acquire(ctx, "nightly", "job-a", 30*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.Acquire(ctx, "nightly", "job-b", 30*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	as := func(user, password string) *zk.Conn {
		c := zkConn(t, servers)
		if err := c.AddAuth("digest", []byte(user+":"+password)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	lock := base + "/team-a/locks/nightly"
	rogue := as("team-b", "b-secret")
	kids, _, err := rogue.Children(lock)
	if err != nil || len(kids) != 1 {
		t.Fatalf("team B reads team A's contenders: %v %v, want the holder's", kids, err)
	}
	if err := rogue.Delete(lock+"/"+kids[0], -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("team B deletes team A's contender: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := rogue.Create(lock+"/x-lock-0000000000", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("team B plants a contender under team A's lock: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := rogue.Set(lock, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("team B rewrites team A's lock node: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := rogue.Create(base+"/team-a/semaphores", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("team B squats a root in team A's node: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := rogue.Create(base+"/team-a/locks/planted", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("team B creates a lock under team A's root: %v, want %v", err, zk.ErrNoAuth)
	}
	// The control: team A's own identity may create under its root.
	own := as("team-a", "a-secret")
	p, err := own.Create(base+"/team-a/locks/control", nil, zk.FlagEphemeral, zk.DigestACL(zk.PermAll, "team-a", "a-secret"))
	if err != nil {
		t.Fatalf("team A creates under its own root: %v", err)
	}
	if err := own.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	if got := zkChildren(t, servers, lock); len(got) != 1 || got[0] != kids[0] {
		t.Fatalf("team A's lock has contenders %v after team B's tries, want only %v", got, kids)
	}
}

// teamACL is what an administrator gives a team's node: the team's digest
// identity may do everything, anyone may read.
func teamACL(user, password string) []zk.ACL {
	return append(zk.DigestACL(zk.PermAll, user, password), zk.WorldACL(zk.PermRead)...)
}

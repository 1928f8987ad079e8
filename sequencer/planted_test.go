package sequencer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/fence"
)

// Nodes planted by a ZooKeeper client that is not seqd (possible while the
// lock nodes are world:anyone ALL): renew, check and status must keep giving
// one answer to "who holds it".

// prepareLock makes the lock node and moves its sequence counter on by two,
// so that a contender created next has sequence 2 and a planted
// x-lock-0000000000 sorts below it.
func prepareLock(t *testing.T, rogue *zk.Conn, root, name string) string {
	t.Helper()
	p := root + "/" + name
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		if _, err := rogue.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := rogue.Create(p+"/junk", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := rogue.Delete(p+"/junk", -1); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A persistent node named like a contender, under a free lock: it blocks the
// lock (nobody can delete it but its planter), but it is no holder: check
// refuses its czxid, status says the lock is blocked and by what, and the
// blocked lock is counted. Before, check called the planted czxid valid and
// status showed the lock as held.
func TestPlantedPersistentContenderIsNoHolder(t *testing.T) {
	c := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: c.Servers()})
	rogue := zkConn(t, c.Servers())
	lockNode := prepareLock(t, rogue, d.svc.Config().Root, "planted")
	if _, err := rogue.Create(lockNode+"/x-lock-0000000000", []byte(`{"owner":"mallory"}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := rogue.Get(lockNode + "/x-lock-0000000000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.Acquire(ctxT(t, 10*time.Second), "planted", "alice", 10*time.Second, 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire behind a planted node = %v, want held", err)
	}
	res, err := d.client.Check(ctxT(t, 10*time.Second), "planted", uint64(st.Czxid))
	if err == nil || res.Valid {
		t.Errorf("check of the planted node's czxid = %+v, %v; want refused", res, err)
	}
	status, err := d.client.Status(ctxT(t, 10*time.Second), "planted")
	if err != nil {
		t.Fatal(err)
	}
	if status.Held || status.Owner != "" || status.BlockedBy != "x-lock-0000000000" {
		t.Errorf("status = %+v; want not held, no owner, blocked_by x-lock-0000000000", status)
	}
	wantCounters(t, d.reg, []counterWant{{"seqd_locks_blocked_total", map[string]string{"lock": "planted"}, 1}})
}

// A lower ephemeral contender appears next to a live holder: the holder's
// lease is lost at its next renew (409 stale_token: the lock moved on), check calls the holder's token
// stale and the newcomer's valid, status shows the newcomer, and the loss is
// counted. Before, renew answered 200 and listed the lease while check
// called its token stale. The same holds when check comes first.
func TestLowerContenderEndsTheLease(t *testing.T) {
	for _, first := range []string{"renew", "check"} {
		t.Run(first+" first", func(t *testing.T) {
			c := sharedZK.Get(t)
			d := startDaemon(t, daemonOpts{servers: c.Servers()})
			rogue := zkConn(t, c.Servers())
			lockNode := prepareLock(t, rogue, d.svc.Config().Root, "overtaken")
			l, err := d.client.Acquire(ctxT(t, 10*time.Second), "overtaken", "alice", 30*time.Second, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rogue.Create(lockNode+"/x-lock-0000000000", []byte(`{"owner":"mallory"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			_, st, err := rogue.Get(lockNode + "/x-lock-0000000000")
			if err != nil {
				t.Fatal(err)
			}
			rogueToken := uint64(st.Czxid)
			if first == "check" {
				if res, err := d.client.Check(ctxT(t, 10*time.Second), "overtaken", l.Token); err == nil || res.Valid {
					t.Errorf("check of the overtaken holder's token = %+v, %v; want refused", res, err)
				}
			}
			// The newcomer's czxid is above the holder's token: the lock
			// moved on, so the token is stale.
			if _, err := d.client.Renew(ctxT(t, 10*time.Second), "overtaken", l.LeaseID, l.Token, 0); !errors.Is(err, fence.ErrStaleToken) {
				t.Errorf("renew of the overtaken lease = %v, want stale token", err)
			}
			if leases, err := d.client.Leases(ctxT(t, 10*time.Second)); err != nil || len(leases) != 0 {
				t.Errorf("leases = %+v, %v; want none", leases, err)
			}
			if res, err := d.client.Check(ctxT(t, 10*time.Second), "overtaken", rogueToken); err != nil || !res.Valid {
				t.Errorf("check of the lower contender's czxid = %+v, %v; want valid", res, err)
			}
			status, err := d.client.Status(ctxT(t, 10*time.Second), "overtaken")
			if err != nil {
				t.Fatal(err)
			}
			if !status.Held || status.Token != rogueToken || status.Owner != "mallory" || status.ExpiresAt != nil {
				t.Errorf("status = %+v; want held by the lower contender (token %d, owner mallory)", status, rogueToken)
			}
			wantCounters(t, d.reg, []counterWant{
				{"seqd_grants_overtaken_total", map[string]string{"lock": "overtaken"}, 1},
				{"seqd_releases_total", map[string]string{"lock": "overtaken", "reason": "lost"}, 1},
			})
			// Our contender was deleted: when the newcomer goes, nobody
			// holds the lock.
			if err := rogue.Delete(lockNode+"/x-lock-0000000000", -1); err != nil {
				t.Fatal(err)
			}
			if status, err := d.client.Status(ctxT(t, 10*time.Second), "overtaken"); err != nil || status.Held {
				t.Errorf("status after the newcomer left = %+v, %v; want not held", status, err)
			}
		})
	}
}

// Rewriting the holder's contender data does not change the owner status
// shows: a contender's data is written once, at create, so data of another
// version is not shown. Before, status showed the rewritten owner.
func TestRewrittenOwnerIsNotShown(t *testing.T) {
	c := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: c.Servers()})
	rogue := zkConn(t, c.Servers())
	l, err := d.client.Acquire(ctxT(t, 10*time.Second), "rewritten", "alice", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	lockNode := d.svc.Config().Root + "/rewritten"
	kids, _, err := rogue.Children(lockNode)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children = %v, %v", kids, err)
	}
	if _, err := rogue.Set(lockNode+"/"+kids[0], []byte(`{"owner":"mallory"}`), -1); err != nil {
		t.Fatal(err)
	}
	status, err := d.client.Status(ctxT(t, 10*time.Second), "rewritten")
	if err != nil {
		t.Fatal(err)
	}
	if !status.Held || status.Token != l.Token || status.Owner == "mallory" || !status.OwnerRewritten {
		t.Errorf("status = %+v; want held with token %d, owner not mallory, owner_rewritten", status, l.Token)
	}
}

package zklock

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv/zktest"
)

// overtakeCounter counts Overtaken and Blocked reports.
type overtakeCounter struct {
	nopObserver
	overtaken, blocked atomic.Int32
}

func (o *overtakeCounter) Overtaken(string) { o.overtaken.Add(1) }
func (o *overtakeCounter) Blocked(string)   { o.blocked.Add(1) }

// A contender planted below a live holder (ephemeral or not) ends the grant
// without a renew or a check: the holder's watch on the lock's children
// sees it, within lookEvery. The grant's contender is deleted, the loss reported.
func TestLowerContenderEndsTheGrant(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	rogue := rawConn(t, c.Servers())
	for _, tc := range []struct {
		name  string
		flags int32
	}{
		{"ephemeral", zk.FlagEphemeral},
		{"persistent", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &overtakeCounter{}
			s := dial(t, c.Servers(), Options{Observer: obs})
			m := mutex(t, s, "planted/"+tc.name)
			// The lock node, with its sequence counter moved on so that
			// x-lock-0000000000 sorts below our contender.
			for _, p := range []string{"/seqd", DefaultRoot, "/seqd/locks/planted", m.Path()} {
				if _, err := rogue.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
			}
			if _, err := rogue.Create(m.Path()+"/junk", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if err := rogue.Delete(m.Path()+"/junk", -1); err != nil {
				t.Fatal(err)
			}
			g, err := m.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			planted := m.Path() + "/x-lock-0000000000"
			if _, err := rogue.Create(planted, nil, tc.flags, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rogue.Delete(planted, -1) })
			select {
			case <-g.Lost():
			case <-time.After(5 * time.Second):
				t.Fatal("grant not lost after a lower contender appeared")
			}
			if err := g.Err(); !errors.Is(err, ErrOvertaken) || !errors.Is(err, ErrLockLost) {
				t.Errorf("grant error = %v, want ErrLockLost and ErrOvertaken", err)
			}
			if n := obs.overtaken.Load(); n != 1 {
				t.Errorf("Overtaken reports = %d, want 1", n)
			}
			zktest.Eventually(t, 5*time.Second, "our contender to be deleted", func() bool { return len(children(t, s, m.Path())) == 1 })
			h, err := m.Holder(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if tc.flags == 0 {
				if h.Held || h.Blocked != "x-lock-0000000000" || obs.blocked.Load() != 1 {
					t.Errorf("Holder = %+v, blocked reports %d; want not held, blocked by x-lock-0000000000, 1 report", h, obs.blocked.Load())
				}
			} else if !h.Held || h.Node != "x-lock-0000000000" || h.Owner != rogue.SessionID() {
				t.Errorf("Holder = %+v; want held by x-lock-0000000000 of session 0x%x", h, rogue.SessionID())
			}
		})
	}
}

// A semaphore lease whose node another client deletes or rewrites ends at
// once, without a verification: the grant watches its own node from the
// start. Before, it watched the other leases, and a rewrite was noticed
// only at the holder's next verification.
func TestChangedLeaseNodeEndsTheGrant(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	rogue := rawConn(t, c.Servers())
	s := dial(t, c.Servers(), Options{})
	for _, change := range []string{"deleted", "rewritten"} {
		t.Run(change, func(t *testing.T) {
			sem := semaphore(t, s, "changed-lease/"+change, 2)
			g, err := sem.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if change == "deleted" {
				err = rogue.Delete(g.Path, -1)
			} else {
				_, err = rogue.Set(g.Path, []byte("mallory"), -1)
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-g.Lost():
			case <-time.After(5 * time.Second):
				t.Fatalf("lease whose node was %s not lost within 5s", change)
			}
			if err := g.Err(); !errors.Is(err, ErrLockLost) {
				t.Errorf("grant error = %v, want ErrLockLost", err)
			}
		})
	}
}

package sequencer_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestDeletedSemaphoreLeaseIsLost: another ZooKeeper client (no auth, the
// nodes are open) deletes the lease nodes of semaphores of one slot. The
// renewals sent right after the deletion answer 409 lost, never 200: the
// slot is free, and a second holder takes it next, so a 200 would tell two
// holders of a one-slot semaphore that they hold. The deletions happen in
// one transaction and the renewals run at once, so that the daemon has many
// deletion events to act on while the renewals arrive.
func TestDeletedSemaphoreLeaseIsLost(t *testing.T) {
	c := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: c.Servers()})
	rogue := zkConn(t, c.Servers())
	ctx := ctxT(t, 60*time.Second)
	const n = 16
	leases := make([]Lease, n)
	var deletes []any
	for i := range leases {
		name := fmt.Sprintf("deleted-%d", i)
		l, err := d.client.AcquireSemaphore(ctx, name, "first", 1, 30*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
		dir := d.svc.Config().SemaphoreRoot + "/" + name + "/leases"
		kids, _, err := rogue.Children(dir)
		if err != nil || len(kids) != 1 {
			t.Fatalf("%s: children %v, %v; want the one lease node", dir, kids, err)
		}
		deletes = append(deletes, &zk.DeleteRequest{Path: dir + "/" + kids[0], Version: -1})
	}
	if _, err := rogue.Multi(deletes...); err != nil {
		t.Fatal(err)
	}
	renewAll := func(when string) {
		var wg sync.WaitGroup
		for _, l := range leases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := d.client.RenewSemaphore(ctx, l.Name, l.LeaseID, l.Token, 0)
				if !isCode(err, 409, CodeLost) {
					t.Errorf("%s: renew of %s, whose lease node was deleted = %v, want 409 lost", when, l.Name, err)
				}
			}()
		}
		wg.Wait()
	}
	renewAll("right after the deletion")
	// The slots are free: a second holder gets each one, and the first
	// holders stay lost.
	for _, l := range leases {
		if _, err := d.client.AcquireSemaphore(ctx, l.Name, "second", 1, 30*time.Second, 0); err != nil {
			t.Errorf("second holder of %s: %v, want the freed slot", l.Name, err)
		}
	}
	renewAll("after a second holder took the slot")
}

func isCode(err error, status int, code string) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Status == status && ae.Code == code
}

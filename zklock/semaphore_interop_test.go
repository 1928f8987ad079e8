package zklock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// startCurator runs testdata/CuratorSemaphore.java on path with limit.
func startCurator(t *testing.T, hosts, path string, limit int) *peer {
	t.Helper()
	return startPeer(t, "curator semaphore", "", "java", "-cp", curatorClasspath, "testdata/CuratorSemaphore.java", hosts, path, fmt.Sprint(limit))
}

func (k *peer) say(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(k.stdin, line); err != nil {
		t.Fatal(err)
	}
}

// Curator's InterProcessSemaphoreV2 and Semaphore on one path share its
// slots, both ways: each is refused when the other fills the semaphore, and
// granted when the other frees a slot.
func TestInteropCuratorSemaphore(t *testing.T) {
	needCurator(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	const limit = 2
	sem := semaphore(t, s, "interop/curator", limit)
	cur := startCurator(t, c.ConnectString(), sem.Path(), limit)

	ours, err := sem.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// One slot left: Curator gets it (the control: it can be granted).
	cur.say(t, "try 20000")
	if got := cur.line(t, 60*time.Second); got != "true" {
		t.Fatalf("curator on a semaphore with a free slot printed %q, want true", got)
	}
	if _, err := sem.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire with the slots held by us and Curator: %v, want ErrHeld", err)
	}
	if n, err := sem.Holders(context.Background()); err != nil || n != limit {
		t.Fatalf("holders %d (%v), want %d", n, err, limit)
	}
	cur.say(t, "release")
	if got := cur.line(t, 30*time.Second); got != "released" {
		t.Fatalf("curator printed %q, want released", got)
	}
	second, err := sem.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("TryAcquire after Curator released: %v", err)
	}
	if second.Token <= ours.Token {
		t.Fatalf("token %d, want above %d", second.Token, ours.Token)
	}
	// We fill it: Curator is refused, then granted once we free a slot.
	cur.say(t, "try 500")
	if got := cur.line(t, 30*time.Second); got != "false" {
		t.Fatalf("curator on a semaphore we fill printed %q, want false", got)
	}
	cur.say(t, "try 20000")
	// Curator waits with a lease node of its own: ours two and its one. It
	// is no holder: the count stays at the limit.
	leaseNodes := func() int {
		kids, _, err := s.conn.Children(sem.Path() + "/leases")
		if err != nil {
			return -1
		}
		return len(kids)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := leaseNodes(); n != limit+1; n = leaseNodes() {
		if time.Now().After(deadline) {
			t.Fatalf("curator's waiting lease never appeared (%d nodes)", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n, err := sem.Holders(context.Background()); err != nil || n != limit {
		t.Fatalf("holders with Curator waiting: %d (%v), want %d: a waiter is no holder", n, err, limit)
	}
	if err := ours.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := cur.line(t, 30*time.Second); got != "true" {
		t.Fatalf("curator after we freed a slot printed %q, want true", got)
	}
	second.Release(context.Background())
}

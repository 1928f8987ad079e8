package zklock

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Held grants cost no goroutine: the session's one monitor parks them. Each
// one still learns at once that its node was deleted (a lock's contender,
// a semaphore's lease). Not parallel: it counts the process's goroutines.
func TestHeldGrantsCostNoGoroutine(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 60*time.Second)
	const locks, leases, readers = 200, 50, 5
	before := settledGoroutines()
	var gs []*Grant
	for i := range locks {
		g, err := mutex(t, s, fmt.Sprintf("monitor/nogoroutine/%d", i)).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	sem := semaphore(t, s, "monitor/nogoroutine-sem", leases)
	for range leases {
		g, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	// Readers of one lock on one session: parked on one path.
	for range readers {
		r, err := NewReadLock(s, "monitor/nogoroutine-shared")
		if err != nil {
			t.Fatal(err)
		}
		g, err := r.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	waitParked(t, s, gs)
	held := settledGoroutines()
	if d := held - before; d > len(gs)/10 {
		t.Fatalf("%d grants held cost %d goroutines (%d before, %d after): want none per grant", len(gs), d, before, held)
	}
	t.Logf("%d grants held: %d goroutines before, %d after", len(gs), before, held)

	raw := rawConn(t, c.Servers())
	// One reader's node deleted wakes every reader of its lock: that one
	// is lost, the others look and park again.
	first := gs[len(gs)-readers]
	if err := raw.Delete(first.Path, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Lost():
	case <-ctx.Done():
		t.Fatalf("%s: not lost after its node was deleted", first.Path)
	}
	waitParked(t, s, gs[len(gs)-readers+1:])
	for _, g := range gs[len(gs)-readers+1:] {
		if err := g.Err(); err != nil {
			t.Fatalf("a reader beside the one deleted ended: %v", err)
		}
	}
	for _, g := range gs {
		if g == first {
			continue
		}
		if err := raw.Delete(g.Path, -1); err != nil {
			t.Fatalf("delete %s: %v", g.Path, err)
		}
	}
	for _, g := range gs {
		select {
		case <-g.Lost():
			if !errors.Is(g.Err(), ErrLockLost) {
				t.Fatalf("%s ended with %v, want ErrLockLost", g.Path, g.Err())
			}
		case <-ctx.Done():
			t.Fatalf("%s: not lost after its node was deleted", g.Path)
		}
	}
}

// A watch that fired before its grant was parked (between the read that set
// it and the park: go-zookeeper calls back before it delivers to the
// channel) is still found: the monitor polls a new park's channel. The
// control parks a grant the same way without that poll, and it never
// learns its node is gone.
func TestMonitorFindsAWatchThatFiredBeforeThePark(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 30*time.Second)
	raw := rawConn(t, c.Servers())

	// unparkAndDelete takes g out of the monitor, as if its look had just
	// set the watch, and deletes its node, so that the event finds no
	// parked grant; it returns the watch, fired.
	unparkAndDelete := func(g *Grant) chanEvent {
		waitParked(t, s, []*Grant{g})
		s.mon.mu.Lock()
		ch := g.mon.ch
		s.mon.unparkLocked(g)
		g.mon.state = looking
		s.mon.mu.Unlock()
		if err := raw.Delete(g.Path, -1); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := s.conn.Exists(g.Path); err != nil || ok {
			t.Fatalf("%s still there (%v)", g.Path, err)
		}
		return ch
	}

	g, err := mutex(t, s, "monitor/beforepark").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch := unparkAndDelete(g)
	if !s.park(g, ch) {
		t.Fatal("park refused on a live session")
	}
	select {
	case <-g.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the grant was parked with a fired watch and never learnt its node was deleted")
	}

	// The control: parked without the poll. The park of its acquire may
	// still be polled (the monitor drops a park once a later event or
	// answer shows nothing can still reach it, which a loaded machine
	// can delay past this point): that park goes too.
	g2, err := mutex(t, s, "monitor/beforepark-control").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch = unparkAndDelete(g2)
	s.mon.mu.Lock()
	s.mon.recent = slices.DeleteFunc(s.mon.recent, func(p parking) bool { return p.g == g2 })
	g2.mon.state, g2.mon.ch, g2.mon.next = parked, ch, s.mon.parked[g2.watchedPath()]
	s.mon.parked[g2.watchedPath()] = g2
	s.mon.mu.Unlock()
	select {
	case <-g2.Lost():
		t.Fatal("control: a grant parked without the poll learnt of an event it could not have seen; the test shows nothing")
	case <-time.After(time.Second):
	}
	_ = g2.Release(ctx)
}

type chanEvent = <-chan zk.Event

// waitParked waits until every grant of gs is parked.
func waitParked(t *testing.T, s *Session, gs []*Grant) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := 0
		s.mon.mu.Lock()
		for _, g := range gs {
			if g.mon.state == parked {
				n++
			}
		}
		s.mon.mu.Unlock()
		if n == len(gs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d grants parked after 20s", n, len(gs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settledGoroutines counts the process's goroutines once the count has
// stopped falling (looks and requests finishing).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

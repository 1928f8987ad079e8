package zklock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// hook registers an AfterEnd hook on g and returns the channel its error
// arrives on.
func hook(g *Grant) <-chan error {
	ch := make(chan error, 1)
	g.AfterEnd(func(err error) { ch <- err })
	return ch
}

func hookErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the AfterEnd hook was not called", what)
		return nil
	}
}

// Hooks run once each when the grant ends, with its error, and at once when
// registered on a grant that has ended.
func TestAfterEnd(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 30*time.Second)

	g, err := mutex(t, s, "afterend/released").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, b := hook(g), hook(g)
	select {
	case err := <-a:
		t.Fatalf("hook called while the grant holds: %v", err)
	default:
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan error{a, b} {
		if err := hookErr(t, ch, "release"); !errors.Is(err, ErrReleased) {
			t.Fatalf("hook after release got %v, want ErrReleased", err)
		}
	}
	if err := hookErr(t, hook(g), "registered after the end"); !errors.Is(err, ErrReleased) {
		t.Fatalf("hook registered after the end got %v, want ErrReleased", err)
	}
	select {
	case err := <-a:
		t.Fatalf("hook called twice (again with %v)", err)
	case <-time.After(50 * time.Millisecond): // a second call would come at once
	}

	// On a loss the hook may release the grant (which waits for the
	// grant's monitor) without a deadlock.
	g, err = mutex(t, s, "afterend/lost").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	g.AfterEnd(func(err error) {
		if !errors.Is(err, ErrLockLost) {
			released <- fmt.Errorf("hook got %v, want ErrLockLost", err)
			return
		}
		released <- g.Release(context.Background())
	})
	if err := s.conn.Delete(g.Path, -1); err != nil { // an operator removes it
		t.Fatal(err)
	}
	if err := hookErr(t, released, "loss"); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Release from the hook = %v, want ErrLockLost", err)
	}
}

// Lost is made when first asked for: asked while the grant holds, it is one
// channel that closes at the end; asked after the end, it is closed already.
// A lost grant closes it as a released one does.
func TestLostWhenAsked(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 30*time.Second)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}

	g, err := mutex(t, s, "lostasked/released").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.lost != nil {
		t.Fatal("a grant made its Lost channel before it was asked for")
	}
	ch := g.Lost()
	if ch != g.Lost() {
		t.Fatal("two calls of Lost gave two channels")
	}
	select {
	case <-ch:
		t.Fatal("Lost closed while the grant holds")
	default:
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) || !closed(g.Lost()) {
		t.Fatal("Lost did not close on release")
	}

	g, err = mutex(t, s, "lostasked/lost").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch = g.Lost()
	if err := s.conn.Delete(g.Path, -1); err != nil { // an operator removes it
		t.Fatal(err)
	}
	if !closed(ch) || !errors.Is(g.Err(), ErrLockLost) {
		t.Fatalf("Lost did not close on a loss (err %v)", g.Err())
	}
}

// Leaderships, semaphore slots and read grants are Grants: their hooks run
// too.
func TestAfterEndKinds(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	ctx := ctxT(t, 30*time.Second)
	e, err := NewElection(s, "afterend-election")
	if err != nil {
		t.Fatal(err)
	}
	lead, err := e.Campaign(ctx, []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	sem, err := NewSemaphore(s, "afterend-semaphore", 2)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := NewReadLock(s, "afterend-read")
	if err != nil {
		t.Fatal(err)
	}
	read, err := rl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for what, g := range map[string]*Grant{"leadership": lead.Grant, "semaphore": slot, "read": read} {
		ch := hook(g)
		if err := g.Release(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := hookErr(t, ch, what); !errors.Is(err, ErrReleased) {
			t.Fatalf("%s: hook got %v, want ErrReleased", what, err)
		}
	}
}

// ReleaseOnClose ends the grant as released and leaves its node to the
// session's close, which hands the lock over; a grant with a lock-delay is
// released cleanly at once, so that the next holder is not delayed.
func TestReleaseOnClose(t *testing.T) {
	c := shared.Get(t)
	const delay = 3 * time.Second
	for _, d := range []time.Duration{0, delay} {
		t.Run(fmt.Sprint("delay ", d), func(t *testing.T) {
			holderS := dial(t, c.Servers(), Options{})
			waiterS := dial(t, c.Servers(), Options{})
			name := fmt.Sprintf("release-on-close-%d", time.Now().UnixNano())
			holder := mutex(t, holderS, name, WithLockDelay(d))
			waiter := mutex(t, waiterS, name)
			got := handOver(t, holder, waiter, func(g *Grant) {
				ended := hook(g)
				if err := g.ReleaseOnClose(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := hookErr(t, ended, "ReleaseOnClose"); !errors.Is(err, ErrReleased) {
					t.Fatalf("grant ended with %v, want ErrReleased", err)
				}
				if err := g.ReleaseOnClose(context.Background()); err != nil {
					t.Fatalf("second ReleaseOnClose = %v, want nil", err)
				}
				kids := children(t, waiterS, holder.Path())
				switch {
				case d == 0 && len(kids) != 2:
					t.Fatalf("contenders before the session closes: %v, want the holder's and the waiter's", kids)
				case d > 0 && len(kids) != 1:
					t.Fatalf("contenders after the release of a grant with a lock-delay: %v, want the waiter's alone", kids)
				}
				holderS.Close()
			})
			if got > delay/2 {
				t.Fatalf("granted %v after the session closed, want at once (well under %v)", got, delay)
			}
		})
	}
}

package sequencer_test

import (
	"testing"
	"time"
)

// Close hands every kind of lease over to another daemon, and counts each
// as released: those without a lock-delay go with the session's close, a
// lock with a lock-delay is released cleanly, so that the next holder is
// not delayed.
func TestCloseHandsOver(t *testing.T) {
	zkc := sharedZK.Get(t)
	const delay = 10 * time.Second
	a := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	b := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	plain, err := a.svc.Acquire(ctx, "close/plain", "a", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	delayed, err := a.svc.Acquire(ctx, "close/delayed", "a", time.Hour, 0, WithLockDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	shared, err := a.svc.Acquire(ctx, "close/shared", "a", time.Hour, 0, WithShared())
	if err != nil {
		t.Fatal(err)
	}
	sem, err := a.svc.AcquireSemaphore(ctx, "close/semaphore", "a", 1, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := a.svc.Campaign(ctx, "close/election", "a", "", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Lease{plain, delayed, shared, sem} {
		if got := counter(t, a.reg, "seqd_releases_total", map[string]string{"lock": l.Name, "reason": "released"}); got != 1 {
			t.Fatalf("%s: %v releases counted, want 1", l.Name, got)
		}
	}
	if n := len(a.svc.Leases()); n != 0 {
		t.Fatalf("%d leases left after Close", n)
	}
	const wait = 20 * time.Second
	for _, l := range []Lease{plain, delayed} {
		got, err := b.svc.Acquire(ctx, l.Name, "b", time.Minute, wait)
		if err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		if got.Token <= l.Token {
			t.Fatalf("%s: token %d, want above %d", l.Name, got.Token, l.Token)
		}
	}
	if after := time.Since(start); after > delay/2 {
		t.Fatalf("the lock with a lock-delay was granted %v after Close began, want at once (a clean release)", after)
	}
	if _, err := b.svc.AcquireSemaphore(ctx, sem.Name, "b", 1, time.Minute, wait); err != nil {
		t.Fatalf("semaphore: %v", err)
	}
	if got, err := b.svc.Campaign(ctx, lead.Name, "b", "", time.Minute, wait); err != nil || got.Term <= lead.Term {
		t.Fatalf("election: %+v, %v; want a term above %d", got, err, lead.Term)
	}
	// The reader's node is gone too: an exclusive acquire is granted.
	if _, err := b.svc.Acquire(ctx, shared.Name, "b", time.Minute, wait); err != nil {
		t.Fatalf("after the reader: %v", err)
	}
}

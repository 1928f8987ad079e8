package sequencer_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv/zktest"
)

// The expiry schedule keeps absolute deadlines on the injected clock: a
// jump of the clock ends exactly the leases whose expiry it reaches (one
// whose expiry is the new time included), a renewal just before the
// deadline saves its lease, and a renewal postpones the expiry.
func TestExpiryScheduleFakeClock(t *testing.T) {
	zkc := sharedZK.Get(t)
	clk := newFakeClock()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk, timeout: 30 * time.Second})
	ctx := ctxT(t, 2*time.Minute)
	t0 := clk.Now()

	// Lease i has a TTL of 1s + i×500ms: expiries from t0+1s to t0+10.5s.
	const n = 20
	leases := make([]Lease, n)
	name := func(i int) string { return fmt.Sprintf("sched/%d", i) }
	for i := range n {
		l, err := d.svc.Acquire(ctx, name(i), "owner", time.Second+time.Duration(i)*500*time.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	live := map[int]bool{}
	for i := range n {
		live[i] = true
	}
	// step moves the clock to t0+at and checks that exactly the leases of
	// gone have ended (by expiry), the others being live.
	step := func(at time.Duration, gone ...int) {
		t.Helper()
		clk.Set(t0.Add(at))
		for _, i := range gone {
			delete(live, i)
		}
		zktest.Eventually(t, 30*time.Second, fmt.Sprintf("the leases %v to expire at t0+%v", gone, at), func() bool {
			held := map[string]bool{}
			for _, l := range d.svc.Leases() {
				held[l.Name] = true
			}
			for _, i := range gone {
				// Counted once the contender is deleted, just after the
				// lease leaves the list.
				if held[name(i)] || counter(t, d.reg, "seqd_releases_total", map[string]string{"lock": name(i), "reason": "expired"}) == 0 {
					return false
				}
			}
			return true
		})
		held := map[string]bool{}
		for _, l := range d.svc.Leases() {
			held[l.Name] = true
		}
		for i := range n {
			if held[name(i)] != live[i] {
				t.Fatalf("at t0+%v lease %d (expires %v) held = %v, want %v", at, i, leases[i].ExpiresAt.Sub(t0), held[name(i)], live[i])
			}
		}
		for _, i := range gone {
			if got := counter(t, d.reg, "seqd_releases_total", map[string]string{"lock": name(i), "reason": "expired"}); got != 1 {
				t.Fatalf("lease %d: %v expiries counted, want 1", i, got)
			}
		}
	}

	step(1900*time.Millisecond, 0, 1)
	// 100ms before its deadline, lease 2 is renewed (to t0+3.9s); lease 5
	// (t0+3.5s) is postponed to t0+5.4s.
	for _, i := range []int{2, 5} {
		r, err := d.svc.Renew(ctx, name(i), leases[i].LeaseID, leases[i].Token, 0)
		if err != nil {
			t.Fatalf("renew %d: %v", i, err)
		}
		if want := clk.Now().Add(time.Duration(r.TTL)); !r.ExpiresAt.Equal(want) {
			t.Fatalf("renew %d: expires %v, want %v", i, r.ExpiresAt, want)
		}
		leases[i] = r
	}
	step(2 * time.Second) // lease 2's old deadline: nothing ends
	step(4*time.Second, 2, 3, 4, 6)
	step(5400*time.Millisecond, 5, 7, 8)
	// A jump over many deadlines at once.
	step(9*time.Second, 9, 10, 11, 12, 13, 14, 15, 16)
	for i := range live {
		if err := d.svc.Release(ctx, name(i), leases[i].LeaseID, leases[i].Token); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		delete(live, i)
	}
	step(20 * time.Second) // nothing left to expire, nothing miscounted
	for i := range n {
		if got := counter(t, d.reg, "seqd_releases_total", map[string]string{"lock": name(i), "reason": "expired"}); got > 1 {
			t.Fatalf("lease %d: %v expiries counted, want at most 1", i, got)
		}
	}
}

// A held lease costs at most one goroutine (its grant's monitor): the
// daemon's expiry schedule and the grant's end hook replace a goroutine per
// lease. Releasing the leases gives the goroutines back.
func TestGoroutinesPerLease(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), timeout: 30 * time.Second})
	ctx := ctxT(t, 2*time.Minute)
	const n = 200
	// Settle the idle daemon's own goroutines first.
	if _, err := d.svc.Status(ctx, "gor/warm"); err != nil {
		t.Fatal(err)
	}
	base := idleGoroutines()
	leases := make([]Lease, n)
	for i := range n {
		l, err := d.svc.Acquire(ctx, fmt.Sprintf("gor/%d", i), "owner", time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	// Goroutines that an acquire leaves finishing (a request answered
	// after its caller returned) end on their own: wait for the count to
	// come down to the bound, and fail if it never does.
	if got := goroutinesAtMost(base + n); got > base+n {
		t.Fatalf("%d leases hold %d goroutines (%.2f per lease), want at most 1 per lease", n, got-base, float64(got-base)/n)
	}
	for i, l := range leases {
		if err := d.svc.Release(ctx, fmt.Sprintf("gor/%d", i), l.LeaseID, l.Token); err != nil {
			t.Fatal(err)
		}
	}
	// Every lease's goroutine ends with it (a little slack for the
	// session's own, which come and go).
	if got := goroutinesAtMost(base + 5); got > base+5 {
		t.Fatalf("after releasing every lease %d goroutines are left over the idle daemon's %d", got-base, base)
	}
}

// idleGoroutines is runtime.NumGoroutine after a moment to settle.
func idleGoroutines() int {
	time.Sleep(200 * time.Millisecond) // letting a count settle, not ordering
	return runtime.NumGoroutine()
}

// goroutinesAtMost waits up to 20s for runtime.NumGoroutine to come down
// to want and returns the last count.
func goroutinesAtMost(want int) int {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond) // polling a count, not ordering
	}
}

package sequencer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// A holder that pauses past its lease is fenced, through HTTP on the wall
// clock: B takes over with a higher token and A's late renew, release and
// check are refused as stale, and counted.
func TestPausedHolderIsFencedHTTP(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 60*time.Second)
	const name = "paused/http"

	a, err := d.client.Acquire(ctx, name, "A", 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.client.Acquire(ctx, name, "B", 0, 0)
	wantConflict(t, err, CodeHeld, a.Token)

	ra, err := d.client.Renew(ctx, name, a.LeaseID, a.Token, 0)
	if err != nil || ra.Token != a.Token {
		t.Fatalf("renew = %+v, %v; want the same token %d", ra, err, a.Token)
	}
	// A stops renewing (it pauses). B waits and gets the lock once A's TTL
	// has passed.
	start := time.Now()
	b, err := d.client.Acquire(ctx, name, "B", 10*time.Second, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("B granted %v after A's last renewal (ttl 2s)", time.Since(start).Round(time.Millisecond))
	if b.Token <= a.Token {
		t.Fatalf("B's token %d not above A's %d", b.Token, a.Token)
	}
	// A wakes up.
	res := wantStaleEverywhere(t, ctx, d.client, a, b.Token)
	if res.Valid || res.CurrentToken != b.Token {
		t.Fatalf("check of A's token = %+v, want invalid with current %d", res, b.Token)
	}
	if res, err := d.client.Check(ctx, name, b.Token); err != nil || !res.Valid {
		t.Fatalf("check of B's token = %+v, %v; want valid", res, err)
	}
	wantCounters(t, d.reg, []counterWant{
		{"seqd_grants_total", map[string]string{"lock": name}, 2},
		{"seqd_renewals_total", map[string]string{"lock": name}, 1},
		{"seqd_releases_total", map[string]string{"lock": name, "reason": "expired"}, 1},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": name, "source": "renew"}, 1},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": name, "source": "release"}, 1},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": name, "source": "check"}, 1},
	})
	if err := d.client.Release(ctx, name, b.LeaseID, b.Token); err != nil {
		t.Fatal(err)
	}
}

// A holder that pauses past its lease is fenced, on the injected clock: the
// pause is replayed exactly, with no sleeping, and B is not granted a moment
// before A's TTL has passed.
func TestPausedHolderIsFencedFakeClock(t *testing.T) {
	zkc := sharedZK.Get(t)
	clk := newFakeClock()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk, timeout: 30 * time.Second})
	ctx := ctxT(t, 60*time.Second)
	const name = "paused/fake"

	a, err := d.svc.Acquire(ctx, name, "A", 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.svc.Acquire(ctx, name, "B", 2*time.Second, 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("B's try = %v, want ErrHeld", err)
	}
	clk.Advance(time.Second)
	if ra, err := d.svc.Renew(ctx, name, a.LeaseID, a.Token, 0); err != nil || ra.Token != a.Token {
		t.Fatalf("renew = %+v, %v", ra, err)
	}
	type result struct {
		l   Lease
		err error
	}
	bc := make(chan result, 1)
	go func() {
		l, err := d.svc.Acquire(ctx, name, "B", 10*time.Second, time.Minute)
		bc <- result{l, err}
	}()
	zktest.Eventually(t, 30*time.Second, "B to queue", func() bool {
		st, err := d.svc.Status(ctx, name)
		return err == nil && st.Waiters == 1
	})
	clk.Advance(1900 * time.Millisecond) // 2.9s: A renewed at 1s, so its lease runs to 3s
	if st, _ := d.svc.Status(ctx, name); st.Token != a.Token || !st.Held {
		t.Fatalf("before A's TTL passed the holder is %+v, want A (token %d)", st, a.Token)
	}
	select {
	case r := <-bc:
		t.Fatalf("B granted before A's TTL passed: %+v %v", r.l, r.err)
	default:
	}
	clk.Advance(200 * time.Millisecond) // 3.1s: A's lease expires
	r := <-bc
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.l.Token <= a.Token {
		t.Fatalf("B's token %d not above A's %d", r.l.Token, a.Token)
	}
	_, err = d.svc.Renew(ctx, name, a.LeaseID, a.Token, 0)
	var ce *sequencer.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, fence.ErrStaleToken) || ce.CurrentToken != r.l.Token {
		t.Fatalf("A's late renew = %v, want stale with current %d", err, r.l.Token)
	}
	if err := d.svc.Release(ctx, name, a.LeaseID, a.Token); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("A's late release = %v, want stale", err)
	}
	if _, err := d.svc.Check(ctx, name, a.Token); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("check of A's token = %v, want stale", err)
	}
	if got := counter(t, d.reg, "seqd_releases_total", map[string]string{"reason": "expired"}); got != 1 {
		t.Fatalf("expired releases = %v, want 1", got)
	}
}

// TestOwnerNameDoesNotObtainTheLease: knowing the holder's owner string (it
// is in every status answer) is not enough to obtain its lease: acquiring as
// that owner without the lease_id is 409 held and changes nothing, while the
// holder's own retry with its lease_id gets the same lease and token. No
// listing gives out lease ids.
func TestOwnerNameDoesNotObtainTheLease(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 30*time.Second)
	a1, err := d.client.Acquire(ctx, "same", "A", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.client.Status(ctx, "same")
	if err != nil || st.Owner != "A" {
		t.Fatalf("status = %+v, %v; want owner A shown", st, err)
	}
	_, err = d.client.Acquire(ctx, "same", st.Owner, time.Hour, 0)
	wantConflict(t, err, CodeHeld, a1.Token)
	if got := d.svc.Leases(); len(got) != 1 || time.Duration(got[0].TTL) != 5*time.Second {
		t.Fatalf("leases after the hijack attempt = %+v, want A's unchanged (ttl 5s)", got)
	}
	// The control: the same request with the lease_id is the holder's retry.
	a2, err := d.client.Acquire(ctx, "same", "A", 7*time.Second, 0, WithLeaseID(a1.LeaseID))
	if err != nil || a2.Token != a1.Token || a2.LeaseID != a1.LeaseID || time.Duration(a2.TTL) != 7*time.Second {
		t.Fatalf("retry with the lease_id = %+v, %v; want the same lease and token with ttl 7s", a2, err)
	}
	// Someone else's owner with the right id is refused too.
	if _, err := d.client.Acquire(ctx, "same", "B", 7*time.Second, 0, WithLeaseID(a1.LeaseID)); !isStatus(err, 400) {
		t.Fatalf("another owner with A's lease_id = %v, want 400", err)
	}
	code, body := httpDo(t, "GET", d.srv.URL+"/v1/locks", "")
	if code != 200 || strings.Contains(body, "lease_id") || strings.Contains(body, a1.LeaseID) {
		t.Fatalf("GET /v1/locks = %d %s; want the held lock without its lease_id", code, body)
	}
	if err := d.client.Release(ctx, "same", a1.LeaseID, a1.Token); err != nil {
		t.Fatal(err)
	}
	a3, err := d.client.Acquire(ctx, "same", "A", 5*time.Second, 0)
	if err != nil || a3.Token <= a1.Token {
		t.Fatalf("acquire after release = %+v, %v; want a new higher token", a3, err)
	}
	// A released lease: release again is lost (nobody holds a higher one),
	// and the message says the lease is unknown, not that it was lost.
	err = d.client.Release(ctx, "same", a3.LeaseID, a3.Token)
	if err != nil {
		t.Fatal(err)
	}
	err = d.client.Release(ctx, "same", a3.LeaseID, a3.Token)
	wantConflict(t, err, CodeLost, 0)
	if msg := err.Error(); !strings.Contains(msg, "unknown lease") || strings.Contains(msg, "is lost") {
		t.Errorf("release of a released lease: got %q, want it to say unknown lease", msg)
	}
}

// TestAcquireRetryWithChosenLeaseID: a client that chose its lease_id can
// retry an acquire whose answer it lost and gets the lease it was granted.
func TestAcquireRetryWithChosenLeaseID(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 30*time.Second)
	const id = "0123456789abcdef0123456789abcdef"
	first, err := d.client.Acquire(ctx, "retry", "A", 10*time.Second, 0, WithLeaseID(id))
	if err != nil || first.LeaseID != id {
		t.Fatalf("acquire with a chosen id = %+v, %v; want lease %s", first, err, id)
	}
	again, err := d.client.Acquire(ctx, "retry", "A", 10*time.Second, 0, WithLeaseID(id))
	if err != nil || again.Token != first.Token {
		t.Fatalf("retry = %+v, %v; want token %d", again, err, first.Token)
	}
	for _, bad := range []string{"short", "0123456789ABCDEF0123456789ABCDEF", id + "0"} {
		if _, err := d.client.Acquire(ctx, "retry-bad", "A", 10*time.Second, 0, WithLeaseID(bad)); !isStatus(err, 400) {
			t.Errorf("lease_id %q = %v, want 400", bad, err)
		}
	}
}

// Two daemons on one ZooKeeper contend for one lock; a check on either
// answers for the other's holder.
func TestTwoDaemons(t *testing.T) {
	zkc := sharedZK.Get(t)
	root := "/seqd-test/two-daemons"
	d1 := startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root})
	d2 := startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root})
	ctx := ctxT(t, 30*time.Second)
	const name = "shared/lock"
	l1, err := d1.client.Acquire(ctx, name, "one", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d2.client.Acquire(ctx, name, "two", 10*time.Second, 0)
	wantConflict(t, err, CodeHeld, l1.Token)
	if res, err := d2.client.Check(ctx, name, l1.Token); err != nil || !res.Valid {
		t.Fatalf("check on daemon 2 of daemon 1's holder = %+v, %v; want valid", res, err)
	}
	st, err := d2.client.Status(ctx, name)
	if err != nil || !st.Held || st.Owner != "one" || st.Token != l1.Token || st.ExpiresAt != nil {
		t.Fatalf("status on daemon 2 = %+v, %v; want held by one with token %d, no expiry known", st, err, l1.Token)
	}
	got := make(chan Lease, 1)
	go func() {
		l, err := d2.client.Acquire(ctx, name, "two", 10*time.Second, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	zktest.Eventually(t, 30*time.Second, "daemon 2's waiter", func() bool {
		st, err := d1.client.Status(ctx, name)
		return err == nil && st.Waiters == 1
	})
	if err := d1.client.Release(ctx, name, l1.LeaseID, l1.Token); err != nil {
		t.Fatal(err)
	}
	l2 := <-got
	if l2.Token <= l1.Token {
		t.Fatalf("daemon 2's token %d not above daemon 1's %d", l2.Token, l1.Token)
	}
	_, err = d1.client.Check(ctx, name, l1.Token)
	wantConflict(t, err, CodeStaleToken, l2.Token)
	if res, err := d1.client.Check(ctx, name, l2.Token); err != nil || !res.Valid {
		t.Fatalf("check on daemon 1 of daemon 2's holder = %+v, %v", res, err)
	}
}

// A waiting acquire whose HTTP client goes away withdraws its contender.
func TestClientGoneWithdraws(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 30*time.Second)
	const name = "client-gone"
	a, err := d.client.Acquire(ctx, name, "A", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := d.client.Acquire(rctx, name, "B", 10*time.Second, 5*time.Minute)
		done <- err
	}()
	zktest.Eventually(t, 30*time.Second, "B to queue", func() bool {
		st, err := d.svc.Status(ctx, name)
		return err == nil && st.Waiters == 1
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled acquire returned a lease")
	}
	zktest.Eventually(t, 30*time.Second, "B's contender to go", func() bool {
		st, err := d.svc.Status(ctx, name)
		return err == nil && st.Waiters == 0
	})
	if ch := zkChildren(t, zkc.Servers(), d.svc.Config().Root+"/"+name); len(ch) != 1 {
		t.Fatalf("children = %v; want only A's", ch)
	}
	if err := d.client.Release(ctx, name, a.LeaseID, a.Token); err != nil {
		t.Fatal(err)
	}
}

// The daemon's session expires: its leases are reported lost and later
// grants have higher tokens.
func TestSessionExpiryLosesLeases(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{Servers: 3})
	ctx := ctxT(t, 120*time.Second)
	followers := zkc.Followers()
	if len(followers) < 2 {
		t.Fatalf("followers = %d, want 2", len(followers))
	}
	cut := followers[0]
	d := startDaemon(t, daemonOpts{servers: []string{cut.ClientAddr}, timeout: 2 * time.Second})
	other := startDaemon(t, daemonOpts{servers: []string{followers[1].ClientAddr}, root: d.svc.Config().Root})
	const name = "expiry"
	l, err := d.svc.Acquire(ctx, name, "A", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := cut.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	zktest.Eventually(t, 30*time.Second, "the lease to be lost", func() bool { return len(d.svc.Leases()) == 0 })
	t.Logf("lease lost %v after the server froze (session timeout 2s)", time.Since(paused).Round(time.Millisecond))
	// Cut off from ZooKeeper, the daemon cannot vouch for anything: 503.
	if _, err := d.svc.Renew(ctx, name, l.LeaseID, l.Token, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("renew while cut off = %v, want ErrUnavailable (503)", err)
	}
	if _, err := d.client.Renew(ctx, name, l.LeaseID, l.Token, 0); !isStatus(err, 503) {
		t.Fatalf("HTTP renew while cut off = %v, want 503", err)
	}
	// The other daemon is granted once ZooKeeper expires the session.
	l2, err := other.svc.Acquire(ctx, name, "B", time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token <= l.Token {
		t.Fatalf("token after expiry %d not above %d", l2.Token, l.Token)
	}
	if err := cut.Resume(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "a new session", func() bool { return d.svc.Ready() })
	if got := counter(t, d.reg, "seqd_zk_session_expirations_total", nil); got != 1 {
		t.Errorf("session expirations = %v, want 1", got)
	}
	if got := counter(t, d.reg, "seqd_releases_total", map[string]string{"reason": "lost"}); got != 1 {
		t.Errorf("lost releases = %v, want 1", got)
	}
	// A's old token is stale everywhere now.
	if _, err := d.svc.Renew(ctx, name, l.LeaseID, l.Token, 0); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("renew after the new grant = %v, want stale", err)
	}
	other.svc.Release(ctx, name, l2.LeaseID, l2.Token)
	l3, err := d.svc.Acquire(ctx, name, "A", time.Minute, 10*time.Second)
	if err != nil || l3.Token <= l2.Token {
		t.Fatalf("grant on the new session = %+v, %v; want a token above %d", l3, err, l2.Token)
	}
}

// A renewal that arrives once the TTL has passed, whether or not the expiry
// has run yet, is refused: a lease is never revived after its TTL (the
// contender may already be gone and the lock granted elsewhere).
func TestRenewAfterTTLIsLost(t *testing.T) {
	zkc := sharedZK.Get(t)
	for i := 0; i < 20; i++ {
		clk := newFakeClock()
		d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk, timeout: 30 * time.Second})
		ctx := ctxT(t, 30*time.Second)
		l, err := d.svc.Acquire(ctx, "renew-race", "A", 2*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second) // the TTL passes; the expiry races the renewal below
		r, err := d.svc.Renew(ctx, "renew-race", l.LeaseID, l.Token, 0)
		if !errors.Is(err, ErrLost) {
			t.Fatalf("round %d: renew at the TTL = %+v, %v; want ErrLost", i, r, err)
		}
		d.svc.Close(ctx)
	}
}

// TestFrozenZooKeeperAnswers503Fast: with the daemon's ZooKeeper frozen,
// every request that needs ZooKeeper answers 503 within a fraction of the
// session timeout: while the session still looks alive (a read that gets no
// answer is given up) and after its deadline (refused at once).
func TestFrozenZooKeeperAnswers503Fast(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	const timeout = 2 * time.Second
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), timeout: timeout})
	ctx := ctxT(t, 60*time.Second)
	const name = "frozen"
	gone, err := d.svc.Acquire(ctx, name, "A", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.svc.Release(ctx, name, gone.LeaseID, gone.Token); err != nil {
		t.Fatal(err)
	}
	held, err := d.svc.Acquire(ctx, name, "B", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		what string
		call func() error
	}{
		{"check", func() error { _, err := d.svc.Check(ctx, name, held.Token); return err }},
		{"status", func() error { _, err := d.svc.Status(ctx, name); return err }},
		{"renew of a released lease", func() error { _, err := d.svc.Renew(ctx, name, gone.LeaseID, gone.Token, 0); return err }},
		{"release of a released lease", func() error { return d.svc.Release(ctx, name, gone.LeaseID, gone.Token) }},
		{"renew of the held lease", func() error { _, err := d.svc.Renew(ctx, name, held.LeaseID, held.Token, 0); return err }},
		{"HTTP check", func() error { _, err := d.client.Check(ctx, name, held.Token); return err }},
	}
	if err := zkc.Members[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer zkc.Members[0].Resume()
	frozen := time.Now()
	for _, phase := range []string{"just frozen", "past the session deadline"} {
		if phase != "just frozen" {
			time.Sleep(time.Until(frozen.Add(timeout)))
		}
		for _, c := range calls {
			start := time.Now()
			err := c.call()
			took := time.Since(start)
			ratio := float64(took) / float64(timeout)
			t.Logf("%s, %s: %v in %v (%.2f of the session timeout)", phase, c.what, err, took.Round(time.Millisecond), ratio)
			if !errors.Is(err, ErrUnavailable) && !isStatus(err, 503) {
				t.Errorf("%s, %s = %v, want unavailable (503)", phase, c.what, err)
			}
			if ratio > 0.5 {
				t.Errorf("%s, %s took %.2f of the session timeout, want at most 0.5", phase, c.what, ratio)
			}
		}
	}
}

// TestLeaseSafeFor: the holder asking its lock's status with its lease_id
// learns how long the lease is safe (at most its TTL, shrinking with time);
// anyone else does not see the field.
func TestLeaseSafeFor(t *testing.T) {
	zkc := sharedZK.Get(t)
	clk := newFakeClock()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk})
	ctx := ctxT(t, 30*time.Second)
	l, err := d.svc.Acquire(ctx, "safe", "A", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	safe := func(id string) (int64, bool) {
		t.Helper()
		code, body := httpDo(t, "GET", d.srv.URL+"/v1/locks/safe?lease_id="+id, "")
		if code != 200 {
			t.Fatalf("status = %d %s", code, body)
		}
		var st LockStatus
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		if st.SafeForMS == nil {
			return 0, false
		}
		return *st.SafeForMS, true
	}
	ms, ok := safe(l.LeaseID)
	if !ok || ms <= 0 || ms > 5000 {
		t.Fatalf("safe_for_ms = %d (%v), want (0, 5000]", ms, ok)
	}
	clk.Advance(4 * time.Second)
	if later, _ := safe(l.LeaseID); later > 1000 {
		t.Fatalf("safe_for_ms 4s later = %d, want at most 1000", later)
	}
	if _, ok := safe("0123456789abcdef0123456789abcdef"); ok {
		t.Fatal("a request without the lease's id was told safe_for_ms")
	}
}

// A daemon records its token mode on its root: a daemon of the other mode
// refuses to start there, and starts on another root.
func TestTokenModeMismatchRefusesStart(t *testing.T) {
	c := sharedZK.Get(t)
	root := "/seqd-test/" + t.Name()
	startDaemon(t, daemonOpts{servers: c.Servers(), root: root})
	svc := sequencer.New(sequencer.Config{Servers: c.Servers(), Root: root, TokenMode: zklock.TokenVersion, SessionTimeout: 4 * time.Second, Logger: testLogger(t)})
	err := svc.Start(ctxT(t, 30*time.Second))
	if err == nil {
		svc.Close(context.Background())
	}
	if !errors.Is(err, zklock.ErrTokenModeMismatch) {
		t.Fatalf("version daemon on a zxid root: Start = %v, want ErrTokenModeMismatch", err)
	}
	d := startDaemon(t, daemonOpts{servers: c.Servers(), root: root + "-version", mode: zklock.TokenVersion})
	l, err := d.client.Acquire(ctxT(t, 10*time.Second), "job", "me", 10*time.Second, 0)
	if err != nil || l.Token != 1 {
		t.Fatalf("version daemon on its own root: %+v, %v; want token 1", l, err)
	}
}

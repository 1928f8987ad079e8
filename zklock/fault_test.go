package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// Fault tests: each breaks its own ensemble, never the shared server.

// grantRecord is one grant of a stream: its token and when it was made.
type grantRecord struct {
	token uint64
	at    time.Time
}

// stream alternates grants of one lock between two sessions, one grant at a
// time, until stop closes. Acquire and Release failures while ZooKeeper
// elects a leader are expected (the caller retries, as a real one would);
// anything else ends the stream with an error.
func stream(mode TokenMode, a, b *Session, name string, stop <-chan struct{}, grants chan<- grantRecord) error {
	ms := [2]*Mutex{}
	for i, s := range []*Session{a, b} {
		m, err := NewMutex(s, name, WithTokenMode(mode), WithRoot(modeRoot(mode)))
		if err != nil {
			return err
		}
		ms[i] = m
	}
	retryable := func(err error) bool {
		return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrLockLost)
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := ms[i%2].Acquire(ctx)
		cancel()
		if err != nil {
			if retryable(err) {
				continue
			}
			return fmt.Errorf("grant %d: %w", i, err)
		}
		grants <- grantRecord{g.Token, time.Now()}
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		err = g.Release(ctx)
		cancel()
		if err != nil && !retryable(err) {
			return fmt.Errorf("release %d: %w", i, err)
		}
	}
}

// pausedCluster is a 3-node ensemble with its followers, for tests that cut
// one client off by pausing the only server it knows.
func pausedCluster(t *testing.T) (c *testenv.Cluster, holderSrv, otherSrv *testenv.Member) {
	t.Helper()
	c = zktest.StartT(t, testenv.Options{Servers: 3})
	fs := c.Followers()
	if len(fs) != 2 {
		t.Fatalf("followers = %d, want 2", len(fs))
	}
	return c, fs[0], fs[1]
}

// A holder cut off from ZooKeeper (its only server paused): Lost closes
// before ZooKeeper expires its session and grants the lock to the waiter on
// another server; the waiter's token is higher; after the server resumes no
// contender of the holder is left.
func TestLossBeforeOtherGrant(t *testing.T) {
	_, holderSrv, otherSrv := pausedCluster(t)
	const timeout = 2 * time.Second
	holderS := dial(t, []string{holderSrv.ClientAddr}, Options{SessionTimeout: timeout})
	waiterS := dial(t, []string{otherSrv.ClientAddr}, Options{SessionTimeout: timeout})
	if holderS.Timeout() != timeout {
		t.Fatalf("negotiated session timeout %v, want %v", holderS.Timeout(), timeout)
	}
	holder, waiter := mutex(t, holderS, "loss"), mutex(t, waiterS, "loss")
	hg, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   *Grant
		err error
		at  time.Time
	}
	waited := make(chan result, 1)
	wctx := ctxT(t, 30*time.Second)
	go func() {
		g, err := waiter.Acquire(wctx)
		waited <- result{g, err, time.Now()}
	}()
	zktest.Eventually(t, 10*time.Second, "the waiter to queue", func() bool { return len(children(t, waiterS, waiter.Path())) == 2 })

	if err := holderSrv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := holderSrv.Resume(); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()

	var lostAt time.Time
	select {
	case <-hg.Lost():
		lostAt = time.Now()
	case r := <-waited:
		t.Fatalf("waiter granted (%v) after %v while the holder's Lost is still open", r.err, r.at.Sub(paused))
	case <-time.After(3 * timeout):
		t.Fatalf("Lost not closed %v after the holder's server was paused", 3*timeout)
	}
	var r result
	select {
	case r = <-waited:
	case <-time.After(5 * timeout):
		t.Fatalf("waiter not granted %v after the pause", 5*timeout)
	}
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	t.Logf("session timeout %v: holder's Lost closed %v after the pause (%.2f of the timeout); waiter granted %v after the pause (%.2f), %v after Lost",
		timeout, lostAt.Sub(paused).Round(time.Millisecond), float64(lostAt.Sub(paused))/float64(timeout),
		r.at.Sub(paused).Round(time.Millisecond), float64(r.at.Sub(paused))/float64(timeout), r.at.Sub(lostAt).Round(time.Millisecond))
	if !lostAt.Before(r.at) {
		t.Errorf("Lost closed at %v, not before the waiter's grant at %v", lostAt, r.at)
	}
	if r.g.Token <= hg.Token {
		t.Errorf("waiter token %d not above holder token %d", r.g.Token, hg.Token)
	}
	if !errors.Is(hg.Err(), ErrLockLost) {
		t.Errorf("holder Err = %v, want ErrLockLost", hg.Err())
	}

	resume()
	// The holder learns its session expired once it reaches its server again.
	select {
	case <-holderS.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("holder's session not done 30s after its server resumed")
	}
	if !errors.Is(holderS.Err(), ErrSessionExpired) {
		t.Errorf("holder session Err = %v, want ErrSessionExpired", holderS.Err())
	}
	if err := hg.Release(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Errorf("Release of the lost grant = %v, want ErrLockLost", err)
	}
	if got, want := children(t, waiterS, waiter.Path()), []string{path.Base(r.g.Path)}; !slices.Equal(got, want) {
		t.Errorf("children after the holder's expiry = %v, want only the waiter's %v", got, want)
	}
	select {
	case <-r.g.Lost():
		t.Errorf("waiter's grant lost: %v", r.g.Err())
	default:
	}
	if err := r.g.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// Session expiry reaches the grant through Session.Done. The holder's clock
// is fake and never advanced, so its own deadline cannot fire first: Lost
// can only close because ZooKeeper expired the session.
func TestSessionExpiry(t *testing.T) {
	_, holderSrv, otherSrv := pausedCluster(t)
	reg := prometheus.NewRegistry()
	const timeout = 2 * time.Second
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	holderS := dial(t, []string{holderSrv.ClientAddr}, Options{
		SessionTimeout: timeout,
		Clock:          fake,
		Observer:       metrics.New(reg, metrics.Options{}),
	})
	watcherS := dial(t, []string{otherSrv.ClientAddr}, Options{SessionTimeout: timeout})
	g, err := mutex(t, holderS, "expiry").Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := holderSrv.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			holderSrv.Resume()
		}
	}()
	// ZooKeeper expires the session on the other members: the contender goes.
	zktest.Eventually(t, 10*timeout, "ZooKeeper to expire the holder's session", func() bool {
		ok, _, err := watcherS.conn.Exists(g.Path)
		return err == nil && !ok
	})
	t.Logf("ZooKeeper removed the holder's contender %v after the pause (%.2f of the %v timeout)",
		time.Since(paused).Round(time.Millisecond), float64(time.Since(paused))/float64(timeout), timeout)
	select {
	case <-g.Lost():
		t.Fatalf("Lost closed while the holder cannot have heard of the expiry: %v", g.Err())
	default:
	}
	resumed = true
	if err := holderSrv.Resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holderS.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed 30s after the server resumed")
	}
	if err := holderS.Err(); err != ErrSessionExpired {
		t.Errorf("Session.Err = %v, want ErrSessionExpired", err)
	}
	select {
	case <-g.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("grant's Lost not closed after the session expired")
	}
	if err := g.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrSessionExpired) {
		t.Errorf("grant Err = %v, want ErrLockLost wrapping ErrSessionExpired", err)
	}
	if holderS.Connected() {
		t.Error("Connected after expiry")
	}
	want := `
# HELP seqd_zk_session_expirations_total ZooKeeper sessions that expired; every lock they held was lost.
# TYPE seqd_zk_session_expirations_total counter
seqd_zk_session_expirations_total 1
# HELP seqd_zk_connected 1 while the ZooKeeper session is connected, else 0.
# TYPE seqd_zk_connected gauge
seqd_zk_connected 0
# HELP seqd_locks_held Locks currently held through this process.
# TYPE seqd_locks_held gauge
seqd_locks_held 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"seqd_zk_session_expirations_total", "seqd_zk_connected", "seqd_locks_held"); err != nil {
		t.Error(err)
	}
	if _, err := mutex(t, holderS, "expiry").Acquire(ctxT(t, 5*time.Second)); !errors.Is(err, ErrSessionExpired) {
		t.Errorf("Acquire on an expired session = %v, want ErrSessionExpired", err)
	}
}

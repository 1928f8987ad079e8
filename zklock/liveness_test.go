package zklock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// The loss deadline on a fake clock: no heartbeats (one an hour), so the
// only ZooKeeper answers recorded are the ones the test makes. The grant is
// lost exactly when the clock passes LastHeard + timeout - margin, an answer
// moves that deadline, and the lost contender is deleted by the janitor
// since the session itself is fine.
func TestLossDeadlineFakeClock(t *testing.T) {
	c := shared.Get(t)
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := dial(t, c.Servers(), Options{SessionTimeout: 4 * time.Second, Clock: fake, Heartbeat: time.Hour})
	other := dial(t, c.Servers(), Options{})
	m := mutex(t, s, "fakeclock")
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first := s.Deadline()
	if want := s.LastHeard().Add(s.Timeout() * 3 / 4); !first.Equal(want) {
		t.Fatalf("Deadline = %v, want LastHeard + 3/4 timeout = %v", first, want)
	}
	// The janitor's heartbeat timer and the session's deadline watch (the
	// grant has no timer of its own).
	if !fake.WaitPending(2, g.Lost()) {
		t.Fatalf("grant lost before the clock moved: %v", g.Err())
	}

	fake.Set(first.Add(-time.Millisecond))
	if n := fake.Pending(); n != 2 {
		t.Fatalf("pending timers = %d after advancing to just before the deadline, want 2 (none fired)", n)
	}
	select {
	case <-g.Lost():
		t.Fatalf("lost before the deadline: %v", g.Err())
	default:
	}

	// ZooKeeper answers now: the deadline moves.
	if err := s.call(func() error { _, _, err := s.conn.Exists("/"); return err }); err != nil {
		t.Fatal(err)
	}
	second := s.Deadline()
	if want := first.Add(-time.Millisecond).Add(s.Timeout() * 3 / 4); !second.Equal(want) {
		t.Fatalf("Deadline after an answer = %v, want %v", second, want)
	}
	fake.Set(first.Add(time.Millisecond)) // the old deadline fires; the grant re-arms
	if !fake.WaitPending(2, g.Lost()) {
		t.Fatalf("lost at the old deadline although ZooKeeper answered since: %v", g.Err())
	}

	fake.Set(second)
	select {
	case <-g.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed at the deadline")
	}
	if err := g.Err(); !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), "not heard from") {
		t.Errorf("Err = %v, want ErrLockLost for a silent ZooKeeper", err)
	}
	if s.Err() != nil {
		t.Errorf("session ended: %v", s.Err())
	}
	// The session lives on, so the janitor deletes the contender: nobody may
	// stay blocked behind a holder that was told it lost.
	zktest.Eventually(t, 10*time.Second, "the lost contender to be deleted", func() bool {
		return len(children(t, other, m.Path())) == 0
	})
	// The janitor forgets the cleanup once its delete is answered, which
	// may come after another connection already sees the node gone.
	zktest.Eventually(t, 10*time.Second, "no pending cleanup", func() bool { return s.pendingCleanups() == 0 })
	if err := g.Release(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Errorf("Release after loss = %v, want ErrLockLost", err)
	}
}

// ZooKeeper clamps the session timeout asked for into its
// [minSessionTimeout, maxSessionTimeout]; Timeout must report the clamped
// one, since every loss deadline is computed from it. The test servers
// allow 2 to 600 ticks.
func TestTimeoutIsTheNegotiatedOne(t *testing.T) {
	c := shared.Get(t)
	tick := testenv.DefaultTickTime
	for _, tc := range []struct {
		name      string
		requested time.Duration
		want      time.Duration
	}{
		{"within the range", 4 * time.Second, 4 * time.Second},
		{"above the maximum", 1200 * tick, 600 * tick},
		{"below the minimum", 3 * tick / 2, 2 * tick},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dial(t, c.Servers(), Options{SessionTimeout: tc.requested})
			if got := s.Timeout(); got != tc.want {
				t.Errorf("asked for %v: Timeout = %v, want %v", tc.requested, got, tc.want)
			}
		})
	}
}

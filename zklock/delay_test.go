package zklock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
)

// handOver measures how long after the holder's end (as the test saw it
// complete) a waiter on another session is granted. end ends the holder's
// grant, cleanly or not.
func handOver(t *testing.T, holder, waiter *Mutex, end func(g *Grant)) time.Duration {
	t.Helper()
	hg, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   *Grant
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	wctx := ctxT(t, 60*time.Second)
	go func() {
		g, err := waiter.Acquire(wctx)
		done <- result{g, err, time.Now()}
	}()
	waitQueued(t, waiter, 2)
	end(hg)
	ended := time.Now()
	r := <-done
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if r.g.Token <= hg.Token {
		t.Fatalf("waiter's token %d, want above the holder's %d", r.g.Token, hg.Token)
	}
	r.g.Release(context.Background())
	return r.at.Sub(ended)
}

func waitQueued(t *testing.T, m *Mutex, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(children(t, m.s, m.Path())) != n {
		if time.Now().After(deadline) {
			t.Fatalf("lock %s: want %d contenders, have %v", m.Name(), n, children(t, m.s, m.Path()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// After an unclean end (the holder's node deleted by someone else, or
// abandoned) the next holder, on another session, waits out the delay; a
// clean release, or a holder without a delay, hands over at once.
func TestLockDelayHandOver(t *testing.T) {
	c := shared.Get(t)
	const delay = 1500 * time.Millisecond
	holderS := dial(t, c.Servers(), Options{})
	waiterS := dial(t, c.Servers(), Options{})
	otherS := dial(t, c.Servers(), Options{})
	deleteByOther := func(g *Grant) {
		if err := otherS.conn.Delete(g.Path, -1); err != nil {
			t.Fatal(err)
		}
	}
	release := func(g *Grant) {
		if err := g.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	abandon := func(g *Grant) {
		if err := g.Abandon(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		delay   time.Duration
		end     func(*Grant)
		delayed bool
	}{
		{"deleted by another session", delay, deleteByOther, true},
		{"abandoned", delay, abandon, true},
		{"released", delay, release, false},
		{"deleted, no delay", 0, deleteByOther, false},
		{"released, no delay", 0, release, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("delay-%d", time.Now().UnixNano())
			holder := mutex(t, holderS, name, WithLockDelay(tc.delay))
			waiter := mutex(t, waiterS, name)
			got := handOver(t, holder, waiter, tc.end)
			t.Logf("hand-over after %v", got)
			if tc.delayed && got < delay-100*time.Millisecond {
				t.Fatalf("granted %v after an unclean end, want at least the delay %v", got, delay)
			}
			if !tc.delayed && got > delay/2 {
				t.Fatalf("granted %v after the end, want at once (well under %v)", got, delay)
			}
		})
	}
}

// TryAcquire during the delay is refused as held with ErrLockDelay, and
// trying again does not restart the delay: it runs from the first
// observation, recorded in ZooKeeper.
func TestLockDelayTryAcquire(t *testing.T) {
	c := shared.Get(t)
	const delay = 1500 * time.Millisecond
	holderS := dial(t, c.Servers(), Options{})
	otherS := dial(t, c.Servers(), Options{})
	holder := mutex(t, holderS, "delay-try", WithLockDelay(delay))
	other := mutex(t, otherS, "delay-try")
	g, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Abandon(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	tries := 0
	for {
		og, err := other.TryAcquire(ctxT(t, 10*time.Second))
		if err == nil {
			got := time.Since(ended)
			t.Logf("granted after %v and %d refusals", got, tries)
			if got < delay-100*time.Millisecond {
				t.Fatalf("granted %v after the loss, want at least %v", got, delay)
			}
			if got > delay+time.Second {
				t.Fatalf("granted %v after the loss: the retries restarted the delay %v", got, delay)
			}
			og.Release(context.Background())
			break
		}
		if !errors.Is(err, ErrLockDelay) || !errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquire during the delay: %v, want ErrLockDelay", err)
		}
		if n := len(children(t, otherS, other.Path())); n != 0 {
			t.Fatalf("a refused TryAcquire left %d contenders", n)
		}
		tries++
		time.Sleep(100 * time.Millisecond)
	}
	if tries == 0 {
		t.Fatal("no TryAcquire was refused during the delay")
	}
}

// A holder whose connection dies while its release is in flight (the
// release never reaches ZooKeeper; the session then expires) ended
// uncleanly: the waiter is delayed. The control releases over a working
// connection and hands over at once.
func TestLockDelayHolderDiesMidRelease(t *testing.T) {
	c := shared.Get(t)
	const delay = 1500 * time.Millisecond
	for _, tc := range []struct {
		name    string
		dies    bool
		delayed bool
	}{
		{"dies mid-release", true, true},
		{"releases", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testenv.NewProxy("holder")
			t.Cleanup(p.Close)
			addr, err := p.Forward(c.Servers()[0])
			if err != nil {
				t.Fatal(err)
			}
			holderS := dial(t, []string{addr}, Options{SessionTimeout: 2 * time.Second})
			waiterS := dial(t, c.Servers(), Options{})
			name := fmt.Sprintf("delay-dies-%d", time.Now().UnixNano())
			holder := mutex(t, holderS, name, WithLockDelay(delay))
			waiter := mutex(t, waiterS, name)
			got := handOver(t, holder, waiter, func(g *Grant) {
				if !tc.dies {
					if err := g.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
					return
				}
				p.Drop(testenv.ToTarget)
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				if err := g.Release(ctx); err == nil {
					t.Fatal("a release through a dead link succeeded")
				}
				holderS.Close()
				// The node goes when ZooKeeper expires the session.
				deadline := time.Now().Add(20 * time.Second)
				for {
					ok, _, err := waiterS.conn.Exists(g.Path)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the holder's node outlived its session")
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			t.Logf("granted %v after the holder's node went", got)
			if tc.delayed && got < delay-100*time.Millisecond {
				t.Fatalf("granted %v after the holder died mid-release, want at least %v", got, delay)
			}
			if !tc.delayed && got > delay/2 {
				t.Fatalf("granted %v after a clean release, want at once", got)
			}
		})
	}
}

// A holder's lock-delay is bounded.
func TestLockDelayRange(t *testing.T) {
	s := dial(t, shared.Get(t).Servers(), Options{})
	for _, d := range []time.Duration{-time.Second, MaxLockDelay + time.Millisecond} {
		if _, err := NewMutex(s, "x", WithLockDelay(d)); err == nil {
			t.Errorf("WithLockDelay(%v) accepted", d)
		}
	}
	if _, err := NewMutex(s, "x", WithLockDelay(MaxLockDelay)); err != nil {
		t.Errorf("WithLockDelay(%v): %v", MaxLockDelay, err)
	}
}

// The marker parser accepts what bytes writes, and nothing it accepts
// fails to round-trip.
func FuzzDelayMarker(f *testing.F) {
	for _, seed := range []string{"held _c_x-lock-0000000001 1500", "lost n 0", "released n", "", "held n", "held n -1", "held n 1 2"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mk, ok := parseDelayMarker(data)
		if !ok {
			return
		}
		again, ok := parseDelayMarker(mk.bytes())
		if !ok || again != mk {
			t.Fatalf("%q parsed as %+v, which writes %q, parsed as %+v (%v)", data, mk, mk.bytes(), again, ok)
		}
	})
}

func TestDelayMarkerParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want delayMarker
	}{
		{"held a 1500", true, delayMarker{"held", "a", 1500 * time.Millisecond}},
		{"lost a 0", true, delayMarker{"lost", "a", 0}},
		{"released a", true, delayMarker{state: "released", node: "a"}},
		{"held a", false, delayMarker{}},
		{"held a -5", false, delayMarker{}},
		{"gone a 5", false, delayMarker{}},
		{"held a 99999999999999999", true, delayMarker{"held", "a", MaxLockDelay}},
		{"", false, delayMarker{}},
	} {
		got, ok := parseDelayMarker([]byte(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseDelayMarker(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A session that learned a root had no lock-delay markers (and so stopped
// reading them) must still honour the first marker another session writes
// there: the watch on the marker directory ends what it knew.
func TestLockDelayFirstMarkerUnderAQuietRoot(t *testing.T) {
	c := shared.Get(t)
	const delay = 1500 * time.Millisecond
	root := "/quiet-" + newGUID() + "/locks"
	holderS := dial(t, c.Servers(), Options{})
	otherS := dial(t, c.Servers(), Options{})
	other := mutex(t, otherS, "first-marker", WithRoot(root))
	// other learns that no marker exists under root.
	og, err := other.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := og.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	awaitMarkerAbsence(t, other)
	holder := mutex(t, holderS, "first-marker", WithRoot(root), WithLockDelay(delay))
	g, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Abandon(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrLockDelay) {
		t.Fatalf("TryAcquire right after an unclean end under a delay: %v, want ErrLockDelay", err)
	}
}

// awaitMarkerAbsence waits until m's session knows, from the watch it sets
// in the background, that m's root has no lock-delay markers.
func awaitMarkerAbsence(t *testing.T, m *Mutex) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.markerAbsence() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the session does not know the root has no markers: the test would test nothing")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package zklock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func election(t testing.TB, s *Session, name string, opts ...ElectionOption) *Election {
	t.Helper()
	e, err := NewElection(s, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// next waits for the next report of an Observe channel.
func next(t *testing.T, ch <-chan Leader, d time.Duration) Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("Observe channel closed")
		}
		return l
	case <-time.After(d):
		t.Fatalf("no leader change reported within %v", d)
	}
	return Leader{}
}

// awaitLeader reads reports until want holds.
func awaitLeader(t *testing.T, ch <-chan Leader, what string, want func(Leader) bool) Leader {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l := next(t, ch, time.Until(deadline))
		if want(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last %+v", what, l)
		}
	}
}

func TestElectionOneLeaderAndRisingTerms(t *testing.T) {
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			c := shared.Get(t)
			const sessions, rounds = 3, 10
			var (
				leaders  atomic.Int32
				overlaps atomic.Int32
				mu       sync.Mutex
				terms    []uint64
				wg       sync.WaitGroup
				errs     = make(chan error, sessions)
			)
			for i := range sessions {
				s := dial(t, c.Servers(), Options{})
				e := election(t, s, "rising", WithTokenMode(mode), WithRoot(DefaultElectionRoot+"-"+mode.String())) // one token mode per root
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						l, err := e.Campaign(ctxT(t, 30*time.Second), []byte{byte('a' + i)})
						if err != nil {
							errs <- err
							return
						}
						if leaders.Add(1) != 1 {
							overlaps.Add(1)
						}
						mu.Lock()
						terms = append(terms, l.Term)
						mu.Unlock()
						time.Sleep(time.Millisecond)
						leaders.Add(-1)
						if err := l.Resign(ctxT(t, 10*time.Second)); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if n := overlaps.Load(); n > 0 {
				t.Errorf("%d times two leaders at once", n)
			}
			for i := 1; i < len(terms); i++ {
				if terms[i] <= terms[i-1] {
					t.Fatalf("term %d after %d: terms must strictly rise (%v)", terms[i], terms[i-1], terms)
				}
			}
			if mode == TokenVersion && terms[len(terms)-1]-terms[0] != uint64(len(terms)-1) {
				t.Errorf("version terms %v are not dense", terms)
			}
		})
	}
}

// Leader, Proclaim, Observe and Resign from a second session's point of
// view, and how long a resignation takes to hand over.
func TestElectionProclaimObserveResign(t *testing.T) {
	c := shared.Get(t)
	a := election(t, dial(t, c.Servers(), Options{}), "observe")
	watcher := election(t, dial(t, c.Servers(), Options{}), "observe")
	b := election(t, dial(t, c.Servers(), Options{}), "observe")
	ctx := ctxT(t, time.Minute)
	obs := watcher.Observe(ctx)
	if l := next(t, obs, 10*time.Second); l.Elected || l.Candidates != 0 {
		t.Fatalf("first report before anyone campaigns = %+v, want no leader", l)
	}
	la, err := a.Campaign(ctx, []byte("10.0.0.1:80"))
	if err != nil {
		t.Fatal(err)
	}
	got := awaitLeader(t, obs, "a elected", func(l Leader) bool { return l.Elected })
	if got.Term != la.Term || string(got.Value) != "10.0.0.1:80" || got.Candidates != 1 {
		t.Fatalf("observed %+v, want a's term %d and value", got, la.Term)
	}
	if since := time.Since(got.Since); since < -time.Second || since > 10*time.Second {
		t.Errorf("since %v is not about now", got.Since)
	}
	read, err := watcher.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if read.Term != la.Term || string(read.Value) != "10.0.0.1:80" || read.Index == 0 {
		t.Fatalf("Leader() = %+v", read)
	}

	if err := la.Proclaim(ctx, []byte("10.0.0.1:81")); err != nil {
		t.Fatal(err)
	}
	got = awaitLeader(t, obs, "the proclaimed value", func(l Leader) bool { return string(l.Value) == "10.0.0.1:81" })
	if got.Term != la.Term {
		t.Fatalf("proclaim changed the term: %d, want %d", got.Term, la.Term)
	}
	if got.Index <= read.Index {
		t.Errorf("index %d after proclaim, not above %d", got.Index, read.Index)
	}

	type res struct {
		l   *Leadership
		err error
	}
	bWon := make(chan res, 1)
	go func() {
		l, err := b.Campaign(ctx, []byte("b"))
		bWon <- res{l, err}
	}()
	awaitLeader(t, obs, "b queued", func(l Leader) bool { return l.Candidates == 2 })
	if _, err := watcher.TryCampaign(ctx, nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryCampaign while a leads = %v, want ErrHeld", err)
	}
	start := time.Now()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-bWon
	if r.err != nil {
		t.Fatal(r.err)
	}
	handover := time.Since(start)
	got = awaitLeader(t, obs, "b elected", func(l Leader) bool { return l.Elected && string(l.Value) == "b" })
	t.Logf("hand-over after resign: %v to the next leader, %v until an observer saw it", handover, time.Since(start))
	if r.l.Term <= la.Term || got.Term != r.l.Term {
		t.Fatalf("b's term %d (observed %d) after a's %d", r.l.Term, got.Term, la.Term)
	}
	if err := la.Proclaim(ctx, []byte("x")); !errors.Is(err, ErrReleased) {
		t.Fatalf("Proclaim after resign = %v, want ErrReleased", err)
	}
	if err := r.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	awaitLeader(t, obs, "no leader", func(l Leader) bool { return !l.Elected })
}

// A leader whose session ends is lost before anyone else is elected, and
// Observe closes with its session.
func TestElectionLeaderSessionLoss(t *testing.T) {
	c := shared.Get(t)
	sa := dial(t, c.Servers(), Options{})
	a := election(t, sa, "session-loss")
	b := election(t, dial(t, c.Servers(), Options{}), "session-loss")
	la, err := a.Campaign(ctxT(t, 10*time.Second), []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	obsCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := a.Observe(obsCtx)
	sa.Close()
	select {
	case <-la.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("leadership not lost when its session closed")
	}
	lb, err := b.Campaign(ctxT(t, 20*time.Second), []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term <= la.Term {
		t.Fatalf("term %d after %d", lb.Term, la.Term)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-obs:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("Observe did not close when its session closed")
		}
	}
}

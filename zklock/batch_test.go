package zklock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// groupCycles runs rounds acquire/release cycles on each of workers
// goroutines of one session, worker w on lock name(w), and checks every
// grant: its token is its contender's czxid (read on another connection),
// tokens of one lock rise, and no two holders of one lock overlap. It
// returns the ZooKeeper requests the session sent per cycle.
func groupCycles(t *testing.T, s *Session, root string, workers, rounds int, name func(w int) string) float64 {
	t.Helper()
	c := shared.Get(t)
	other := rawConn(t, c.Servers())
	var (
		mu      sync.Mutex
		last    = map[string]uint64{}
		holding = map[string]*atomic.Int32{}
		wg      sync.WaitGroup
		failed  atomic.Bool
	)
	for w := range workers {
		if holding[name(w)] == nil {
			holding[name(w)] = &atomic.Int32{}
		}
	}
	before := received(t, c, s.ID())
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := NewMutex(s, name(w), WithRoot(root))
			if err != nil {
				t.Error(err)
				return
			}
			for range rounds {
				if failed.Load() {
					return
				}
				g, err := m.Acquire(ctxT(t, 30*time.Second))
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					failed.Store(true)
					return
				}
				if n := holding[m.Name()].Add(1); n != 1 {
					t.Errorf("%d holders of %s at once", n, m.Name())
					failed.Store(true)
				}
				_, st, err := other.Exists(g.Path)
				if err != nil || uint64(st.Czxid) != g.Token {
					t.Errorf("grant of %s: token %d, its node's czxid %v (%v)", g.Path, g.Token, st, err)
					failed.Store(true)
				}
				mu.Lock()
				if g.Token <= last[m.Name()] {
					t.Errorf("%s: token %d after %d", m.Name(), g.Token, last[m.Name()])
					failed.Store(true)
				}
				last[m.Name()] = g.Token
				mu.Unlock()
				holding[m.Name()].Add(-1)
				if err := g.Release(ctxT(t, 30*time.Second)); err != nil {
					t.Errorf("release: %v", err)
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Each cycle reads its node once more on the other connection; that
	// is not the session's.
	return float64(received(t, c, s.ID())-before) / float64(workers*rounds)
}

// With group commit, the creates of contenders of different locks that wait
// at the same time go as one multi: fewer requests per cycle, and every
// token still the contender's czxid, rising per lock. Fresh lock names make
// the first multis fail (their lock nodes are missing): those creates are
// then made one by one. The control: the same workload without group
// commit sends no multi and four requests per cycle.
func TestGroupCommit(t *testing.T) {
	c := shared.Get(t)
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("group commit %v", on), func(t *testing.T) {
			s := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second, GroupCommit: on})
			root := "/group-" + newGUID() + "/locks"
			perCycle := groupCycles(t, s, root, 32, 20, func(w int) string { return fmt.Sprintf("own-%d", w) })
			batches, creates := s.batchCounts()
			t.Logf("%.2f requests per cycle; %d multis carried %d creates", perCycle, batches, creates)
			switch {
			case on && (batches == 0 || creates < 2*batches):
				t.Errorf("%d multis with %d creates: nothing was grouped", batches, creates)
			case on && perCycle >= 3.9:
				t.Errorf("%.2f requests per cycle with group commit, want fewer than 4", perCycle)
			case !on && (batches != 0 || perCycle < 3.95):
				t.Errorf("without group commit: %d multis, %.2f requests per cycle; want none and 4", batches, perCycle)
			}
		})
	}
}

// Contenders of one lock never share a multi (they would share its zxid,
// hence a token): eight workers on one lock among others on their own.
func TestGroupCommitKeepsOneLockApart(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second, GroupCommit: true})
	root := "/group-" + newGUID() + "/locks"
	groupCycles(t, s, root, 24, 15, func(w int) string {
		if w%3 == 0 {
			return "hot"
		}
		return fmt.Sprintf("own-%d", w)
	})
	if batches, _ := s.batchCounts(); batches == 0 {
		t.Error("no multi was sent: the test tested nothing")
	}
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv/zktest"
)

func multiMutex(t testing.TB, s *Session, names []string, opts ...MultiMutexOption) *MultiMutex {
	t.Helper()
	mm, err := NewMultiMutex(s, names, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return mm
}

// uniqueNames are n lock names under prefix that no other run has used.
func uniqueNames(prefix string, n int) []string {
	base := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s/%c", base, 'a'+i)
	}
	return names
}

// One grant holds every lock of the set: each lock's holder (as any reader
// of ZooKeeper sees it) is our contender with our token; in zxid mode the
// tokens are one czxid, in version mode each lock's counter moves by one
// per grant. A release frees every lock in one go.
func TestMultiMutexGrantsEveryLock(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			s := dial(t, c.Servers(), Options{})
			names := uniqueNames("multi/grant", 3)
			opts := []MultiMutexOption{WithRoot(modeRoot(mode)), WithTokenMode(mode)}
			mm := multiMutex(t, s, names, opts...)
			var prev []uint64
			for round := 1; round <= 2; round++ {
				g, err := mm.Acquire(ctxT(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				for i, l := range g.Locks {
					m := mutex(t, s, names[i], WithRoot(modeRoot(mode)), WithTokenMode(mode))
					h, err := m.Holder(ctxT(t, 10*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					if l.Name != names[i] || !h.Held || h.Node != path.Base(l.Path) || h.Token != l.Token {
						t.Errorf("round %d, lock %s: holder %+v, grant %+v; want our contender holding with our token", round, names[i], h, l)
					}
					switch {
					case mode == TokenZxid && l.Token != g.Locks[0].Token:
						t.Errorf("zxid tokens differ across the set: %+v", g.Locks)
					case mode == TokenVersion && l.Token != uint64(round):
						t.Errorf("round %d, lock %s: version token %d, want %d", round, names[i], l.Token, round)
					case prev != nil && l.Token <= prev[i]:
						t.Errorf("lock %s: token %d after %d, want higher", names[i], l.Token, prev[i])
					}
				}
				prev = prev[:0]
				for _, l := range g.Locks {
					prev = append(prev, l.Token)
				}
				if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
					t.Fatal(err)
				}
				if !errors.Is(g.Err(), ErrReleased) {
					t.Errorf("Err after Release = %v, want ErrReleased", g.Err())
				}
				for _, l := range g.Locks {
					if ch := children(t, s, path.Dir(l.Path)); len(ch) != 0 {
						t.Errorf("lock %s after release: children %v, want none", l.Name, ch)
					}
				}
			}
		})
	}
}

// While one lock of the set is held elsewhere, TryAcquire fails naming it,
// and Acquire times out: neither leaves a contender behind, in the held
// lock or in the free ones.
func TestMultiMutexAllOrNothing(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	other := dial(t, c.Servers(), Options{})
	names := uniqueNames("multi/none", 3)
	holder, err := mutex(t, other, names[1]).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mm := multiMutex(t, s, names)
	onlyHolder := func(t *testing.T) {
		t.Helper()
		for _, name := range names {
			want := 0
			if name == names[1] {
				want = 1
			}
			p := DefaultRoot + "/" + name
			zktest.Eventually(t, 10*time.Second, "our contenders withdrawn from "+name, func() bool { return len(children(t, other, p)) == want })
		}
	}
	_, err = mm.TryAcquire(ctxT(t, 10*time.Second))
	var me *MultiLockError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &me) || me.Lock != names[1] {
		t.Fatalf("TryAcquire with %s held = %v, want ErrHeld naming it", names[1], err)
	}
	onlyHolder(t)
	_, err = mm.Acquire(ctxT(t, 500*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &me) || me.Lock != names[1] {
		t.Fatalf("Acquire with %s held = %v, want the deadline while waiting for it", names[1], err)
	}
	onlyHolder(t)
	// The control: once the holder has gone, the same set is granted.
	if err := holder.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	g, err := mm.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("TryAcquire of a free set: %v", err)
	}
	g.Release(ctxT(t, 10*time.Second))
}

// Losing one lock of the set loses the grant: Lost closes, Err names the
// lock, and the contenders in the other locks are deleted. A lock is lost
// when its contender is deleted by someone else, or when a contender is
// planted below it.
func TestMultiMutexLossOfOneLock(t *testing.T) {
	c := shared.Get(t)
	rogue := rawConn(t, c.Servers())
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, l HeldLock)
		want error
	}{
		{"deleted", func(t *testing.T, l HeldLock) {
			if err := rogue.Delete(l.Path, -1); err != nil {
				t.Fatal(err)
			}
		}, ErrLockLost},
		{"overtaken", func(t *testing.T, l HeldLock) {
			planted := path.Dir(l.Path) + "/x-lock-0000000000"
			if _, err := rogue.Create(planted, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rogue.Delete(planted, -1) })
		}, ErrOvertaken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dial(t, c.Servers(), Options{})
			names := uniqueNames("multi/loss-"+tc.name, 3)
			mm := multiMutex(t, s, names)
			// A first grant moves the locks' sequence counters past 0,
			// so that a planted x-lock-0000000000 sorts below ours.
			g, err := mm.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			g.Release(ctxT(t, 10*time.Second))
			if g, err = mm.Acquire(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			tc.lose(t, g.Locks[1])
			select {
			case <-g.Lost():
			case <-time.After(10 * time.Second):
				t.Fatal("grant not lost after one of its locks was")
			}
			if err := g.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), names[1]) {
				t.Errorf("Err = %v, want %v naming %s", err, tc.want, names[1])
			}
			for _, l := range g.Locks {
				zktest.Eventually(t, 10*time.Second, "the contender in "+l.Name+" deleted", func() bool {
					ok, _, err := rogue.Exists(l.Path)
					return err == nil && !ok
				})
			}
			if err := g.Release(ctxT(t, 10*time.Second)); !errors.Is(err, ErrLockLost) {
				t.Errorf("Release of a lost grant = %v, want its loss", err)
			}
		})
	}
}

// A set queued behind a single Mutex in one lock waits for it, and is
// granted, with a higher token, when the Mutex releases.
func TestMultiMutexWaitsForEveryLock(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	other := dial(t, c.Servers(), Options{})
	names := uniqueNames("multi/wait", 2)
	single := mutex(t, other, names[1])
	hg, err := single.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var g *MultiGrant
	go func() {
		var err error
		g, err = multiMutex(t, s, names).Acquire(ctxT(t, 30*time.Second))
		got <- err
	}()
	waitQueued(t, single, 2)
	select {
	case err := <-got:
		t.Fatalf("granted (%v) while %s is held", err, names[1])
	case <-time.After(stillBlocked):
	}
	if err := hg.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("not granted after the Mutex released")
	}
	if g.Locks[1].Token <= hg.Token {
		t.Errorf("token %d after the Mutex's %d, want higher", g.Locks[1].Token, hg.Token)
	}
	g.Release(ctxT(t, 10*time.Second))
}

// An unclean end of a holder with a lock-delay keeps a set containing its
// lock waiting until the delay has passed.
func TestMultiMutexHonoursLockDelay(t *testing.T) {
	c := shared.Get(t)
	const delay = 1500 * time.Millisecond
	s := dial(t, c.Servers(), Options{})
	other := dial(t, c.Servers(), Options{})
	names := uniqueNames("multi/delay", 2)
	hg, err := mutex(t, other, names[0], WithLockDelay(delay)).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := hg.Abandon(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	g, err := multiMutex(t, s, names).Acquire(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(ended)
	g.Release(ctxT(t, 10*time.Second))
	if waited < delay-100*time.Millisecond {
		t.Fatalf("granted %v after an unclean end, want at least the delay %v", waited, delay)
	}
}

// Names are refused before ZooKeeper is touched: none, too many, twice the
// same, or one invalid.
func TestNewMultiMutexRefuses(t *testing.T) {
	many := make([]string, MaxMultiLocks+1)
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	for _, names := range [][]string{nil, many, {"a", "b", "a"}, {"a", "../b"}} {
		if _, err := NewMultiMutex(nil, names); err == nil {
			t.Errorf("NewMultiMutex(%q) accepted", names)
		}
	}
	if _, err := NewMultiMutex(nil, many[:MaxMultiLocks]); err != nil {
		t.Errorf("NewMultiMutex of %d locks: %v", MaxMultiLocks, err)
	}
}

// A kazoo Lock on one lock of the set excludes a multi-lock and is
// excluded by it, both ways.
func TestInteropKazooMulti(t *testing.T) {
	t.Parallel()
	needKazoo(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	names := uniqueNames("interop/kazoo-multi", 3)
	mm := multiMutex(t, s, names)
	testExclusionOf(t, s, multiLocker{mm}, DefaultRoot+"/"+names[1], c.ConnectString(), kazooPeer(""))
}

// multiLocker is a MultiMutex as testExclusion takes a lock.
type multiLocker struct{ mm *MultiMutex }

func (l multiLocker) Acquire(ctx context.Context) (releaser, error) { return l.mm.Acquire(ctx) }
func (l multiLocker) TryAcquire(ctx context.Context) (releaser, error) {
	return l.mm.TryAcquire(ctx)
}

// TestMultiMutexUncontendedRequests counts, as TestUncontendedCycleRequests
// does for a Mutex, the requests of an uncontended acquire and release of
// a set of k locks: the multi that creates the contenders, one read of the
// stat they share, one children read (with the watch its grant goes on
// from) per lock, and the multi that deletes them: k+3, exactly, on a
// session whose fake clock never moves (no heartbeat).
func TestMultiMutexUncontendedRequests(t *testing.T) {
	c := shared.Get(t)
	requests := newRequestCounter()
	s := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second, Clock: clock.NewFake(time.Unix(1_700_000_000, 0)), wire: requests.wrap})
	root := WithRoot("/reqcount-" + newGUID() + "/locks")
	for _, k := range []int{1, 2, 4} {
		mm := multiMutex(t, s, uniqueNames("count", k), root)
		cycle := func() {
			t.Helper()
			g, err := mm.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		const n = 50
		cycle() // the lock nodes, and what the session knows of the root
		mark := requests.mark()
		for range n {
			cycle()
		}
		got := requests.since(mark)
		t.Logf("sets of %d: %v in %d uncontended cycles", k, got, n)
		if want := map[string]int{"multi": 2 * n, "exists": n, "getChildren2": k * n}; !maps.Equal(got, want) {
			t.Errorf("sets of %d: %v in %d uncontended cycles, want %v (%d per cycle)", k, got, n, want, k+3)
		}
	}
}

// A set of more locks than the create's retries, none of whose nodes exist
// yet, is granted at the first attempt: a failed multi names only its
// first missing node, so every missing lock node is created before the
// multi is sent again. The set's own lock nodes exist afterwards.
func TestMultiMutexCreatesEveryMissingLockNode(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			s := dial(t, c.Servers(), Options{})
			names := uniqueNames("multi/missing", 16)
			mm := multiMutex(t, s, names, WithRoot(modeRoot(mode)), WithTokenMode(mode))
			g, err := mm.TryAcquire(ctxT(t, 20*time.Second))
			if err != nil {
				t.Fatalf("a set of %d new locks: %v", len(names), err)
			}
			if len(g.Locks) != len(names) {
				t.Fatalf("granted %d locks, want %d", len(g.Locks), len(names))
			}
			if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A set waiting for one of its locks holds none of them: readers of a lock
// where its contender is already the lowest (Holder, Queue, Observe) see no
// holder until the whole set is granted, and then see the set's grant as
// the holder, with its data as created. Both token modes.
func TestMultiMutexWaitingHoldsNothing(t *testing.T) {
	c := shared.Get(t)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := []MutexOption{WithRoot(modeRoot(mode)), WithTokenMode(mode)}
			s := dial(t, c.Servers(), Options{})
			names := uniqueNames("multi/waiting", 2)
			free := mutex(t, s, names[0], opts...)
			other := mutex(t, dial(t, c.Servers(), Options{}), names[1], opts...)
			held, err := other.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			mm := multiMutex(t, s, names, WithRoot(modeRoot(mode)), WithTokenMode(mode), WithData([]byte("set")))
			type result struct {
				g   *MultiGrant
				err error
			}
			done := make(chan result, 1)
			go func() {
				g, err := mm.Acquire(ctxT(t, 30*time.Second))
				done <- result{g, err}
			}()
			// The set's contender is the lowest of the free lock as soon as
			// it is created, and says within one more request that it waits.
			ctx := ctxT(t, 20*time.Second)
			deadline := time.Now().Add(10 * time.Second)
			for {
				h, err := free.Holder(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if h.Node != "" && !h.Held {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("holder of the free lock while the set waits: %+v; want none", h)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if q, err := free.Queue(ctx); err != nil || len(q.Nodes) != 1 || q.Holding != 0 || !q.Nodes[0].SetWaiting {
				t.Errorf("queue of the free lock while the set waits: %+v, %v; want its one node waiting, holding 0", q, err)
			}
			obs := free.Observe(ctx)
			if h := <-obs; h.Held || h.Node == "" {
				t.Errorf("observed holder of the free lock while the set waits: %+v; want the set's node, not held", h)
			}
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			h, err := free.Holder(ctx)
			if err != nil || !h.Held || h.Token != r.g.Locks[0].Token || string(h.Data) != "set" || h.DataRewritten {
				t.Errorf("holder of the free lock once the set holds: %+v, %v; want the set's grant (token %d, data as created)", h, err, r.g.Locks[0].Token)
			}
			if q, err := free.Queue(ctx); err != nil || q.Holding != 1 || string(q.Nodes[0].Data) != "set" {
				t.Errorf("queue of the free lock once the set holds: %+v, %v; want the set holding", q, err)
			}
			sawHeld := false
			for h := range obs {
				if sawHeld = h.Held; sawHeld {
					break
				}
			}
			if !sawHeld {
				t.Error("Observe never showed the set's grant as the free lock's holder")
			}
			if err := r.g.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

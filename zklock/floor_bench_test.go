package zklock

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// floorCycles runs cycles acquire+release rounds on each of clients
// sessions at once (each its own lock under root), and returns the time per
// grant and the requests per grant (ZooKeeper's own count, by cons).
func floorCycles(tb testing.TB, sessions []*Session, root string, cycles int) (perGrant time.Duration, requests float64) {
	tb.Helper()
	c := shared.Get(tb)
	before := 0
	for _, s := range sessions {
		before += received(tb, c, s.ID())
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := NewMutex(s, fmt.Sprintf("bench-%d", i), WithRoot(root))
			if err != nil {
				tb.Error(err)
				return
			}
			for range cycles {
				g, err := m.Acquire(ctxT(tb, 10*time.Second))
				if err != nil {
					tb.Error(err)
					return
				}
				if err := g.Release(ctxT(tb, 10*time.Second)); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	grants := cycles * len(sessions)
	perGrant = time.Since(start) / time.Duration(grants)
	after := 0
	for _, s := range sessions {
		after += received(tb, c, s.ID())
	}
	return perGrant, float64(after-before) / float64(grants)
}

// A floor file sends ZooKeeper nothing more: uncontended cycles on a
// session with a floor file cost the requests of cycles on one without,
// measured alongside (create, children, delete; a request more per grant
// would show as a difference of 1, while heartbeats and the monitor's
// looks of a slow run add a few hundredths to both). The file holds the
// last grant's token afterwards.
func TestFloorFileAddsNoRequests(t *testing.T) {
	c := shared.Get(t)
	floors, err := OpenFloors(filepath.Join(t.TempDir(), "floors.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := "/floorcost-" + newGUID()
	filed := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second, Floors: floors})
	plain := dial(t, c.Servers(), Options{SessionTimeout: 30 * time.Second})
	floorCycles(t, []*Session{filed}, root, 1) // the root and the lock node
	floorCycles(t, []*Session{plain}, root, 1)
	_, with := floorCycles(t, []*Session{filed}, root, 100)
	_, without := floorCycles(t, []*Session{plain}, root, 100)
	t.Logf("requests per uncontended cycle: %.2f with a floor file, %.2f without", with, without)
	if with > without+0.5 || with < 2.95 {
		t.Errorf("%.2f requests per cycle with a floor file, %.2f without: want the same 3 (create, children, delete)", with, without)
	}
	reopened, err := OpenFloors(floors.Path())
	if err != nil {
		t.Fatal(err)
	}
	if got := reopened.Issued(root); got != floors.Issued(root) || got.Token == 0 {
		t.Errorf("the file holds %+v, the process recorded %+v", got, floors.Issued(root))
	}
}

// BenchmarkFloorFile measures what the floor file costs a grant: rounds of
// uncontended cycles with and without one, alternated, on one session and
// on 16 at once (whose grants share the file's writes), each reported as
// time per grant and as the ratio with a floor file over without (the
// median of the rounds). Run it with -benchtime 1x.
func BenchmarkFloorFile(b *testing.B) {
	c := shared.Get(b)
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("sessions=%d", clients), func(b *testing.B) {
			floors, err := OpenFloors(filepath.Join(b.TempDir(), "floors.json"))
			if err != nil {
				b.Fatal(err)
			}
			dialAll := func(f *Floors) []*Session {
				ss := make([]*Session, clients)
				for i := range ss {
					ss[i] = dial(b, c.Servers(), Options{SessionTimeout: 30 * time.Second, Floors: f})
				}
				return ss
			}
			plain, filed := dialAll(nil), dialAll(floors)
			root := "/floorbench-" + newGUID()
			floorCycles(b, plain, root, 1)
			floorCycles(b, filed, root, 1)
			const rounds, cycles = 5, 100
			var without, with []time.Duration
			var reqWithout, reqWith float64
			for range rounds {
				d, r := floorCycles(b, plain, root, cycles)
				without, reqWithout = append(without, d), r
				d, r = floorCycles(b, filed, root, cycles)
				with, reqWith = append(with, d), r
			}
			slices.Sort(without)
			slices.Sort(with)
			mw, mf := without[rounds/2], with[rounds/2]
			b.ReportMetric(float64(mw.Microseconds()), "µs/grant_without")
			b.ReportMetric(float64(mf.Microseconds()), "µs/grant_floor_file")
			b.ReportMetric(float64(mf)/float64(mw), "ratio_floor_file")
			b.Logf("%d session(s), %d rounds of %d cycles each: %v per grant without a floor file, %v with (%.2f×); requests per grant %.2f without, %.2f with",
				clients, rounds, cycles, mw, mf, float64(mf)/float64(mw), reqWithout, reqWith)
		})
	}
}

package serving

import (
	"context"
	"log/slog"
	"runtime/debug"
	"testing"
	"time"
)

func TestHeapPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{10 * mib, 100},
		{64 * mib, 100},
		{64*mib + 1, 99},
		{96 * mib, 66},
		{128 * mib, 50},
		{1 << 40, 50},
	} {
		if got := HeapPercent(c.live); got != c.want {
			t.Errorf("HeapPercent(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}

// gcPercent reads the collector's percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// PaceHeap follows the live heap down to GOGC=50 and back, ignores moves of
// less than 5, and leaves the pace alone when GOGC is set.
func TestPaceHeap(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	const mib = 1 << 20
	run := func(lives []uint64) (seen []int) {
		tick := make(chan time.Time)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		i := 0
		go func() {
			defer close(done)
			PaceHeap(ctx, tick, func() uint64 {
				seen = append(seen, gcPercent()) // what the step before set
				i++
				return lives[i-1]
			}, slog.New(slog.DiscardHandler))
		}()
		for range lives[1:] {
			select {
			case tick <- time.Now():
			case <-done:
				return append(seen, gcPercent())
			}
		}
		cancel()
		<-done
		return append(seen, gcPercent())
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	got := run([]uint64{10 * mib, 200 * mib, 100 * mib, 98 * mib, 10 * mib})
	want := []int{100, 100, 50, 64, 64, 100}
	if len(got) != len(want) {
		t.Fatalf("percents seen %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("percents seen %v, want %v", got, want)
		}
	}

	// Control: an operator's GOGC is left as it is, whatever the heap.
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "100")
	if got := run([]uint64{200 * mib, 200 * mib}); got[len(got)-1] != 100 || len(got) != 1 {
		t.Fatalf("with GOGC set, percents seen %v, want [100] and no read of the heap", got)
	}
}

// LiveHeap reads what the runtime reports: more than nothing once a
// collection has run, with something kept live.
func TestLiveHeap(t *testing.T) {
	keep := make([]byte, 8<<20)
	debug.FreeOSMemory() // a collection
	if got := LiveHeap(); got < uint64(len(keep)) {
		t.Fatalf("LiveHeap = %d, want at least the %d bytes kept", got, len(keep))
	}
	keep[0] = 1
}

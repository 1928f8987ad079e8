package serving

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The daemon's heap headroom. Go collects garbage once the heap has grown
// by GOGC percent (100 by default) over what the last collection left live,
// so a process holds up to twice its live heap. For a daemon holding many
// leases that doubles the memory they cost; for one holding few, a
// collection every few megabytes of requests costs CPU for nothing saved.
// So unless the operator set GOGC or GOMEMLIMIT, seqd serve keeps Go's
// default while the live heap is small, and once doubling it would leave
// more than HeapRoom free, lowers the percent so that the room stays
// HeapRoom, down to half the live heap (GOGC=50) at most.
const (
	// HeapRoom is the most headroom kept at Go's default percent.
	HeapRoom = 64 << 20
	// HeapPercentMin is the least percent set: the headroom is never less
	// than half the live heap, so a collection never runs more often than
	// every half heap of allocation.
	HeapPercentMin = 50
	// heapPercentMax is Go's default.
	heapPercentMax = 100
)

// HeapPercent is the GC percent for a live heap of live bytes: Go's default
// (100) while that leaves at most HeapRoom free, then the percent that
// leaves HeapRoom, never under HeapPercentMin.
func HeapPercent(live uint64) int {
	if live <= HeapRoom {
		return heapPercentMax
	}
	return max(HeapPercentMin, int(uint64(HeapRoom)*100/live))
}

// HeapChosen reports whether the environment chose the garbage collector's
// pace (GOGC or GOMEMLIMIT set), which PaceHeap then leaves alone.
func HeapChosen(getenv func(string) string) bool {
	return getenv("GOGC") != "" || getenv("GOMEMLIMIT") != ""
}

// PaceHeap sets the GC percent from the live heap, read now and at each
// tick, until ctx ends; it does nothing when the environment chose the pace
// (HeapChosen). The percent is changed only when it moves by 5 or more, so
// that a heap hovering at a bound does not reset the collector's pacing at
// every tick. live reads the live heap (LiveHeap in a daemon).
func PaceHeap(ctx context.Context, tick <-chan time.Time, live func() uint64, logger *slog.Logger) {
	if HeapChosen(os.Getenv) {
		logger.Debug("the garbage collector's pace is the environment's (GOGC or GOMEMLIMIT)")
		return
	}
	set := heapPercentMax
	for {
		if p := HeapPercent(live()); p >= set+5 || p <= set-5 || (p != set && (p == heapPercentMax || p == HeapPercentMin)) {
			debug.SetGCPercent(p)
			logger.Debug("garbage collector percent set", "percent", p)
			set = p
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// LiveHeap is the heap the last collection found live, in bytes.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// PaceHeapEvery runs PaceHeap on a ticker of period every, until ctx ends.
// Real time: it spaces reads of the heap, it decides nothing about leases.
func PaceHeapEvery(ctx context.Context, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	PaceHeap(ctx, t.C, LiveHeap, logger)
}

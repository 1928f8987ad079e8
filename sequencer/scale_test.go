package sequencer_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

var scaleBig = flag.Bool("scale.big", false, "BenchmarkScale: also hold 100k leases (minutes long)")

// BenchmarkScale holds n leases on one daemon and reports what each costs
// (heap bytes and goroutines, measured against the idle daemon), how long
// Close takes to release them all, and the 99th percentile of the acquire
// latency among the first and the last thousand acquires (does an acquire
// cost more as leases pile up?). -scale.big adds n = 100000.
func BenchmarkScale(b *testing.B) {
	sizes := []int{1000, 10000}
	if *scaleBig {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				r := scaleRun(b, n)
				b.ReportMetric(r.heap/float64(n), "B/lease")
				b.ReportMetric(r.goroutines/float64(n), "goroutines/lease")
				b.ReportMetric(float64(r.shutdown.Milliseconds()), "shutdown-ms")
				b.ReportMetric(millis(r.p99First), "acquire-p99-first1k-ms")
				b.ReportMetric(millis(r.p99Last), "acquire-p99-last1k-ms")
			}
		})
	}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type scaleResult struct {
	heap, goroutines  float64
	shutdown          time.Duration
	p99First, p99Last time.Duration
}

func scaleRun(b *testing.B, n int) scaleResult {
	b.Helper()
	zkc := sharedZK.Get(b)
	// Logs are discarded rather than kept by the test (which would count
	// every line as the daemon's heap).
	d := startDaemon(b, daemonOpts{
		servers: zkc.Servers(),
		root:    fmt.Sprintf("/seqd-scale/%d-%d", n, time.Now().UnixNano()),
		logger:  slog.New(slog.DiscardHandler),
		timeout: 30 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	heap0, gor0 := heapAndGoroutines()
	took := make([]time.Duration, n) // by acquire, in the order they were started
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	slots := make(chan struct{}, 64)
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			start := time.Now()
			_, err := d.svc.Acquire(ctx, fmt.Sprintf("l/%d", i), "owner", time.Hour, 0)
			took[i] = time.Since(start)
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	heap1, gor1 := heapAndGoroutines()
	start := time.Now()
	if err := d.svc.Close(ctx); err != nil {
		b.Fatal(err)
	}
	shutdown := time.Since(start)
	k := min(n, 1000)
	return scaleResult{
		heap: heap1 - heap0, goroutines: gor1 - gor0, shutdown: shutdown,
		p99First: p99(took[:k]), p99Last: p99(took[n-k:]),
	}
}

func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

func heapAndGoroutines() (float64, float64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc), float64(runtime.NumGoroutine())
}

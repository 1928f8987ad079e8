package sequencer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkScale holds n leases on one daemon and reports what each costs
// (heap bytes and goroutines, measured against the idle daemon) and how long
// Close takes to release them all.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				heap, gor, shutdown := scaleRun(b, n)
				b.ReportMetric(heap/float64(n), "B/lease")
				b.ReportMetric(gor/float64(n), "goroutines/lease")
				b.ReportMetric(float64(shutdown.Milliseconds()), "shutdown-ms")
			}
		})
	}
}

func scaleRun(b *testing.B, n int) (heap, goroutines float64, shutdown time.Duration) {
	b.Helper()
	zkc := sharedZK.Get(b)
	d := startDaemon(b, daemonOpts{servers: zkc.Servers(), root: fmt.Sprintf("/seqd-scale/%d-%d", n, time.Now().UnixNano())})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	heap0, gor0 := heapAndGoroutines()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	slots := make(chan struct{}, 64)
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if _, err := d.svc.Acquire(ctx, fmt.Sprintf("l/%d", i), "owner", time.Hour, 0); err != nil {
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
	return heap1 - heap0, gor1 - gor0, time.Since(start)
}

func heapAndGoroutines() (float64, float64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc), float64(runtime.NumGoroutine())
}

package store

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkStorePut measures a durable PUT (one record, one fsync shared by
// the writers queued behind it) with the fence and without.
func BenchmarkStorePut(b *testing.B) {
	for _, mode := range []FenceMode{FenceFull, FenceOff} {
		b.Run("fence="+string(mode), func(b *testing.B) {
			s := mustOpen(b, Options{Dir: b.TempDir(), Fence: mode})
			benchPuts(b, s)
		})
	}
}

// BenchmarkStorePutFenceRatio interleaves PUTs on a fenced and an unfenced
// store in the same loop, so that both see the same disk at the same time,
// and reports the fenced store's throughput relative to the unfenced one
// ("full/off", 1.0 = free). The fence adds a compare-and-swap to a record
// that is written anyway; it must not add a write or an fsync.
func BenchmarkStorePutFenceRatio(b *testing.B) {
	full := mustOpen(b, Options{Dir: b.TempDir(), Fence: FenceFull})
	off := mustOpen(b, Options{Dir: b.TempDir(), Fence: FenceOff})
	var nsFull, nsOff, nFull, nOff atomic.Int64
	var id atomic.Int64
	value := []byte("a value of some thirty-two bytes")
	b.SetParallelism(4) // several writers per store, so group commit is in play
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("key-%d", id.Add(1))
		var token uint64
		for i := 0; pb.Next(); i++ {
			token++
			s, ns, n := full, &nsFull, &nFull
			if i%2 == 1 {
				s, ns, n = off, &nsOff, &nOff
			}
			start := time.Now()
			if err := s.Put(key, value, token); err != nil {
				b.Error(err)
				return
			}
			ns.Add(int64(time.Since(start)))
			n.Add(1)
		}
	})
	if nFull.Load() == 0 || nOff.Load() == 0 {
		return
	}
	perFull := float64(nsFull.Load()) / float64(nFull.Load())
	perOff := float64(nsOff.Load()) / float64(nOff.Load())
	b.ReportMetric(perFull, "ns/put-full")
	b.ReportMetric(perOff, "ns/put-off")
	b.ReportMetric(perOff/perFull, "full/off")
}

func benchPuts(b *testing.B, s *Store) {
	var id atomic.Int64
	value := []byte("a value of some thirty-two bytes")
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("key-%d", id.Add(1))
		var token uint64
		for pb.Next() {
			token++
			if err := s.Put(key, value, token); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

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

// BenchmarkStorePutMark measures a durable PUT without the mark in
// store.meta, with it (the store's way), and with it fsynced after every
// batch; run with -count N the three alternate over time.
func BenchmarkStorePutMark(b *testing.B) {
	for _, m := range []struct {
		name string
		p    markPolicy
	}{{"none", markNever}, {"lazy", markLazy}, {"every", markEveryBatch}} {
		b.Run("marks="+m.name, func(b *testing.B) {
			benchPuts(b, mustOpen(b, Options{Dir: b.TempDir(), marks: m.p}))
		})
	}
}

// BenchmarkStorePutMarkRatio prices the mark in store.meta that lets
// recovery see a log cut at a batch boundary. PUTs are interleaved, as in
// BenchmarkStorePutFenceRatio, on three stores in the same loop: one
// without the mark, one that writes it after every batch and fsyncs it at
// most once a second (the store's way), and one that fsyncs it after every
// batch. "lazy/none" and "every/none" are their throughputs relative to
// the store without it (1.0 = free).
func BenchmarkStorePutMarkRatio(b *testing.B) {
	policies := []markPolicy{markNever, markLazy, markEveryBatch}
	stores := make([]*Store, len(policies))
	for i, p := range policies {
		stores[i] = mustOpen(b, Options{Dir: b.TempDir(), marks: p})
	}
	var ns, n [3]atomic.Int64
	var id atomic.Int64
	value := []byte("a value of some thirty-two bytes")
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(id.Add(1))
		key := fmt.Sprintf("key-%d", g)
		var token uint64
		for i := 0; pb.Next(); i++ {
			token++
			k := (i + g) % len(stores) // writers spread over the stores at any moment
			start := time.Now()
			if err := stores[k].Put(key, value, token); err != nil {
				b.Error(err)
				return
			}
			ns[k].Add(int64(time.Since(start)))
			n[k].Add(1)
		}
	})
	var per [3]float64
	for k := range per {
		if n[k].Load() == 0 {
			return
		}
		per[k] = float64(ns[k].Load()) / float64(n[k].Load())
	}
	b.ReportMetric(per[0]/per[1], "lazy/none")
	b.ReportMetric(per[0]/per[2], "every/none")
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

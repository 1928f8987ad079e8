package zklock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkSemaphoreVsMutex: 8 sessions, each taking the lock or a slot,
// working 10ms and giving it back, for a second per round; rounds of the
// exclusive lock and of a semaphore of 4 alternate. It reports grants per
// second of both and their ratio (semaphore/lock).
func BenchmarkSemaphoreVsMutex(b *testing.B) {
	c := shared.Get(b)
	const workers, limit, work, round = 8, 4, 10 * time.Millisecond, time.Second
	sessions := make([]*Session, workers)
	for i := range sessions {
		sessions[i] = dial(b, c.Servers(), Options{})
	}
	run := func(name string, take func(s *Session) (*Grant, error)) int64 {
		var (
			n    atomic.Int64
			wg   sync.WaitGroup
			stop = time.Now().Add(round)
		)
		for _, s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					g, err := take(s)
					if err != nil {
						b.Error(err)
						return
					}
					time.Sleep(work)
					g.Release(context.Background())
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return n.Load()
	}
	var mutexGrants, semGrants int64
	for i := 0; i < b.N; i++ {
		lockName, semName := fmt.Sprintf("bench-lock-%d", i), fmt.Sprintf("bench-sem-%d", i)
		mutexGrants += run(lockName, func(s *Session) (*Grant, error) {
			m, err := NewMutex(s, lockName)
			if err != nil {
				return nil, err
			}
			return m.Acquire(context.Background())
		})
		semGrants += run(semName, func(s *Session) (*Grant, error) {
			sem, err := NewSemaphore(s, semName, limit)
			if err != nil {
				return nil, err
			}
			return sem.Acquire(context.Background())
		})
	}
	secs := float64(b.N) * round.Seconds()
	b.ReportMetric(float64(mutexGrants)/secs, "lock_grants/s")
	b.ReportMetric(float64(semGrants)/secs, "sem4_grants/s")
	b.ReportMetric(float64(semGrants)/float64(mutexGrants), "ratio")
}

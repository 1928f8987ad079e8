package sequencer

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// A Service's life: Start dials its session and starts its goroutines
// (the session's keeper, the expiry schedule, the daemon's own
// campaigns); Close stops them, ending every lease first.

// Start checks the roots, establishes the first session (failing if
// ZooKeeper cannot be reached within the dial timeout, or refuses a root)
// and keeps one afterwards.
func (s *Service) Start(ctx context.Context) error {
	if err := zklock.CheckRoots(s.cfg.roots()...); err != nil {
		return err
	}
	if err := s.dial(ctx); err != nil {
		return err
	}
	s.wg.Add(2)
	go s.keepSession()
	go s.runExpiries()
	s.startCampaigns()
	return nil
}

// closeParallelism is how many leases with a lock-delay Close releases at
// once.
const closeParallelism = 128

// releaseAll ends the leases of ls, which Close has claimed, from at most n
// goroutines counted in wg.
func (s *Service) releaseAll(ctx context.Context, wg *sync.WaitGroup, ls []*lease, n int) {
	var next atomic.Int64
	for range min(len(ls), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ls); i = int(next.Add(1) - 1) {
				s.ended(ctx, ls[i], released, metrics.ReasonReleased, true)
			}
		}()
	}
}

// Close resigns the daemon's own campaigns (so that the next leader is
// elected at once rather than after a session timeout), releases every held
// lease, closes the session and waits for the Service's goroutines. Closing
// the session deletes every contender at once, so that waiters elsewhere
// proceed; a lease with a lock-delay is still released one by one first,
// since its marker must say the end was clean.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.leases.seal() // a grant admitted from now on is refused: shutting down
	s.resignAll()
	s.watches.close()
	// Leases without a lock-delay go with the session's close, which
	// deletes their contenders at once: ending them is work for the CPU
	// alone. A lease with a lock-delay is released with a request of its
	// own, many in flight at once: ZooKeeper answers one session's
	// requests in order over one connection, so this costs round trips for
	// the slowest, not for all of them.
	var fast, slow []*lease
	for _, l := range s.leases.shut() {
		if l.delay > 0 {
			slow = append(slow, l)
		} else {
			fast = append(fast, l)
		}
	}
	var wg sync.WaitGroup
	s.releaseAll(ctx, &wg, slow, closeParallelism)
	s.releaseAll(ctx, &wg, fast, runtime.GOMAXPROCS(0))
	wg.Wait()
	if n := len(fast) + len(slow); n > 0 {
		s.log.Info("released every lease before closing the session", "leases", n)
	}
	close(s.stop)
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
	s.wg.Wait()
	return nil
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
)

func semaphore(t testing.TB, s *Session, name string, limit int, opts ...SemaphoreOption) *Semaphore {
	t.Helper()
	sem, err := NewSemaphore(s, name, limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sem
}

// churn runs sessions that take and give back slots of a semaphore of
// limit while a sampler on another session counts the lease nodes; it
// returns the most holders seen at once, by the holders themselves and by
// the sampler. No two grants share a token. Holders wait inside their slot
// until meet of them are inside at once (the first time; from then on they
// go on), so that the most seen is at least meet whatever the machine's
// speed; churn fails if that never happens. Each holds its slot for hold,
// plus up to 20ms more.
func churn(t *testing.T, servers []string, name string, limit, sessions, rounds, meet int, hold time.Duration) (inside, sampled int) {
	t.Helper()
	var (
		in, maxIn atomic.Int32
		met       = make(chan struct{})
		meetOnce  sync.Once
		wg        sync.WaitGroup
		errs      = make(chan error, sessions)
		mu        sync.Mutex
		seen      = map[uint64]bool{}
		repeated  int
	)
	for i := 0; i < sessions; i++ {
		s := dial(t, servers, Options{})
		sem := semaphore(t, s, name, limit)
		ctx := ctxT(t, 60*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				g, err := sem.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if seen[g.Token] {
					repeated++
				}
				seen[g.Token] = true
				mu.Unlock()
				n := in.Add(1)
				for m := maxIn.Load(); n > m && !maxIn.CompareAndSwap(m, n); m = maxIn.Load() {
				}
				if int(n) >= meet {
					meetOnce.Do(func() { close(met) })
				}
				select {
				case <-met:
				case <-ctx.Done():
					in.Add(-1)
					g.Release(context.Background())
					errs <- fmt.Errorf("at most %d holders inside at once, waited for %d: %w", maxIn.Load(), meet, ctx.Err())
					return
				}
				time.Sleep(hold + time.Duration(r%5*5)*time.Millisecond)
				in.Add(-1)
				if err := g.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	watcher := dial(t, servers, Options{})
	probe := semaphore(t, watcher, name, limit)
	stop := make(chan struct{})
	var maxSampled int
	sampled2 := make(chan struct{})
	go func() {
		defer close(sampled2)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := probe.Holders(context.Background()); err == nil && n > maxSampled {
				maxSampled = n
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-sampled2
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if repeated > 0 {
		t.Fatalf("%d grants repeated an earlier grant's token", repeated)
	}
	return int(maxIn.Load()), maxSampled
}

// Never more than limit holders, counted by the holders and sampled from
// ZooKeeper; the limit is reached: churn waits for limit holders inside at
// once. The control runs a semaphore of a larger limit whose holders wait
// for limit+1 of them: the check sees the smaller limit exceeded.
func TestSemaphoreLimit(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	const limit = 3
	inside, sampled := churn(t, c.Servers(), "sem-limit", limit, 8, 15, limit, 20*time.Millisecond)
	t.Logf("limit %d: at most %d inside, %d lease nodes sampled", limit, inside, sampled)
	if inside > limit {
		t.Fatalf("%d holders at once, limit %d", inside, limit)
	}
	if sampled > limit+1 { // +1: a waiter's node, counted before it waits
		t.Fatalf("%d lease nodes sampled, limit %d", sampled, limit)
	}
	inside, _ = churn(t, c.Servers(), "sem-limit-control", 2*limit, 8, 4, limit+1, 20*time.Millisecond)
	t.Logf("control, limit %d: at most %d inside", 2*limit, inside)
	if inside <= limit {
		t.Fatalf("control: a semaphore of %d never had more than %d holders; the check could not fail", 2*limit, limit)
	}
}

// Waiters are served in the order they came, each watching one node.
func TestSemaphoreFIFO(t *testing.T) {
	c := shared.Get(t)
	holderS := dial(t, c.Servers(), Options{})
	g, err := semaphore(t, holderS, "sem-fifo", 1).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 4
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := 0; i < waiters; i++ {
		s := dial(t, c.Servers(), Options{})
		sem := semaphore(t, s, "sem-fifo", 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wg, err := sem.Acquire(ctxT(t, 30*time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			time.Sleep(20 * time.Millisecond)
			wg.Release(context.Background())
		}()
		// Queued: on the mutex, or (the first) holding it.
		waitQueued(t, sem.lock, i+1)
	}
	g.Release(context.Background())
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d granted in turn %d", got, want)
		}
		want++
	}
}

// A holder cut off from ZooKeeper frees its slot when its session expires;
// while it lives the slot stays taken.
func TestSemaphoreSlotFreedWhenHolderDies(t *testing.T) {
	c := shared.Get(t)
	p := testenv.NewProxy("holder")
	t.Cleanup(p.Close)
	addr, err := p.Forward(c.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second
	holderS := dial(t, []string{addr}, Options{SessionTimeout: timeout})
	otherS := dial(t, c.Servers(), Options{})
	if _, err := semaphore(t, holderS, "sem-dies", 1).Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	other := semaphore(t, otherS, "sem-dies", 1)
	// The control: the holder alive, no slot past a session timeout.
	if _, err := other.Acquire(ctxT(t, timeout+500*time.Millisecond)); err == nil {
		t.Fatal("granted a second slot of a semaphore of one while its holder lives")
	}
	p.Drop(testenv.ToTarget)
	cut := time.Now()
	g, err := other.Acquire(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("slot freed %v after the holder was cut off (session timeout %v)", time.Since(cut).Round(time.Millisecond), timeout)
	g.Release(context.Background())
}

// TryAcquire of a full semaphore is ErrHeld and leaves no node behind.
func TestSemaphoreTryAcquire(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s1, s2 := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
	a, b := semaphore(t, s1, "sem-try", 2), semaphore(t, s2, "sem-try", 2)
	var gs []*Grant
	for i := 0; i < 2; i++ {
		g, err := a.TryAcquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		gs = append(gs, g)
	}
	if _, err := b.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire of a full semaphore: %v, want ErrHeld", err)
	}
	if n, err := b.Holders(context.Background()); err != nil || n != 2 {
		t.Fatalf("holders %d (%v), want 2", n, err)
	}
	gs[0].Release(context.Background())
	g, err := b.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g.Token <= gs[1].Token {
		t.Fatalf("token %d, want above the earlier grant's %d", g.Token, gs[1].Token)
	}
	for _, bad := range []int{0, -1, MaxSemaphoreLimit + 1} {
		if _, err := NewSemaphore(s1, "x", bad); err == nil {
			t.Errorf("limit %d accepted", bad)
		}
	}
}

// TryAcquire of a full semaphore answers at once, also while a waiter
// holds the inner mutex.
func TestSemaphoreTryAcquireWhileWaiterQueued(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s1, s2, s3 := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{SessionTimeout: 10 * time.Second}), dial(t, c.Servers(), Options{})
	holder, waiter, trier := semaphore(t, s1, "sem-try-queued", 1), semaphore(t, s2, "sem-try-queued", 1), semaphore(t, s3, "sem-try-queued", 1)
	g, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		wg, err := waiter.Acquire(wctx)
		if err == nil {
			wg.Release(context.Background())
		}
		waited <- err
	}()
	waitQueued(t, waiter.lock, 1)
	start := time.Now()
	if _, err := trier.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire: %v, want ErrHeld", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("TryAcquire took %v, want an answer at once", took)
	}
	g.Release(context.Background())
	if err := <-waited; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/testenv/zktest"
)

// One standalone server for the tests that do not break it.
var shared zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

func dial(t testing.TB, servers []string, opts Options) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 4 * time.Second
	}
	s, err := Dial(ctx, servers, opts)
	if err != nil {
		t.Fatalf("dial %v: %v", servers, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mutex(t testing.TB, s *Session, name string, opts ...MutexOption) *Mutex {
	t.Helper()
	m, err := NewMutex(s, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// modeRoot is the root of a mode's test locks: a root records one token
// mode and refuses the other.
func modeRoot(mode TokenMode) string {
	if mode == TokenVersion {
		return "/seqd/version-locks"
	}
	return DefaultRoot
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// children lists the lock node's children, read on s's connection.
func children(t testing.TB, s *Session, path string) []string {
	t.Helper()
	ch, _, err := s.conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return ch
}

func TestMutualExclusionAndRisingTokens(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	const sessions, rounds = 8, 25
	var (
		inside   atomic.Int32
		overlaps atomic.Int32
		mu       sync.Mutex
		tokens   []uint64
		wg       sync.WaitGroup
		errs     = make(chan error, sessions)
	)
	name := "mutex/" + t.Name()
	for i := 0; i < sessions; i++ {
		s := dial(t, c.Servers(), Options{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _ := NewMutex(s, name)
			for r := 0; r < rounds; r++ {
				g, err := m.Acquire(ctxT(t, 60*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				tokens = append(tokens, g.Token)
				mu.Unlock()
				inside.Add(-1)
				if err := g.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("overlaps = %d, want 0", n)
	}
	if len(tokens) != sessions*rounds {
		t.Fatalf("grants = %d, want %d", len(tokens), sessions*rounds)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token %d = %d after %d: not rising", i, tokens[i], tokens[i-1])
		}
	}
}

func TestTokensRise1000(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
			name := fmt.Sprintf("rise/%s-%d", mode, time.Now().UnixNano()) // fresh: version tokens start at 1
			ma, mb := mutex(t, a, name, WithTokenMode(mode), WithRoot(modeRoot(mode))), mutex(t, b, name, WithTokenMode(mode), WithRoot(modeRoot(mode)))
			var prev uint64
			for i := 0; i < 1000; i++ {
				m := ma
				if i%2 == 1 {
					m = mb
				}
				g, err := m.Acquire(ctxT(t, 10*time.Second))
				if err != nil {
					t.Fatalf("grant %d: %v", i, err)
				}
				if g.Token <= prev {
					t.Fatalf("grant %d: token %d not above %d", i, g.Token, prev)
				}
				if mode == TokenVersion && g.Token != uint64(i+1) {
					t.Fatalf("grant %d: version token %d, want %d", i, g.Token, i+1)
				}
				prev = g.Token
				if err := g.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestFIFO(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	holderS := dial(t, c.Servers(), Options{})
	name := "fifo"
	holder := mutex(t, holderS, name)
	g, err := holder.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		s := dial(t, c.Servers(), Options{})
		m := mutex(t, s, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := m.Acquire(ctxT(t, 30*time.Second))
			if err != nil {
				order <- -1
				return
			}
			order <- i
			g.Release(context.Background())
		}()
		// Wait until waiter i has queued before starting i+1: ordering by
		// observation, not by sleeping.
		for len(children(t, holderS, holder.Path())) != i+2 {
			runtimeYield()
		}
	}
	if err := g.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d granted in place %d, want FIFO", got, want)
		}
		want++
	}
}

func runtimeYield() { time.Sleep(5 * time.Millisecond) }

func TestTryAcquireAndNoOrphans(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
	name := "orphans"
	ma, mb := mutex(t, a, name), mutex(t, b, name)
	g, err := ma.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire on a held lock: %v, want ErrHeld", err)
	}
	// A waiter that times out.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := mb.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v, want DeadlineExceeded", err)
	}
	// A waiter that is cancelled.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := mb.Acquire(ctx2); done <- err }()
	for len(children(t, a, ma.Path())) != 2 {
		runtimeYield()
	}
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v, want Canceled", err)
	}
	if ch := children(t, a, ma.Path()); len(ch) != 1 || ch[0] != g.Path[len(ma.Path())+1:] {
		t.Fatalf("children after withdrawals = %v, want only the holder %s", ch, g.Path)
	}
	if err := g.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch := children(t, a, ma.Path()); len(ch) != 0 {
		t.Fatalf("children after release = %v, want none", ch)
	}
	if g.Err() != ErrReleased {
		t.Fatalf("Err after release = %v, want ErrReleased", g.Err())
	}
	select {
	case <-g.Lost():
	default:
		t.Fatal("Lost not closed after release")
	}
}

func TestContenderDeletedIsLost(t *testing.T) {
	c := shared.Get(t)
	a := dial(t, c.Servers(), Options{})
	m := mutex(t, a, "deleted")
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.conn.Delete(g.Path, -1); err != nil { // an operator removes it
		t.Fatal(err)
	}
	select {
	case <-g.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not close after the contender was deleted")
	}
	if !errors.Is(g.Err(), ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", g.Err())
	}
	if err := g.Release(context.Background()); !errors.Is(err, ErrLockLost) {
		t.Fatalf("Release of a lost grant = %v, want ErrLockLost", err)
	}
}

// The negative control: the sequence suffix of a re-created lock node goes
// backwards, and the guard refuses it.
func TestGuardCatchesSequenceRegression(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	reg := prometheus.NewRegistry()
	s.obs = metrics.New(reg, metrics.Options{})
	m := mutex(t, s, "regress/seq", withSequenceTokens())
	var last uint64
	for i := 0; i < 3; i++ {
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		last = g.Token
		g.Release(context.Background())
	}
	// The lock node is deleted and re-created (a container reaped, an
	// operator's cleanup, a restore): its sequence counter restarts.
	if err := s.conn.Delete(m.Path(), -1); err != nil {
		t.Fatal(err)
	}
	_, err := m.Acquire(ctxT(t, 10*time.Second))
	var re *RegressionError
	if !errors.As(err, &re) || !errors.Is(err, ErrTokenRegression) {
		t.Fatalf("Acquire after re-creation = %v, want a RegressionError", err)
	}
	if re.Token > last {
		t.Fatalf("sequence token %d after %d did not go backwards; the control shows nothing", re.Token, last)
	}
	if got := testutil.ToFloat64(mustVec(t, reg, "seqd_token_regressions_total")); got != 1 {
		t.Fatalf("seqd_token_regressions_total = %v, want 1", got)
	}
	if ch := children(t, s, m.Path()); len(ch) != 0 {
		t.Fatalf("refused grant left %v behind", ch)
	}
	// zxid mode on the same re-created node keeps rising.
	mz := mutex(t, s, "regress/seq")
	g, err := mz.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	g.Release(context.Background())
}

func TestGuardCatchesVersionReset(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	m := mutex(t, s, "regress/version", WithTokenMode(TokenVersion), WithRoot(modeRoot(TokenVersion)))
	for i := 0; i < 2; i++ {
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		g.Release(context.Background())
	}
	if err := s.conn.Delete(m.Path(), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrTokenRegression) {
		t.Fatalf("Acquire after the counter reset = %v, want ErrTokenRegression", err)
	}
}

// mustVec returns the single-series collector for name from reg.
func mustVec(t testing.TB, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return constCollector{mf.GetMetric()[0].GetCounter().GetValue(), name}
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

type constCollector struct {
	v    float64
	name string
}

func (c constCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- prometheus.NewDesc(c.name, "x", nil, nil)
}
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(c.name, "x", nil, nil), prometheus.CounterValue, c.v)
}

func TestHolder(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
			name := "holder/" + mode.String()
			ma := mutex(t, a, name, WithTokenMode(mode), WithRoot(modeRoot(mode)), WithData([]byte("alice")))
			mb := mutex(t, b, name, WithTokenMode(mode), WithRoot(modeRoot(mode)))
			if h, err := mb.Holder(ctxT(t, 10*time.Second)); err != nil || h.Held {
				t.Fatalf("Holder before any grant = %+v, %v; want not held", h, err)
			}
			g, err := ma.Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			h, err := mb.Holder(ctxT(t, 10*time.Second))
			if err != nil || !h.Held || h.Token != g.Token || string(h.Data) != "alice" || h.Waiters != 0 {
				t.Fatalf("Holder = %+v, %v; want held with token %d by alice", h, err, g.Token)
			}
			g.Release(context.Background())
			h, err = mb.Holder(ctxT(t, 10*time.Second))
			if err != nil || h.Held {
				t.Fatalf("Holder after release = %+v, %v; want not held", h, err)
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/seqd/seqd/testenv"
)

// Locks is where a case's clients lock: each its own lock, or all one.
const (
	LocksOwn = "own"
	LocksHot = "hot"
)

// Case is one measurement of etcd's concurrency.Mutex: Clients clients,
// each with a client and a session of its own (as each seqd client is a
// process with a session of its own), taking and giving back their locks
// for Duration after a warm-up.
type Case struct {
	Endpoints []string
	Clients   int
	Locks     string
	Duration  time.Duration
	// Warmup runs before the measurement; 0 takes a fifth of Duration, at
	// most a second (as seqd bench does).
	Warmup time.Duration
	// Prefix is the key prefix of the case's locks.
	Prefix string
	// ServerPID is etcd's process, whose CPU per cycle is read from
	// /proc; 0: not measured.
	ServerPID int

	// unlocked makes the cycles skip the lock (the harness's own check
	// must then see two holders at once): for the harness's tests only.
	unlocked bool
}

// Result is what a case measured. Its JSON is that of seqd bench's results.
type Result struct {
	Case       string  `json:"case"`
	Clients    int     `json:"clients"`
	Locks      string  `json:"locks"`
	Cycles     int64   `json:"cycles"`
	Seconds    float64 `json:"seconds"`
	CyclesPerS float64 `json:"cycles_per_s"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p999_ms"`
	// What a cycle cost etcd and this process; absent when not measured.
	ServerCPUms *float64 `json:"server_cpu_ms_per_cycle,omitempty"`
	ClientCPUms *float64 `json:"client_cpu_ms_per_cycle,omitempty"`
	// MostInside is the most clients seen holding one lock at once: 1
	// on a working lock.
	MostInside int `json:"most_inside"`
}

// ErrOverlap is a case in which two clients held one lock at once.
var ErrOverlap = errors.New("two clients held one lock at once")

// Run measures c.
func Run(ctx context.Context, c Case) (*Result, error) {
	if c.Warmup == 0 {
		c.Warmup = min(time.Second, c.Duration/5)
	}
	type worker struct {
		cli  *clientv3.Client
		sess *concurrency.Session
		mu   *concurrency.Mutex
		lat  []time.Duration
		last time.Time
		err  error
	}
	ws := make([]*worker, c.Clients)
	defer func() {
		for _, w := range ws {
			if w == nil {
				continue
			}
			if w.sess != nil {
				w.sess.Close()
			}
			if w.cli != nil {
				w.cli.Close()
			}
		}
	}()
	// The clients connect side by side.
	var wg sync.WaitGroup
	for i := range ws {
		w := &worker{}
		ws[i] = w
		wg.Go(func() {
			w.cli, w.err = clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 10 * time.Second, Context: ctx, Logger: zap.NewNop()})
			if w.err != nil {
				return
			}
			w.sess, w.err = concurrency.NewSession(w.cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
			if w.err != nil {
				return
			}
			name := c.Prefix + "/hot"
			if c.Locks == LocksOwn {
				name = c.Prefix + "/own-" + strconv.Itoa(i)
			}
			w.mu = concurrency.NewMutex(w.sess, name)
		})
	}
	wg.Wait()
	for _, w := range ws {
		if w.err != nil {
			return nil, fmt.Errorf("connect to etcd at %v: %w", c.Endpoints, w.err)
		}
	}

	// inside counts the holders of each lock: on a hot lock all share one.
	inside := make([]atomic.Int32, c.Clients)
	var most atomic.Int32
	enter := func(i int) {
		if c.Locks == LocksHot {
			i = 0
		}
		n := inside[i].Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runtime.Gosched() // let an overlapping holder show itself
		inside[i].Add(-1)
	}

	start := time.Now()
	from, until := start.Add(c.Warmup), start.Add(c.Warmup+c.Duration)
	var cpu0 cpuSample
	var cpuOnce sync.Once
	timer := time.AfterFunc(c.Warmup, func() { cpuOnce.Do(func() { cpu0 = sample(c.ServerPID) }) })
	defer timer.Stop()
	for i, w := range ws {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(until) || ctx.Err() != nil {
					return
				}
				if err := cycle(ctx, w.mu, c.unlocked, func() { enter(i) }); err != nil {
					w.err = err
					return
				}
				if !t0.Before(from) {
					w.lat = append(w.lat, time.Since(t0))
					w.last = time.Now()
				}
			}
		})
	}
	wg.Wait()
	cpuOnce.Do(func() { cpu0 = sample(c.ServerPID) })
	cpu1 := sample(c.ServerPID)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var all []time.Duration
	end := from
	for _, w := range ws {
		if w.err != nil {
			return nil, fmt.Errorf("a lock cycle on etcd failed: %w", w.err)
		}
		all = append(all, w.lat...)
		if w.last.After(end) {
			end = w.last
		}
	}
	res := &Result{Case: "etcd", Clients: c.Clients, Locks: c.Locks, Cycles: int64(len(all)), MostInside: int(most.Load())}
	if res.MostInside > 1 {
		return res, fmt.Errorf("%w: %d holders seen", ErrOverlap, res.MostInside)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no lock cycle finished in %v", c.Duration)
	}
	slices.Sort(all)
	elapsed := end.Sub(from)
	res.Seconds = elapsed.Seconds()
	res.CyclesPerS = float64(len(all)) / elapsed.Seconds()
	res.P50ms, res.P99ms, res.P999ms = ms(rank(all, 0.5)), ms(rank(all, 0.99)), ms(rank(all, 0.999))
	n := float64(len(all))
	if c.ServerPID > 0 && cpu0.server >= 0 && cpu1.server >= 0 {
		v := ms(cpu1.server-cpu0.server) / n
		res.ServerCPUms = &v
	}
	v := ms(cpu1.self-cpu0.self) / n
	res.ClientCPUms = &v
	return res, nil
}

// cycle takes the lock, runs inside while holding it, and gives it back.
func cycle(ctx context.Context, m *concurrency.Mutex, unlocked bool, inside func()) error {
	if unlocked {
		inside()
		return nil
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	inside()
	// The unlock runs on when ctx has ended, so that no lock is left held.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return m.Unlock(uctx)
}

// rank is the nearest-rank percentile q of sorted.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuSample is the CPU used so far by etcd (-1: not read) and by this
// process.
type cpuSample struct{ server, self time.Duration }

func sample(pid int) cpuSample {
	s := cpuSample{server: -1}
	if pid > 0 {
		if d, err := testenv.ProcCPU(pid); err == nil {
			s.server = d
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

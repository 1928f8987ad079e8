package zklock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The cost of taking several locks at once. Sixteen contenders, each on
// its own session, loop over a pool of six locks: each cycle takes a
// random set of k of them and releases it. The baseline, "mutex", takes one
// random lock of the pool with a Mutex; "multi1" the same with a
// MultiMutex of one lock (the machinery's own cost); "multi2" and
// "multi4" sets of 2 and 4 (more locks per grant, and more contention: of
// six locks, two sets of four always share some). The kinds run in
// interleaved rounds, so that drift on the machine hits them alike.

const multiPool = 6

// multiCycler takes a random set of k locks of the pool per cycle: with a
// Mutex when mutex (k is then 1), with a MultiMutex otherwise.
type multiCycler struct {
	s     *Session
	names []string // the pool
	k     int
	mutex bool
	rng   *rand.Rand
	undo  func() error
}

func (c *multiCycler) lock() error {
	perm := c.rng.Perm(len(c.names))
	set := make([]string, c.k)
	for i := range set {
		set[i] = c.names[perm[i]]
	}
	ctx := context.Background()
	if c.mutex {
		m, err := NewMutex(c.s, set[0])
		if err != nil {
			return err
		}
		g, err := m.Acquire(ctx)
		if err == nil {
			c.undo = func() error { return g.Release(ctx) }
		}
		return err
	}
	mm, err := NewMultiMutex(c.s, set)
	if err != nil {
		return err
	}
	g, err := mm.Acquire(ctx)
	if err == nil {
		c.undo = func() error { return g.Release(ctx) }
	}
	return err
}

func (c *multiCycler) unlock() error { return c.undo() }

// multiKinds are the kinds in report order, with their set size.
var multiKinds = []struct {
	name  string
	k     int
	mutex bool
}{{"mutex", 1, true}, {"multi1", 1, false}, {"multi2", 2, false}, {"multi4", 4, false}}

// BenchmarkMultiLock16 reports grants per second of each kind, its
// throughput ratio against the Mutex measured in the same run, and the
// requests each grant cost (acquire and release, as ZooKeeper counted
// them: every packet of the sixteen sessions while the kind ran,
// heartbeats included).
func BenchmarkMultiLock16(b *testing.B) {
	const n, round = 16, 64
	c := shared.Get(b)
	pool := make([]string, multiPool)
	base := fmt.Sprintf("bench-multi/%d", time.Now().UnixNano())
	for i := range pool {
		pool[i] = fmt.Sprintf("%s/%c", base, 'a'+i)
	}
	// One session per contender, shared by the kinds, which run one after
	// the other (a server takes 60 connections from one address).
	sessions := make([]*Session, n)
	for i := range sessions {
		sessions[i] = dial(b, c.Servers(), Options{SessionTimeout: 30 * time.Second})
	}
	cyclers := map[string][]cycler{}
	for ki, k := range multiKinds {
		for i, s := range sessions {
			cyclers[k.name] = append(cyclers[k.name], &multiCycler{s: s, names: pool, k: k.k, mutex: k.mutex, rng: rand.New(rand.NewPCG(uint64(ki), uint64(i)))})
		}
		if _, err := run(cyclers[k.name], n); err != nil { // warm up: the lock nodes exist
			b.Fatal(err)
		}
	}
	requests := func(string) int {
		total := 0
		for _, s := range sessions {
			total += received(b, c, s.ID())
		}
		return total
	}
	spent, sent := map[string]time.Duration{}, map[string]int{}
	cycles := 0
	for b.Loop() {
		for _, k := range multiKinds {
			before := requests(k.name)
			d, err := run(cyclers[k.name], round)
			if err != nil {
				b.Fatalf("%s: %v", k.name, err)
			}
			spent[k.name] += d
			sent[k.name] += requests(k.name) - before
		}
		cycles += round
	}
	b.StopTimer() // the sessions' cleanup is not part of it
	rate := func(kind string) float64 { return float64(cycles) / spent[kind].Seconds() }
	var lines []string
	for _, k := range multiKinds {
		perGrant := float64(sent[k.name]) / float64(cycles)
		b.ReportMetric(rate(k.name), k.name+"-grants/s")
		b.ReportMetric(rate(k.name)/rate("mutex"), k.name+"-ratio")
		b.ReportMetric(perGrant, k.name+"-requests/grant")
		lines = append(lines, fmt.Sprintf("%s %.0f grants/s (%.2f× mutex), %.1f requests/grant", k.name, rate(k.name), rate(k.name)/rate("mutex"), perGrant))
	}
	b.Logf("16 contenders, pool of %d locks, %d grants per kind: %s", multiPool, cycles, strings.Join(lines, "; "))
}

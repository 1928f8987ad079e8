package sequencer_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv/zktest"
)

var (
	multiLockDuration = flag.Duration("multilock.duration", 5*time.Second, "how long TestMultiLockNeverDeadlocks runs its clients (make chaos: 60s)")
	multiLockControl  = flag.Duration("multilock.control", 5*time.Second, "how long its control takes locks one at a time")
)

// The deadlock test's setting: 16 clients on 3 daemons (in-process
// Services, each with its own ZooKeeper session and its HTTP API on a test
// server) share 6 locks; each client repeatedly takes a random set of 2 to 4
// of them, in random order, for a few milliseconds.
const (
	dlClients = 16
	dlDaemons = 3
	dlLocks   = 6
)

// fencedCounter is one lock's resource: a counter whose writes carry the
// holder's token through a fence, with a check that no two holders are
// inside at once and that each holder's token is above the one before.
type fencedCounter struct {
	name  string
	fence *fence.Fence

	mu       sync.Mutex
	holder   int // client inside, -1 when none
	last     uint64
	value    int
	grants   int
	overlaps int // a holder entered while another was inside
	falls    int // a token not above the one before
	stale    int // a write the fence refused
}

func (c *fencedCounter) enter(client int, token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holder != -1 {
		c.overlaps++
	}
	if token <= c.last {
		c.falls++
	}
	c.holder, c.last = client, token
	c.grants++
}

// write is a read-modify-write of the counter, fenced by token, with the
// hold in between: two holders inside at once lose an increment.
func (c *fencedCounter) write(token uint64, hold time.Duration) {
	c.mu.Lock()
	v := c.value
	c.mu.Unlock()
	time.Sleep(hold) // the work under the lock, not an ordering wait
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fence.Admit(c.name, token); err != nil {
		c.stale++
		return
	}
	c.value = v + 1
}

func (c *fencedCounter) leave() {
	c.mu.Lock()
	c.holder = -1
	c.mu.Unlock()
}

// check reports what the counter saw go wrong.
func (c *fencedCounter) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overlaps != 0 || c.falls != 0 || c.stale != 0 || c.value != c.grants {
		t.Errorf("lock %s: %d overlapping holders, %d tokens not rising, %d stale writes, counter %d after %d grants",
			c.name, c.overlaps, c.falls, c.stale, c.value, c.grants)
	}
}

// dlWorld is the shared setting: the daemons' clients, the locks and their
// counters.
type dlWorld struct {
	clients  []*client.Client // one per client, spread over the daemons
	names    []string
	counters map[string]*fencedCounter
}

func newDLWorld(t *testing.T) *dlWorld {
	t.Helper()
	zkc := sharedZK.Get(t)
	root := "/seqd-test/" + t.Name()
	w := &dlWorld{counters: map[string]*fencedCounter{}}
	var daemons []*daemon
	for i := range dlDaemons {
		daemons = append(daemons, startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root, identity: fmt.Sprintf("d%d", i), logger: warnLogger(t)}))
	}
	for i := range dlClients {
		w.clients = append(w.clients, daemons[i%dlDaemons].client.Client)
	}
	f := fence.New(nil)
	for i := range dlLocks {
		name := fmt.Sprintf("account/%d", i)
		w.names = append(w.names, name)
		w.counters[name] = &fencedCounter{name: name, fence: f, holder: -1}
	}
	return w
}

// pick is a random set of 2 to 4 of the locks, in random order.
func (w *dlWorld) pick(rng *rand.Rand) []string {
	perm := rng.Perm(len(w.names))
	set := make([]string, 2+rng.IntN(3))
	for i := range set {
		set[i] = w.names[perm[i]]
	}
	return set
}

// hold does the work of a holder of every lock of set with tokens.
func (w *dlWorld) hold(i int, set []string, tokens []uint64, rng *rand.Rand) {
	for j, name := range set {
		w.counters[name].enter(i, tokens[j])
	}
	hold := time.Duration(1+rng.IntN(4)) * time.Millisecond
	for j, name := range set {
		w.counters[name].write(tokens[j], hold/time.Duration(len(set)))
	}
	for _, name := range set {
		w.counters[name].leave()
	}
}

// run runs one loop per client until d has passed, each with its own seeded
// random source (the same sets in every run), and waits for them.
func (w *dlWorld) run(d time.Duration, loop func(i int, c *client.Client, rng *rand.Rand, until time.Time)) {
	until := time.Now().Add(d)
	var wg sync.WaitGroup
	for i, c := range w.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(i, c, rand.New(rand.NewPCG(42, uint64(i))), until)
		}()
	}
	wg.Wait()
}

// Sixteen clients on three daemons take random sets of 2 to 4 of six
// locks with multi-locks, for -multilock.duration: every acquire completes
// (none waits out its 30 seconds), no two holders of a lock overlap, and
// every lock's tokens rise.
func TestMultiLockNeverDeadlocks(t *testing.T) {
	w := newDLWorld(t)
	var grants, failures atomic.Int64
	var firstErr atomic.Value
	w.run(*multiLockDuration, func(i int, c *client.Client, rng *rand.Rand, until time.Time) {
		ctx := context.Background()
		for time.Now().Before(until) {
			set := w.pick(rng)
			l, err := c.AcquireMulti(ctx, set, client.Owner(fmt.Sprintf("client-%d", i)), client.Wait(30*time.Second), client.TTL(30*time.Second))
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d, set %v: %v", i, set, err))
				continue
			}
			tokens := make([]uint64, len(l.Locks))
			for j, lk := range l.Locks {
				tokens[j] = lk.Token
			}
			w.hold(i, set, tokens, rng)
			if err := c.ReleaseMulti(ctx, l); err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprintf("client %d, release of %v: %v", i, set, err))
			}
			grants.Add(1)
		}
	})
	t.Logf("%d multi-lock grants in %v (%.0f/s) by %d clients on %d daemons", grants.Load(), *multiLockDuration, float64(grants.Load())/multiLockDuration.Seconds(), dlClients, dlDaemons)
	if n := failures.Load(); n != 0 {
		t.Errorf("%d acquires or releases failed; the first: %v", n, firstErr.Load())
	}
	if grants.Load() == 0 {
		t.Fatal("no grant at all")
	}
	for _, name := range w.names {
		w.counters[name].check(t)
	}
}

// The negative control of TestMultiLockNeverDeadlocks: the same clients
// take the same sets one lock at a time, in the set's random order, with
// single-lock leases, each acquire waiting at most a second. Some of them
// deadlock: a client times out while the locks it waits for are held by
// clients that wait, in a cycle, for the locks it holds. The test counts
// those cycles (a timeout without one is counted apart) and wants some.
func TestMultiLockOneByOneDeadlocks(t *testing.T) {
	w := newDLWorld(t)
	g := &waitsFor{holder: map[string]int{}, waiting: map[int]string{}}
	var grants, deadlocks, timeouts atomic.Int64
	w.run(*multiLockControl, func(i int, c *client.Client, rng *rand.Rand, until time.Time) {
		ctx := context.Background()
		owner := client.Owner(fmt.Sprintf("client-%d", i))
		for time.Now().Before(until) {
			set := w.pick(rng)
			var held []api.Lease
			for _, name := range set {
				g.wait(i, name)
				l, err := c.Acquire(ctx, name, owner, client.Wait(time.Second), client.TTL(30*time.Second))
				switch {
				case err == nil:
					g.got(i, name)
					held = append(held, l)
					continue
				case errors.Is(err, api.ErrHeld) && g.timedOut(i, name):
					deadlocks.Add(1)
				case errors.Is(err, api.ErrHeld):
					timeouts.Add(1)
				default:
					t.Errorf("client %d, acquire of %s: %v", i, name, err)
				}
				break
			}
			if len(held) == len(set) {
				tokens := make([]uint64, len(held))
				for j, l := range held {
					tokens[j] = l.Token
				}
				w.hold(i, set, tokens, rng)
				grants.Add(1)
			}
			for _, l := range held {
				g.released(l.Name)
				c.Release(ctx, l)
			}
		}
	})
	t.Logf("taking the sets one lock at a time: %d deadlocks (cycles of waiting clients, broken by a 1s timeout), %d timeouts without a cycle, %d sets held in %v",
		deadlocks.Load(), timeouts.Load(), grants.Load(), *multiLockControl)
	if deadlocks.Load() == 0 {
		t.Errorf("no deadlock among clients taking locks one at a time: the control shows nothing")
	}
	for _, name := range w.names {
		w.counters[name].check(t)
	}
}

// waitsFor is the clients' waits-for graph as the clients know it: who
// holds each lock (from the answer to its acquire until just before its
// release) and what each client is waiting for.
type waitsFor struct {
	mu      sync.Mutex
	holder  map[string]int
	waiting map[int]string
}

func (g *waitsFor) wait(c int, lock string) {
	g.mu.Lock()
	g.waiting[c] = lock
	g.mu.Unlock()
}

func (g *waitsFor) got(c int, lock string) {
	g.mu.Lock()
	delete(g.waiting, c)
	g.holder[lock] = c
	g.mu.Unlock()
}

func (g *waitsFor) released(lock string) {
	g.mu.Lock()
	delete(g.holder, lock)
	g.mu.Unlock()
}

// timedOut stops c's wait for lock and reports whether, as it timed out, c
// was in a cycle: lock held by a client waiting for a lock held by … c.
// Every client on such a cycle holds its lock and waits for real (a lock
// that a client holds cannot have been granted to another), so the cycle
// is a deadlock, which the timeout breaks.
func (g *waitsFor) timedOut(c int, lock string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer delete(g.waiting, c)
	cur := lock
	for range dlClients {
		h, ok := g.holder[cur]
		if !ok {
			return false
		}
		if h == c {
			return true
		}
		if cur, ok = g.waiting[h]; !ok {
			return false
		}
	}
	return false
}

// warnLogger sends warnings and errors to t.Log: a run of thousands of
// grants would drown the debug lines.
func warnLogger(t testing.TB) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// While one lock of a set is held elsewhere, the set is not granted, and
// no lock of it is: its free locks are queued for, not held (no lease, no
// token handed out). Whoever comes after it on a free lock waits behind
// it, until the set has been granted and released, or has given up: the
// test measures that wait. It is the price of deadlock freedom: the set's
// place in every queue is its transaction's, and letting a later acquirer
// take the free lock first would let a younger transaction go ahead of an
// older one, which is how cycles form.
func TestMultiLockAllOrNothing(t *testing.T) {
	zkc := sharedZK.Get(t)
	root := "/seqd-test/" + t.Name()
	var d []*daemon
	for i := range 3 {
		d = append(d, startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root, identity: fmt.Sprintf("d%d", i), logger: warnLogger(t)}))
	}
	ctx := ctxT(t, 2*time.Minute)
	names := []string{"set/a", "set/b", "set/c"}
	queued := func(name string, n int) func() bool {
		return func() bool { return len(zkChildren(t, zkc.Servers(), root+"/"+name)) == n }
	}

	hb, err := d[0].client.Acquire(ctx, names[1], "holder", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		multi api.MultiLease
		lease Lease
		err   error
		at    time.Time
	}
	setDone, xDone := make(chan got, 1), make(chan got, 1)
	go func() {
		l, err := d[1].client.AcquireMulti(ctx, names, client.Owner("set"), client.Wait(30*time.Second))
		setDone <- got{multi: l, err: err, at: time.Now()}
	}()
	zktest.Eventually(t, 10*time.Second, "the set to queue in its three locks", func() bool {
		return queued(names[0], 1)() && queued(names[1], 2)() && queued(names[2], 1)()
	})
	xStart := time.Now()
	go func() {
		l, err := d[2].client.Acquire(ctx, names[0], "x", 30*time.Second, 30*time.Second)
		xDone <- got{lease: l, err: err, at: time.Now()}
	}()
	zktest.Eventually(t, 10*time.Second, "x to queue behind the set", queued(names[0], 2))
	select {
	case r := <-setDone:
		t.Fatalf("the set was granted (%v) while %s is held", r.err, names[1])
	case r := <-xDone:
		t.Fatalf("x was granted %s (%v) ahead of the set queued before it", names[0], r.err)
	case <-time.After(stillQueued):
	}
	if ls, err := d[1].client.MultiLeases(ctx); err != nil || len(ls) != 0 {
		t.Fatalf("multi-lock leases while the set waits = %+v, %v; want none", ls, err)
	}
	heldFor := time.Since(xStart)

	// The holder of b goes: the set is granted; it holds, and goes; x is
	// granted a, with a higher token.
	if err := d[0].client.Release(ctx, names[1], hb.LeaseID, hb.Token); err != nil {
		t.Fatal(err)
	}
	set := <-setDone
	if set.err != nil {
		t.Fatal(set.err)
	}
	const setHold = 200 * time.Millisecond
	time.Sleep(setHold) // the set's work, not an ordering wait
	setReleased := time.Now()
	if err := d[1].client.ReleaseMulti(ctx, set.multi); err != nil {
		t.Fatal(err)
	}
	x := <-xDone
	if x.err != nil {
		t.Fatal(x.err)
	}
	if x.at.Before(setReleased) || x.lease.Token <= set.multi.Locks[0].Token {
		t.Errorf("x granted at +%v with token %d, the set released at +%v with token %d on %s: want x after it, higher",
			x.at.Sub(xStart), x.lease.Token, setReleased.Sub(xStart), set.multi.Locks[0].Token, names[0])
	}
	t.Logf("x waited %v for the free lock %s behind the queued set: about %v while %s's holder kept it, then the set's grant and its %v hold",
		x.at.Sub(xStart).Round(time.Millisecond), names[0], heldFor.Round(time.Millisecond), names[1], setHold)
	d[2].client.Release(ctx, names[0], x.lease.LeaseID, x.lease.Token)

	// A set that gives up leaves its queues at once: x, behind it on a, is
	// granted as soon as the set's wait ends, and the set's 409 names the
	// lock it waited for.
	if hb, err = d[0].client.Acquire(ctx, names[1], "holder", 30*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	setStart := time.Now()
	go func() {
		l, err := d[1].client.AcquireMulti(ctx, names, client.Owner("set"), client.Wait(time.Second))
		setDone <- got{multi: l, err: err, at: time.Now()}
	}()
	zktest.Eventually(t, 10*time.Second, "the set to queue again", queued(names[0], 1))
	xStart = time.Now()
	go func() {
		l, err := d[2].client.Acquire(ctx, names[0], "x", 30*time.Second, 30*time.Second)
		xDone <- got{lease: l, err: err, at: time.Now()}
	}()
	set, x = <-setDone, <-xDone
	var ae *api.APIError
	if !errors.As(set.err, &ae) || ae.Code != CodeHeld || !strings.Contains(ae.Message, names[1]) {
		t.Errorf("the set's acquire with %s held = %v, want 409 held naming it", names[1], set.err)
	}
	if x.err != nil {
		t.Fatalf("x after the set gave up: %v", x.err)
	}
	t.Logf("behind a set that gave up after its 1s wait, x waited %v: it was granted %v after the set's wait ended",
		x.at.Sub(xStart).Round(time.Millisecond), x.at.Sub(setStart.Add(time.Second)).Round(time.Millisecond))
	for _, name := range []string{names[0], names[2]} {
		want := map[string]int{names[0]: 1, names[2]: 0}[name]
		zktest.Eventually(t, 10*time.Second, "the set's contender in "+name+" withdrawn", queued(name, want))
	}
}

// stillQueued is how long two queued acquirers must stay ungranted for the
// test to believe they wait (a bound, not an ordering sleep).
const stillQueued = 300 * time.Millisecond

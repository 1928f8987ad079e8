package zklock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Benchmarks against baselines measured in the same process, on the shared
// standalone server:
//
//   - raw: an ephemeral-sequential create and its delete, the least any
//     ZooKeeper lock can cost (no exclusion at all);
//   - zkLock: go-zookeeper's own zk.Lock (exclusion, no token);
//   - zklock: this package (exclusion, a token, loss detection).
//
// The "ratio" sub-benchmarks interleave the three so that drift on the
// machine hits them alike, and report throughput ratios ours/baseline
// (above 1: ours is faster).

// cycler is one contender of one kind: lock then unlock is one cycle.
type cycler interface {
	lock() error
	unlock() error
}

type rawCycler struct {
	conn   *zk.Conn
	parent string
	node   string
}

func (r *rawCycler) lock() (err error) {
	r.node, err = r.conn.Create(r.parent+"/x-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	return err
}
func (r *rawCycler) unlock() error { return r.conn.Delete(r.node, -1) }

type zkLockCycler struct{ l *zk.Lock }

func (z zkLockCycler) lock() error   { return z.l.Lock() }
func (z zkLockCycler) unlock() error { return z.l.Unlock() }

type zklockCycler struct {
	m *Mutex
	g *Grant
}

func (z *zklockCycler) lock() (err error) {
	z.g, err = z.m.Acquire(context.Background())
	return err
}
func (z *zklockCycler) unlock() error { return z.g.Release(context.Background()) }

// benchKinds names the three kinds in report order.
var benchKinds = []string{"raw", "zkLock", "zklock"}

// newCyclers makes n contenders of kind on one lock, each on its own
// ZooKeeper session.
func newCyclers(b *testing.B, kind string, n int) []cycler {
	b.Helper()
	servers := shared.Get(b).Servers()
	base := "/seqd-bench/" + strings.ReplaceAll(b.Name(), "/", "_")
	cs := make([]cycler, n)
	for i := range cs {
		switch kind {
		case "raw":
			conn := rawConn(b, servers)
			ensurePath(b, conn, base+"/raw")
			cs[i] = &rawCycler{conn: conn, parent: base + "/raw"}
		case "zkLock":
			cs[i] = zkLockCycler{zk.NewLock(rawConn(b, servers), base+"/zkLock", zk.WorldACL(zk.PermAll))}
		case "zklock":
			s := dial(b, servers, Options{})
			cs[i] = &zklockCycler{m: mutex(b, s, "bench/"+strings.ReplaceAll(b.Name(), "/", "_"))}
		default:
			b.Fatalf("unknown kind %q", kind)
		}
	}
	return cs
}

func ensurePath(b *testing.B, conn *zk.Conn, p string) {
	b.Helper()
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
}

// run makes cycles lock/unlock cycles spread over the contenders, each in
// its own goroutine, and returns how long they took.
func run(cs []cycler, cycles int) (time.Duration, error) {
	var (
		tickets atomic.Int64
		wg      sync.WaitGroup
		errMu   sync.Mutex
		first   error
	)
	start := time.Now()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tickets.Add(1) <= int64(cycles) {
				err := c.lock()
				if err == nil {
					err = c.unlock()
				}
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// benchKind runs b.N cycles of one kind with n contenders.
func benchKind(b *testing.B, kind string, n int) {
	cs := newCyclers(b, kind, n)
	if _, err := run(cs, n); err != nil { // warm up: lock nodes exist
		b.Fatal(err)
	}
	b.ResetTimer()
	d, err := run(cs, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/d.Seconds(), "cycles/s")
}

// benchRatio runs the three kinds in rounds of round cycles each and reports
// their per-cycle times and our throughput ratio against each baseline.
func benchRatio(b *testing.B, n, round int) {
	cs := map[string][]cycler{}
	for _, k := range benchKinds {
		cs[k] = newCyclers(b, k, n)
		if _, err := run(cs[k], n); err != nil {
			b.Fatal(err)
		}
	}
	spent := map[string]time.Duration{}
	cycles := 0
	for b.Loop() {
		for _, k := range benchKinds {
			d, err := run(cs[k], round)
			if err != nil {
				b.Fatalf("%s: %v", k, err)
			}
			spent[k] += d
		}
		cycles += round
	}
	per := func(k string) float64 { return float64(spent[k].Nanoseconds()) / float64(cycles) }
	for _, k := range benchKinds {
		b.ReportMetric(per(k), k+"-ns/cycle")
	}
	b.ReportMetric(per("raw")/per("zklock"), "ratio_vs_raw")
	b.ReportMetric(per("zkLock")/per("zklock"), "ratio_vs_zkLock")
	b.Logf("%d contender(s), %d cycles each: raw %.0fµs, zk.Lock %.0fµs, zklock %.0fµs per cycle; zklock throughput = %.2f× raw, %.2f× zk.Lock",
		n, cycles, per("raw")/1e3, per("zkLock")/1e3, per("zklock")/1e3, per("raw")/per("zklock"), per("zkLock")/per("zklock"))
	b.StopTimer() // the sessions' cleanup is not part of it
}

// One contender: acquire + release with nobody else about.
func BenchmarkUncontended(b *testing.B) {
	for _, k := range benchKinds {
		b.Run(k, func(b *testing.B) { benchKind(b, k, 1) })
	}
	b.Run("ratio", func(b *testing.B) { benchRatio(b, 1, 1) })
}

// Sixteen contenders, each on its own session, loop on one lock; raw is 16
// sessions creating and deleting without exclusion (a ceiling, not a lock).
func BenchmarkHotLock16(b *testing.B) {
	const n = 16
	for _, k := range benchKinds {
		b.Run(k, func(b *testing.B) { benchKind(b, k, n) })
	}
	b.Run("ratio", func(b *testing.B) { benchRatio(b, n, 4*n) })
}

package sequencer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/client"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv"
)

// HTTP acquire+release cycles per second with 16
// concurrent clients, against baselines measured in the same run on the same
// standalone ZooKeeper:
//
//   - raw: an ephemeral-sequential create and its delete, the least any
//     ZooKeeper lock can cost (no exclusion, no token, no HTTP). On one
//     shared connection (the daemon's situation: one session for all its
//     clients) and on 16 connections.
//   - zkLock: go-zookeeper's zk.Lock (exclusion, no token), 16 Lock objects,
//     on 16 connections and on one shared connection.
//
// The variants run interleaved, one round of each per b.Loop iteration, so
// that drift on the machine hits them alike. Each reports cycles/s; the
// ratios are seqd's throughput over each baseline's (above 1: seqd faster).
// The aims: ≥ 0.9× raw uncontended, ≥ 1.0× zk.Lock on the hot lock.
//
// zk-req/cycle is the number of requests the server received per cycle (the
// srvr four-letter word's Received counter over a separate counting pass):
// what each variant costs ZooKeeper, independent of timing.

const benchClients = 16

// benchVariant is one way of running lock/unlock cycles: cycle(w) runs one
// cycle for worker w (0 ≤ w < benchClients), each worker in its own
// goroutine.
type benchVariant struct {
	name  string
	cycle func(w int) error
}

// benchRun runs cycles cycles over benchClients workers and returns how long
// they took.
func benchRun(v benchVariant, cycles int) (time.Duration, error) {
	var (
		tickets atomic.Int64
		wg      sync.WaitGroup
		errMu   sync.Mutex
		first   error
	)
	start := time.Now()
	for w := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tickets.Add(1) <= int64(cycles) {
				if err := v.cycle(w); err != nil {
					errMu.Lock()
					if first == nil {
						first = fmt.Errorf("%s, worker %d: %w", v.name, w, err)
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

// benchReceived is the server's count of received packets.
func benchReceived(b *testing.B, servers []string) int64 {
	b.Helper()
	out, err := testenv.FourLetter(servers[0], "srvr", 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Received: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatalf("srvr: %q: %v", line, err)
			}
			return n
		}
	}
	b.Fatalf("srvr has no Received line:\n%s", out)
	return 0
}

// benchCPU is the user and system CPU time this process has used.
func benchCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchMkdirs(b *testing.B, conn *zk.Conn, p string) {
	b.Helper()
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
}

// benchDaemon is the daemon as it runs in production, logging at Info, its
// default (grant and release lines are at Debug: not formatted), its API served
// over loopback HTTP, and an HTTP client that keeps one connection per
// worker alive: http.DefaultTransport keeps only 2 idle connections per
// host, and 16 workers on it would measure TCP handshakes, not seqd.
func benchDaemon(b *testing.B, servers []string, signer ...*fence.Signer) *daemon {
	b.Helper()
	o := daemonOpts{
		servers: servers,
		root:    "/seqd-bench/" + strings.ReplaceAll(b.Name(), "/", "_"),
		logger:  slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if len(signer) > 0 {
		o.signer = signer[0]
		o.root += "-signed"
	}
	return benchStart(b, o)
}

func benchStart(b *testing.B, o daemonOpts) *daemon {
	b.Helper()
	d := startDaemon(b, o)
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * benchClients}
	b.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(d.srv.URL, client.WithoutEnv(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		b.Fatal(err)
	}
	d.client = &tclient{c}
	return d
}

// leaser is what the Client and the Service have in common: acquire and
// release, over HTTP or in process.
type leaser interface {
	Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error)
	Release(ctx context.Context, name, leaseID string, token uint64) error
}

// benchLeases: worker w acquires lock(w) through via (waiting up to wait)
// and releases it. Via d.client it is seqd as its clients see it; via
// d.svc, the Service called in process, it is not a baseline but splits
// seqd's cost between the API and the core.
func benchLeases(variant string, via leaser, lock func(w int) string, wait time.Duration) benchVariant {
	ctx := context.Background()
	return benchVariant{name: variant, cycle: func(w int) error {
		name := lock(w)
		l, err := via.Acquire(ctx, name, fmt.Sprintf("bench-%d", w), 15*time.Second, wait)
		if err != nil {
			return err
		}
		return via.Release(ctx, name, l.LeaseID, l.Token)
	}}
}

// benchRaw: worker w creates an ephemeral-sequential node under parent(w)
// on conn(w) and deletes it.
func benchRaw(name string, conn func(w int) *zk.Conn, parent func(w int) string) benchVariant {
	acl := zk.WorldACL(zk.PermAll)
	return benchVariant{name: name, cycle: func(w int) error {
		c := conn(w)
		p, err := c.Create(parent(w)+"/x-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return err
		}
		return c.Delete(p, -1)
	}}
}

// benchZKLock: worker w locks and unlocks its own zk.Lock.
func benchZKLock(name string, locks []*zk.Lock) benchVariant {
	return benchVariant{name: name, cycle: func(w int) error {
		if err := locks[w].Lock(); err != nil {
			return err
		}
		return locks[w].Unlock()
	}}
}

// benchCompare measures the variants, seqd first, and reports cycles/s,
// requests per cycle and seqd's ratio against each baseline.
func benchCompare(b *testing.B, servers []string, vs []benchVariant, round int) {
	// Warm up (lock nodes, connections, JIT) and count requests per cycle.
	// The CPU this process spends per cycle (daemon, HTTP client and
	// go-zookeeper alike) shows what seqd costs on the host beside the
	// requests it makes ZooKeeper serve.
	const counted = 8 * benchClients
	reqs, cpu := map[string]float64{}, map[string]float64{}
	for _, v := range vs {
		if _, err := benchRun(v, counted); err != nil {
			b.Fatal(err)
		}
		before, cpu0 := benchReceived(b, servers), benchCPU(b)
		if _, err := benchRun(v, counted); err != nil {
			b.Fatal(err)
		}
		cpu[v.name] = float64((benchCPU(b) - cpu0).Microseconds()) / counted
		reqs[v.name] = float64(benchReceived(b, servers)-before-1) / counted // -1: the srvr itself
	}

	spent := map[string]time.Duration{}
	cycles := 0
	for b.Loop() {
		for _, v := range vs {
			d, err := benchRun(v, round)
			if err != nil {
				b.Fatal(err)
			}
			spent[v.name] += d
		}
		cycles += round
	}
	b.StopTimer() // the sessions' cleanup is not part of it

	rate := func(name string) float64 { return float64(cycles) / spent[name].Seconds() }
	ours := rate(vs[0].name)
	var lines []string
	for _, v := range vs {
		b.ReportMetric(rate(v.name), v.name+"-cycles/s")
		b.ReportMetric(reqs[v.name], v.name+"-zk-req/cycle")
		b.ReportMetric(cpu[v.name], v.name+"-cpu-µs/cycle")
		line := fmt.Sprintf("%-14s %7.0f cycles/s  %4.1f zk req/cycle  %5.0f µs CPU/cycle", v.name, rate(v.name), reqs[v.name], cpu[v.name])
		if v.name != vs[0].name {
			b.ReportMetric(ours/rate(v.name), "ratio_vs_"+v.name)
			line += fmt.Sprintf("  seqd = %.2f×", ours/rate(v.name))
		}
		lines = append(lines, line)
	}
	b.Logf("%d clients, %d cycles per variant:\n%s", benchClients, cycles, strings.Join(lines, "\n"))
}

// benchZK is the baselines' ZooKeeper side: one shared connection, one per
// worker, and each worker's zk.Lock on either.
type benchZK struct {
	shared  *zk.Conn
	conns   []*zk.Conn // by worker
	locks1  []*zk.Lock // on shared
	locks16 []*zk.Lock // on conns
}

// benchBaselines connects the baselines; lockPath(kind, w) is the path of
// worker w's zk.Lock of kind "zkLock1" or "zkLock16".
func benchBaselines(b *testing.B, servers []string, lockPath func(kind string, w int) string) *benchZK {
	z := &benchZK{
		shared:  zkConn(b, servers),
		conns:   make([]*zk.Conn, benchClients),
		locks1:  make([]*zk.Lock, benchClients),
		locks16: make([]*zk.Lock, benchClients),
	}
	for w := range z.conns {
		z.conns[w] = zkConn(b, servers)
		z.locks16[w] = zk.NewLock(z.conns[w], lockPath("zkLock16", w), zk.WorldACL(zk.PermAll))
		z.locks1[w] = zk.NewLock(z.shared, lockPath("zkLock1", w), zk.WorldACL(zk.PermAll))
	}
	return z
}

// Each client on its own lock name: nothing waits, every cycle is a grant.
func BenchmarkCycles16Uncontended(b *testing.B) {
	servers := sharedZK.Get(b).Servers()
	base := "/seqd-bench/" + b.Name()
	d := benchDaemon(b, servers)
	z := benchBaselines(b, servers, func(kind string, w int) string { return fmt.Sprintf("%s/%s/%d", base, kind, w) })
	rawParent := func(w int) string { return fmt.Sprintf("%s/raw/%d", base, w) }
	for w := range benchClients {
		benchMkdirs(b, z.shared, rawParent(w))
	}
	own := func(w int) string { return fmt.Sprintf("own/%d", w) }
	benchCompare(b, servers, []benchVariant{
		benchLeases("seqd", d.client, own, 0),
		benchLeases("service", d.svc, own, 0),
		benchRaw("raw-1conn", func(int) *zk.Conn { return z.shared }, rawParent),
		benchRaw("raw-16conn", func(w int) *zk.Conn { return z.conns[w] }, rawParent),
		benchZKLock("zkLock-1conn", z.locks1),
		benchZKLock("zkLock-16conn", z.locks16),
	}, 8*benchClients)
}

// All 16 clients on one lock: acquire with a wait, then release.
func BenchmarkCycles16HotLock(b *testing.B) {
	servers := sharedZK.Get(b).Servers()
	base := "/seqd-bench/" + b.Name()
	d := benchDaemon(b, servers)
	z := benchBaselines(b, servers, func(kind string, _ int) string { return base + "/" + kind })
	hot := func(int) string { return "hot" }
	benchCompare(b, servers, []benchVariant{
		benchLeases("seqd", d.client, hot, time.Minute),
		benchLeases("service", d.svc, hot, time.Minute),
		benchZKLock("zkLock-1conn", z.locks1),
		benchZKLock("zkLock-16conn", z.locks16),
	}, 2*benchClients) // short rounds: a hot cycle is slow, and more rounds interleave more
}

// A daemon that signs its sequencers against one that does not, each client
// on its own lock: the cost of signing every grant (aim: ≥ 0.95×).
func BenchmarkCycles16Signed(b *testing.B) {
	servers := sharedZK.Get(b).Servers()
	signer, _ := newSigner(b, "bench")
	signed, plain := benchDaemon(b, servers, signer), benchDaemon(b, servers)
	own := func(w int) string { return fmt.Sprintf("own/%d", w) }
	benchCompare(b, servers, []benchVariant{
		benchLeases("signed", signed.client, own, 0),
		benchLeases("unsigned", plain.client, own, 0),
	}, 8*benchClients)
}

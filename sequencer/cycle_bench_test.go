package sequencer

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHTTPCycle: what one acquire+release cycle costs the process in
// CPU and allocations, with the hand-written JSON path of fastjson.go
// ("fast") and without it ("strict"), in rounds taken in turn so that
// drift on the machine hits both alike. Each b.Loop iteration is one round
// of each.
//
//   - handler: the daemon alone. The HTTP handler is called in process
//     with reused requests and a reply writer that allocates nothing, so
//     that allocs and bytes are the handler's, the Service's, zklock's and
//     go-zookeeper's: what the daemon allocates per cycle.
//   - http: one Client over loopback HTTP, cycle after cycle: the daemon,
//     net/http on both sides and the Client.
//   - http16: 16 Clients at once, each on its own lock, as in
//     BenchmarkCycles16Uncontended.
//
// cpu-µs/cycle is the process's user+system CPU time (getrusage) over the
// cycles: the daemon's and, for http and http16, its clients' too;
// allocs/cycle and B/cycle are runtime.MemStats' Mallocs and TotalAlloc.
// fast/strict-cpu is the ratio of the two CPU figures (below 1: the fast
// path spends less).
// cycleVariant limits BenchmarkHTTPCycle to one variant, so that a CPU
// profile shows that one alone.
var cycleVariant = flag.String("cycle.variant", "", "run only this variant of BenchmarkHTTPCycle: fast or strict (default both)")

func BenchmarkHTTPCycle(b *testing.B) {
	servers := sharedZK.Get(b).Servers()
	d := benchDaemon(b, servers)
	h := NewHandler(d.svc, HandlerOptions{})
	b.Run("handler", func(b *testing.B) {
		fast, strict := newHandlerCycle(h, "handler-fast"), newHandlerCycle(h, "handler-strict")
		cycleCompare(b, 1, 32,
			func(int) error { return fast.cycle() },
			func(int) error { return strict.cycle() })
	})
	b.Run("http", func(b *testing.B) {
		lock := func(variant string) func(int) string { return func(int) string { return "http-" + variant } }
		cycleCompare(b, 1, 32,
			benchLeases("fast", d.client, lock("fast"), 0).cycle,
			benchLeases("strict", d.client, lock("strict"), 0).cycle)
	})
	b.Run("http16", func(b *testing.B) {
		lock := func(variant string) func(int) string {
			return func(w int) string { return fmt.Sprintf("http16-%s/%d", variant, w) }
		}
		cycleCompare(b, benchClients, 8*benchClients,
			benchLeases("fast", d.client, lock("fast"), 0).cycle,
			benchLeases("strict", d.client, lock("strict"), 0).cycle)
	})
}

// cycleCompare runs round cycles on workers workers with the fast path,
// then round with the strict one, as long as b.Loop asks, after a round of
// each to warm up, and reports their costs per cycle.
func cycleCompare(b *testing.B, workers, round int, fast, strict func(w int) error) {
	type cost struct {
		cpu           time.Duration
		allocs, bytes uint64
		cycles        int
	}
	var costs [2]cost // fast, strict
	runRound := func(i int, count bool) {
		strictJSONOnly.Store(i == 1)
		defer strictJSONOnly.Store(false)
		cycle := [2]func(int) error{fast, strict}[i]
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cpu0 := benchCPU(b)
		var err error
		if workers == 1 {
			for range round {
				if err = cycle(0); err != nil {
					break
				}
			}
		} else {
			_, err = benchRun(benchVariant{name: [2]string{"fast", "strict"}[i], cycle: cycle}, round)
		}
		cpu := benchCPU(b) - cpu0
		runtime.ReadMemStats(&m1)
		if err != nil {
			b.Fatal(err)
		}
		if count {
			c := &costs[i]
			c.cpu += cpu
			c.allocs += m1.Mallocs - m0.Mallocs
			c.bytes += m1.TotalAlloc - m0.TotalAlloc
			c.cycles += round
		}
	}
	for i, name := range []string{"fast", "strict"} { // warm up
		if *cycleVariant == "" || *cycleVariant == name {
			runRound(i, false)
		}
	}
	switch *cycleVariant {
	case "", "fast", "strict":
	default:
		b.Fatalf("-cycle.variant %q: want fast or strict", *cycleVariant)
	}
	for b.Loop() {
		for i, name := range []string{"fast", "strict"} {
			if *cycleVariant == "" || *cycleVariant == name {
				runRound(i, true)
			}
		}
	}
	b.StopTimer()
	perCycle := func(c cost) (cpu, allocs, bytes float64) {
		n := float64(c.cycles)
		return float64(c.cpu.Microseconds()) / n, float64(c.allocs) / n, float64(c.bytes) / n
	}
	var cpu [2]float64
	for i, name := range []string{"fast", "strict"} {
		if costs[i].cycles == 0 {
			continue
		}
		var allocs, bytes float64
		cpu[i], allocs, bytes = perCycle(costs[i])
		b.ReportMetric(cpu[i], name+"-cpu-µs/cycle")
		b.ReportMetric(allocs, name+"-allocs/cycle")
		b.ReportMetric(bytes, name+"-B/cycle")
	}
	if cpu[0] > 0 && cpu[1] > 0 {
		b.ReportMetric(cpu[0]/cpu[1], "fast/strict-cpu")
	}
}

// handlerCycle acquires and releases a lock through a handler in process,
// with requests and a reply writer it reuses.
type handlerCycle struct {
	h                 http.Handler
	acquire, release  *http.Request
	acqBody, relBody  reusedBody
	acqJSON, relJSON  []byte
	w                 replyRecorder
	leaseID, tokenBuf []byte
}

func newHandlerCycle(h http.Handler, name string) *handlerCycle {
	c := &handlerCycle{h: h, acqJSON: []byte(`{"owner":"bench-0","ttl":"15s"}`)}
	c.w.header = http.Header{}
	ctx := context.Background()
	var err error
	if c.acquire, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://seqd/v1/locks/"+name+"/acquire", &c.acqBody); err != nil {
		panic(err)
	}
	if c.release, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://seqd/v1/locks/"+name+"/release", &c.relBody); err != nil {
		panic(err)
	}
	return c
}

func (c *handlerCycle) cycle() error {
	c.acqBody.Reset(c.acqJSON)
	c.acquire.Body = &c.acqBody
	if err := c.w.serve(c.h, c.acquire); err != nil {
		return err
	}
	// The lease's id and token, without a decoder's allocations.
	c.leaseID = append(c.leaseID[:0], c.w.field(`"lease_id":"`, '"')...)
	c.tokenBuf = append(c.tokenBuf[:0], c.w.field(`"token":`, ',')...)
	c.relJSON = append(c.relJSON[:0], `{"lease_id":"`...)
	c.relJSON = append(c.relJSON, c.leaseID...)
	c.relJSON = append(c.relJSON, `","token":`...)
	c.relJSON = append(c.relJSON, c.tokenBuf...)
	c.relJSON = append(c.relJSON, '}')
	c.relBody.Reset(c.relJSON)
	c.release.Body = &c.relBody
	return c.w.serve(c.h, c.release)
}

// reusedBody is a request body to reset and send again.
type reusedBody struct{ bytes.Reader }

func (*reusedBody) Close() error { return nil }

// replyRecorder is an http.ResponseWriter that keeps the last reply in
// buffers it reuses.
type replyRecorder struct {
	header http.Header
	status int
	body   []byte
}

func (w *replyRecorder) Header() http.Header { return w.header }
func (w *replyRecorder) WriteHeader(status int) {
	w.status = status
}
func (w *replyRecorder) Write(p []byte) (int, error) {
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *replyRecorder) serve(h http.Handler, r *http.Request) error {
	w.status, w.body = http.StatusOK, w.body[:0]
	clear(w.header)
	h.ServeHTTP(w, r)
	if w.status != http.StatusOK {
		return fmt.Errorf("%s: %d %s", r.URL.Path, w.status, w.body)
	}
	return nil
}

// field is the reply's bytes after key up to end.
func (w *replyRecorder) field(key string, end byte) []byte {
	i := bytes.Index(w.body, []byte(key))
	if i < 0 {
		return nil
	}
	v := w.body[i+len(key):]
	if j := bytes.IndexByte(v, end); j >= 0 {
		return v[:j]
	}
	return nil
}

// The reply parser of the benchmark reads what the handler writes.
func TestHandlerCycle(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	c := newHandlerCycle(NewHandler(d.svc, HandlerOptions{}), "cycle")
	for range 3 {
		if err := c.cycle(); err != nil {
			t.Fatal(err)
		}
		if len(c.leaseID) != 32 {
			t.Fatalf("lease id %q in %s", c.leaseID, c.w.body)
		}
		if _, err := strconv.ParseUint(string(c.tokenBuf), 10, 64); err != nil {
			t.Fatalf("token %q in %s", c.tokenBuf, c.w.body)
		}
	}
	if ls := d.svc.Leases(); len(ls) != 0 {
		t.Fatalf("leases left: %v", ls)
	}
}

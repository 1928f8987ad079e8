package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// The scale figures: what one held lease costs a daemon, as deployed (the
// daemon a process of its own, its leases taken and renewed over HTTP).
// For each size, a fresh daemon is started and its resident memory, heap
// in use and goroutines read (from its /metrics) idle; then it is given
// that many leases, each on a lock of its own, and all of them are renewed
// with POST /v1/renew, pass after pass, for the renewal time; the same
// figures are read again, and the difference divided by the leases. A
// lease whose renewal failed is counted: none should, since a pass takes
// much less than the TTL.

// ScaleOptions shape a scale run; zero values take the defaults.
type ScaleOptions struct {
	// Sizes are the numbers of held leases, one run each; default 10000.
	Sizes []int
	// Clients acquire and renew side by side; default 64.
	Clients int
	// TTL of every lease; default 5m.
	TTL time.Duration
	// Renewing is how long the leases are renewed, pass after pass, after
	// they are all held (at least one pass); default 10s.
	Renewing time.Duration
}

func (o ScaleOptions) withDefaults() ScaleOptions {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{10000}
	}
	if o.Clients <= 0 {
		o.Clients = 64
	}
	if o.TTL <= 0 {
		o.TTL = 5 * time.Minute
	}
	if o.Renewing <= 0 {
		o.Renewing = 10 * time.Second
	}
	return o
}

// Footprint is what a daemon's /metrics says it takes.
type Footprint struct {
	RSS        float64 // process_resident_memory_bytes
	HeapInuse  float64 // go_memstats_heap_inuse_bytes
	Goroutines float64 // go_goroutines
}

// ScaleResult is one size.
type ScaleResult struct {
	Leases      int
	Idle, Held  Footprint
	AcquireRate float64 // leases granted per second, Clients at a time
	// Renewed counts the renewals; RenewRate is how many a second were
	// sustained; Passes is how many times every lease was renewed, the
	// slowest of them taking LongestPass (against the TTL).
	Renewed     int64
	RenewRate   float64
	Passes      int
	LongestPass time.Duration
	// Failed renewals: a lease that expired, or was refused.
	Failed int64
}

// PerLease is (Held - Idle) / Leases.
func (r ScaleResult) PerLease() Footprint {
	n := float64(r.Leases)
	return Footprint{RSS: (r.Held.RSS - r.Idle.RSS) / n, HeapInuse: (r.Held.HeapInuse - r.Idle.HeapInuse) / n,
		Goroutines: (r.Held.Goroutines - r.Idle.Goroutines) / n}
}

// ScaleReport is a scale run.
type ScaleReport struct {
	Started  time.Time
	Servers  []string
	Clients  int
	TTL      time.Duration
	Renewing time.Duration
	RTT      time.Duration
	Results  []ScaleResult
}

// RunScale measures what held leases cost a daemon run from
// cfg.DaemonCommand on cfg's ZooKeeper. On an error it returns the sizes
// measured so far.
func RunScale(ctx context.Context, cfg Config, o ScaleOptions) (*ScaleReport, error) {
	cfg, err := cfg.forDaemons("the scale figures need the seqd binary to run the daemon")
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	started := time.Now()
	id := runID(started)
	rep := &ScaleReport{Started: started, Servers: cfg.Servers, Clients: o.Clients, TTL: o.TTL, Renewing: o.Renewing, RTT: cfg.RTT}
	for _, n := range o.Sizes {
		r := newRunner(cfg, id+"-scale-"+strconv.Itoa(n))
		res, err := r.scale(ctx, n, o)
		if err != nil {
			return rep, fmt.Errorf("%d leases: %w", n, err)
		}
		rep.Results = append(rep.Results, *res)
	}
	return rep, nil
}

func (r *runner) scale(ctx context.Context, n int, o ScaleOptions) (res *ScaleResult, err error) {
	if r.admin, err = r.connect(ctx); err != nil {
		return nil, err
	}
	defer r.cleanup()
	d, err := r.startProcess(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := d.stop(); err == nil && serr != nil {
			err = serr
		}
	}()
	// A renewal of a whole batch waits behind the others in flight.
	c, err := client.New(d.addr, client.WithoutEnv(), client.WithTimeout(renewTimeout))
	if err != nil {
		return nil, err
	}
	res = &ScaleResult{Leases: n}
	if res.Idle, err = footprint(ctx, d.addr); err != nil {
		return nil, err
	}
	leases := make([]api.RenewItem, n)
	var next atomic.Int64
	start := time.Now()
	if err := fanOut(o.Clients, func() error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n || ctx.Err() != nil {
				return ctx.Err()
			}
			if i%1000 == 0 {
				r.progress(fmt.Sprintf("scale %d: acquiring, %d held", n, i))
			}
			name := "scale/" + strconv.Itoa(i)
			l, err := c.Acquire(ctx, name, client.TTL(o.TTL))
			if err != nil {
				return fmt.Errorf("acquire %s: %w", name, err)
			}
			leases[i] = api.RenewItem{Name: name, LeaseID: l.LeaseID, Token: l.Token}
		}
	}); err != nil {
		return nil, err
	}
	res.AcquireRate = float64(n) / time.Since(start).Seconds()
	renewStart := time.Now()
	for res.Passes == 0 || time.Since(renewStart) < o.Renewing {
		r.progress(fmt.Sprintf("scale %d: renewal pass %d", n, res.Passes+1))
		pass := time.Now()
		renewed, failed, err := renewAll(ctx, c, leases, renewBatches(o.Clients))
		if err != nil {
			return nil, err
		}
		res.Renewed += renewed
		res.Failed += failed
		res.Passes++
		res.LongestPass = max(res.LongestPass, time.Since(pass))
	}
	res.RenewRate = float64(res.Renewed) / time.Since(renewStart).Seconds()
	if res.Held, err = footprint(ctx, d.addr); err != nil {
		return nil, err
	}
	r.progressDone(fmt.Sprintf("scale %d: %.0f B of RSS and %.2f goroutines a lease, %.0f renewals/s, %d failed",
		n, res.PerLease().RSS, res.PerLease().Goroutines, res.RenewRate, res.Failed))
	return res, nil
}

// renewTimeout bounds one request of the scale run.
const renewTimeout = 30 * time.Second

// renewBatches is how many renewal requests go at once for clients: a
// client that holds many leases renews them in batches, and a few batches
// of 500 keep the daemon as busy as many.
func renewBatches(clients int) int { return max(1, clients/16) }

// renewAll renews every lease once, api.MaxRenewBatch to a request,
// clients requests at a time; failed counts the leases not renewed.
func renewAll(ctx context.Context, c *client.Client, leases []api.RenewItem, clients int) (renewed, failed int64, err error) {
	var next atomic.Int64
	var ok, bad atomic.Int64
	err = fanOut(clients, func() error {
		for {
			i := int(next.Add(1)-1) * api.MaxRenewBatch
			if i >= len(leases) || ctx.Err() != nil {
				return ctx.Err()
			}
			batch := leases[i:min(i+api.MaxRenewBatch, len(leases))]
			results, err := c.RenewMany(ctx, batch, 0)
			if err != nil {
				return fmt.Errorf("renew %d leases: %w", len(batch), err)
			}
			for _, res := range results {
				if res.Status == http.StatusOK {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		}
	})
	return ok.Load(), bad.Load(), err
}

// fanOut runs f in n goroutines and returns the first error.
func fanOut(n int, f func() error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// footprint reads what the daemon at base takes from its /metrics.
func footprint(ctx context.Context, base string) (Footprint, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return Footprint{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Footprint{}, fmt.Errorf("read the daemon's /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Footprint{}, fmt.Errorf("read the daemon's /metrics: %s", resp.Status)
	}
	return parseFootprint(resp.Body)
}

// parseFootprint finds the three unlabelled samples in a Prometheus text
// exposition.
func parseFootprint(r io.Reader) (Footprint, error) {
	var f Footprint
	want := map[string]*float64{"process_resident_memory_bytes": &f.RSS, "go_memstats_heap_inuse_bytes": &f.HeapInuse, "go_goroutines": &f.Goroutines}
	found := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if p := want[name]; ok && p != nil {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return f, fmt.Errorf("the daemon's /metrics has %s %q: %v", name, value, err)
			}
			*p = v
			delete(want, name)
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("read the daemon's /metrics: %w", err)
	}
	if len(want) > 0 {
		var missing []string
		for name := range want {
			missing = append(missing, name)
		}
		return f, fmt.Errorf("the daemon's /metrics has no %s", strings.Join(missing, ", "))
	}
	return f, nil
}

// WriteTable prints the report for people.
func (rep *ScaleReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "held leases, one daemon (a process of its own), %d clients, TTL %v, renewed for %v\n", rep.Clients, rep.TTL, rep.Renewing)
	fmt.Fprintln(tw, "leases\tRSS/lease\theap/lease\tgoroutines/lease\tgoroutines held\tacquires/s\trenewals/s\tlongest pass\tfailed")
	for _, r := range rep.Results {
		p := r.PerLease()
		fmt.Fprintf(tw, "%d\t%.0f B\t%.0f B\t%.3f\t%.0f\t%.0f\t%.0f\t%v\t%d\n", r.Leases, p.RSS, p.HeapInuse, p.Goroutines, r.Held.Goroutines,
			r.AcquireRate, r.RenewRate, r.LongestPass.Round(time.Millisecond), r.Failed)
	}
	return tw.Flush()
}

// WriteJSON prints the report for machines: bytes, durations in
// milliseconds.
func (rep *ScaleReport) WriteJSON(w io.Writer) error {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	type foot struct {
		RSS        float64 `json:"rss_bytes"`
		HeapInuse  float64 `json:"heap_inuse_bytes"`
		Goroutines float64 `json:"goroutines"`
	}
	type size struct {
		Leases        int     `json:"leases"`
		Idle          foot    `json:"idle"`
		Held          foot    `json:"held"`
		PerLease      foot    `json:"per_lease"`
		AcquiresPerS  float64 `json:"acquires_per_s"`
		Renewed       int64   `json:"renewed"`
		RenewalsPerS  float64 `json:"renewals_per_s"`
		Passes        int     `json:"passes"`
		LongestPassMS float64 `json:"longest_pass_ms"`
		Failed        int64   `json:"failed"`
	}
	out := struct {
		Started    time.Time `json:"started"`
		Servers    []string  `json:"servers"`
		Clients    int       `json:"clients"`
		TTLMS      float64   `json:"ttl_ms"`
		RenewingMS float64   `json:"renewing_ms"`
		RTTMS      float64   `json:"rtt_ms"`
		Sizes      []size    `json:"sizes"`
	}{rep.Started, rep.Servers, rep.Clients, ms(rep.TTL), ms(rep.Renewing), ms(rep.RTT), []size{}}
	for _, r := range rep.Results {
		p := r.PerLease()
		out.Sizes = append(out.Sizes, size{r.Leases, foot(r.Idle), foot(r.Held), foot(p), r.AcquireRate, r.Renewed, r.RenewRate,
			r.Passes, ms(r.LongestPass), r.Failed})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

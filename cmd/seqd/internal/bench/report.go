package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
)

// Result is one case: a kind with a number of clients on a lock layout.
type Result struct {
	Kind    string
	Clients int
	Locks   string // LocksOwn or LocksHot
	// Cycles counts the cycles started in the measured window; Elapsed runs
	// from its start until the last client finished its last cycle.
	Cycles    int64
	Elapsed   time.Duration
	PerSecond float64
	// Latency of one cycle (nearest rank): take the lock, let it go. On a
	// hot lock it includes the wait for the clients ahead.
	P50, P99, P999 time.Duration
	// VsRaw and VsGoZK are PerSecond over the raw and gozk cases' of the
	// same clients and locks (below 1: slower); 0 when that case did not
	// run.
	VsRaw, VsGoZK float64
	// Cost is what a cycle cost ZooKeeper, the daemon and the clients.
	Cost PerCycle
}

func newResult(kind string, g Group, lat [][]time.Duration, elapsed time.Duration) *Result {
	all := slices.Concat(lat...)
	slices.Sort(all)
	res := &Result{
		Kind:    kind,
		Clients: g.Clients,
		Locks:   g.Locks,
		Cycles:  int64(len(all)),
		Elapsed: elapsed,
		P50:     Percentile(all, 0.50),
		P99:     Percentile(all, 0.99),
		P999:    Percentile(all, 0.999),
	}
	if elapsed > 0 {
		res.PerSecond = float64(res.Cycles) / elapsed.Seconds()
	}
	return res
}

// Percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted, 0 for
// none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// What Report.Daemon says of a daemon the run started.
const (
	DaemonProcess   = "separate-process" // `seqd serve` as a process of its own, as deployed
	DaemonInProcess = "in-process"       // inside the bench's process, for profiling
)

// Report is a run's cases and what they ran against.
type Report struct {
	Started time.Time
	Servers []string
	// Daemon is DaemonProcess or DaemonInProcess, or a running daemon's
	// URL.
	Daemon string
	RTT    time.Duration // added by a delay proxy in front of ZooKeeper
	// RTTMeasured is what the proxy was seen to add (0: not measured).
	RTTMeasured time.Duration
	Root        string // the run's znode (removed at the end)
	Duration    time.Duration
	Warmup      time.Duration
	Clients     int
	Kinds       []string
	Results     []Result
}

// ratios fills in each result's throughput against the baselines of its
// clients and locks.
func (rep *Report) ratios() {
	find := func(kind string, r Result) float64 {
		for _, b := range rep.Results {
			if b.Kind == kind && b.Clients == r.Clients && b.Locks == r.Locks {
				return b.PerSecond
			}
		}
		return 0
	}
	for i, r := range rep.Results {
		if raw := find(KindRaw, r); raw > 0 {
			rep.Results[i].VsRaw = r.PerSecond / raw
		}
		if gozk := find(KindGoZK, r); gozk > 0 {
			rep.Results[i].VsGoZK = r.PerSecond / gozk
		}
	}
}

// WriteTable prints the report as a table, one line per case, and below
// it what a cycle of each case cost.
func (rep *Report) WriteTable(w io.Writer) error {
	rows := [][]string{{"case", "clients", "locks", "cycles/s", "p50", "p99", "p999", "vs raw", "vs gozk"}}
	for _, r := range rep.Results {
		rows = append(rows, []string{
			r.Kind, fmt.Sprint(r.Clients), r.Locks, rate(r.PerSecond),
			FormatLatency(r.P50), FormatLatency(r.P99), FormatLatency(r.P999),
			ratio(r.VsRaw), ratio(r.VsGoZK),
		})
	}
	var b strings.Builder
	writeRows(&b, rows)
	b.WriteString(rep.footnote())
	if rep.measuredCost() {
		b.WriteString("\n")
		rows = [][]string{{"per cycle", "clients", "locks", "zk requests", "zk cpu", "daemon cpu", "client cpu"}}
		for _, r := range rep.Results {
			c := r.Cost
			rows = append(rows, []string{r.Kind, fmt.Sprint(r.Clients), r.Locks, requests(c.ZKRequests),
				cpu(c.ZKCPU), cpu(c.DaemonCPU), cpu(c.ClientCPU)})
		}
		writeRows(&b, rows)
		b.WriteString(rep.costNote())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRows prints rows as aligned columns: words to the left, numbers to
// the right.
func writeRows(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			switch {
			case i == 0 || i == 2: // words: left-aligned
				b.WriteString(cell + pad)
			default:
				b.WriteString(pad + cell)
			}
			if i < len(row)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
	}
}

// measuredCost says whether any case has a cost to show.
func (rep *Report) measuredCost() bool {
	for _, r := range rep.Results {
		if r.Cost != (PerCycle{}) {
			return true
		}
	}
	return false
}

func (rep *Report) footnote() string {
	warm := ""
	if rep.Warmup > 0 {
		warm = " after " + termtext.Duration(rep.Warmup) + " of warm-up"
	}
	rtt := ""
	if rep.RTT > 0 {
		rtt = " behind a delay proxy adding " + termtext.Duration(rep.RTT) + " of round trip"
		if rep.RTTMeasured > 0 {
			rtt += " (" + FormatLatency(rep.RTTMeasured) + " measured)"
		}
	}
	daemon := ""
	if slices.Contains(rep.Kinds, KindHTTP) {
		switch {
		case rep.Daemon == DaemonProcess:
			daemon = "; http: the daemon as a separate `seqd serve` process, as deployed"
		case rep.Daemon == DaemonInProcess:
			daemon = "; http: the daemon inside the bench's own process (for profiling: a sidecar runs as a process of its own)"
		default:
			daemon = "; http: " + rep.Daemon + " daemon"
		}
	}
	return fmt.Sprintf("each case measured for %s%s; ZooKeeper %s%s%s\n"+
		"vs raw, vs gozk: cycles/s over those of raw create+delete and of go-zookeeper's zk.Lock with the same clients and locks\n",
		termtext.Duration(rep.Duration), warm, strings.Join(rep.Servers, ","), rtt, daemon)
}

func (rep *Report) costNote() string {
	note := "zk requests: packets ZooKeeper received per cycle (srvr), heartbeats included; cpu: user+system CPU per cycle of ZooKeeper, the daemon and the bench's process (the clients)"
	if rep.Daemon == DaemonInProcess {
		note += "; the daemon runs in the bench's process, so its CPU is in the client's"
	}
	return note + "\n"
}

// requests prints requests per cycle with two decimals, "-" when not
// counted.
func requests(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// cpu prints a CPU time per cycle, "-" when not measured.
func cpu(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return FormatLatency(d)
}

// ratio prints a ratio with two decimals, or two significant digits
// below 0.01 (never a 0.00 for a case that ran); "-" for none.
func ratio(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 0.01:
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// rate prints cycles per second, whole from 10 up, with two significant
// digits below (a case that ran never shows 0).
func rate(v float64) string {
	if v >= 10 || v == 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// FormatLatency prints d with three significant digits or so: 850µs,
// 1.23ms, 12.3ms, 1.25s.
func FormatLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// jsonResult is a Result for machines: durations in milliseconds, ratios
// absent when their baseline did not run.
type jsonResult struct {
	Case       string   `json:"case"`
	Clients    int      `json:"clients"`
	Locks      string   `json:"locks"`
	Cycles     int64    `json:"cycles"`
	Seconds    float64  `json:"seconds"`
	CyclesPerS float64  `json:"cycles_per_s"`
	P50ms      float64  `json:"p50_ms"`
	P99ms      float64  `json:"p99_ms"`
	P999ms     float64  `json:"p999_ms"`
	VsRaw      *float64 `json:"vs_raw,omitempty"`
	VsGoZK     *float64 `json:"vs_gozk,omitempty"`
	// What a cycle cost; absent when not measured.
	ZKRequests  *float64 `json:"zk_requests_per_cycle,omitempty"`
	ZKCPUms     *float64 `json:"zk_cpu_ms_per_cycle,omitempty"`
	DaemonCPUms *float64 `json:"daemon_cpu_ms_per_cycle,omitempty"`
	ClientCPUms *float64 `json:"client_cpu_ms_per_cycle,omitempty"`
}

type jsonReport struct {
	Started   time.Time    `json:"started"`
	ZK        []string     `json:"zk"`
	Daemon    string       `json:"daemon"`
	RTTms     float64      `json:"rtt_ms,omitempty"`
	RTTSeenms float64      `json:"rtt_measured_ms,omitempty"`
	Root      string       `json:"root"`
	DurationS float64      `json:"duration_s"`
	WarmupS   float64      `json:"warmup_s"`
	Clients   int          `json:"clients"`
	Cases     []string     `json:"cases"`
	Results   []jsonResult `json:"results"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func optional(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}

// MarshalJSON is the report's JSON form (see docs/cli.md).
func (rep *Report) MarshalJSON() ([]byte, error) {
	j := jsonReport{
		Started:   rep.Started.UTC(),
		ZK:        rep.Servers,
		Daemon:    rep.Daemon,
		RTTms:     ms(rep.RTT),
		RTTSeenms: ms(rep.RTTMeasured),
		Root:      rep.Root,
		DurationS: rep.Duration.Seconds(),
		WarmupS:   rep.Warmup.Seconds(),
		Clients:   rep.Clients,
		Cases:     rep.Kinds,
		Results:   []jsonResult{},
	}
	for _, r := range rep.Results {
		j.Results = append(j.Results, jsonResult{
			Case: r.Kind, Clients: r.Clients, Locks: r.Locks,
			Cycles: r.Cycles, Seconds: r.Elapsed.Seconds(), CyclesPerS: r.PerSecond,
			P50ms: ms(r.P50), P99ms: ms(r.P99), P999ms: ms(r.P999),
			VsRaw: optional(r.VsRaw), VsGoZK: optional(r.VsGoZK),
			ZKRequests: optional(r.Cost.ZKRequests), ZKCPUms: optional(ms(r.Cost.ZKCPU)),
			DaemonCPUms: optional(ms(r.Cost.DaemonCPU)), ClientCPUms: optional(ms(r.Cost.ClientCPU)),
		})
	}
	return json.Marshal(j)
}

// WriteJSON prints the report's JSON form, indented.
func (rep *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

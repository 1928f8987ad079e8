package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// Compare runs seqd bench and etcd's Mutex side by side: rounds of each,
// interleaved, so that the machine's load falls on both alike. Each round
// runs, for every client count, `seqd bench --dev` (its own throwaway
// ZooKeeper and a daemon as a process of its own; the daemon, zk.Lock and
// raw create+delete cases) and then the same groups on etcd.
type Compare struct {
	Seqd     string // the seqd binary
	Clients  []int
	Duration time.Duration
	Rounds   int
	RTT      time.Duration // a delay proxy in front of ZooKeeper and of etcd
	Progress io.Writer
}

// Cell is one group of clients, with every round's results of each case.
type Cell struct {
	Clients int                 `json:"clients"`
	Locks   string              `json:"locks"`
	Rounds  map[string][]Result `json:"rounds"` // by case: http, gozk, raw, etcd
}

// CompareReport is what Compare measured.
type CompareReport struct {
	Started     time.Time `json:"started"`
	RTTms       float64   `json:"rtt_ms,omitempty"`
	EtcdRTTms   float64   `json:"etcd_rtt_measured_ms,omitempty"`
	DurationS   float64   `json:"duration_s"`
	RoundsCount int       `json:"rounds"`
	Cells       []*Cell   `json:"cells"`
}

// seqdReport is the part of seqd bench's JSON report that Compare reads.
type seqdReport struct {
	Results []struct {
		Result
		ZKCPUms     *float64 `json:"zk_cpu_ms_per_cycle"`
		DaemonCPUms *float64 `json:"daemon_cpu_ms_per_cycle"`
	} `json:"results"`
}

// Run runs the comparison.
func (c Compare) Run(ctx context.Context, etcd *Etcd) (*CompareReport, error) {
	rep := &CompareReport{Started: time.Now(), RTTms: ms(c.RTT), DurationS: c.Duration.Seconds(), RoundsCount: c.Rounds}
	if etcd.RTTMeasured > 0 {
		rep.EtcdRTTms = ms(etcd.RTTMeasured)
	}
	cell := func(n int, locks string) *Cell {
		for _, x := range rep.Cells {
			if x.Clients == n && x.Locks == locks {
				return x
			}
		}
		x := &Cell{Clients: n, Locks: locks, Rounds: map[string][]Result{}}
		rep.Cells = append(rep.Cells, x)
		return x
	}
	for round := 1; round <= c.Rounds; round++ {
		for _, n := range c.Clients {
			fmt.Fprintf(c.Progress, "round %d of %d: seqd bench, %d clients\n", round, c.Rounds, n)
			sr, err := c.seqdBench(ctx, n)
			if err != nil {
				return rep, err
			}
			for _, r := range sr.Results {
				res := r.Result
				// The daemon's cost is ZooKeeper's and its own.
				if r.ZKCPUms != nil {
					v := *r.ZKCPUms
					if r.DaemonCPUms != nil {
						v += *r.DaemonCPUms
					}
					res.ServerCPUms = &v
				}
				x := cell(res.Clients, res.Locks)
				x.Rounds[res.Case] = append(x.Rounds[res.Case], res)
			}
			type group struct {
				clients int
				locks   string
			}
			groups := []group{{1, LocksOwn}, {n, LocksOwn}, {n, LocksHot}}
			if n == 1 {
				groups = groups[:1] // one client: own and hot are the same
			}
			for _, g := range groups {
				k, locks := g.clients, g.locks
				fmt.Fprintf(c.Progress, "round %d of %d: etcd Mutex, %d clients, %s locks\n", round, c.Rounds, k, locks)
				res, err := Run(ctx, Case{Endpoints: etcd.Endpoints, Clients: k, Locks: locks, Duration: c.Duration,
					Prefix: fmt.Sprintf("/etcdbench/r%d-%d-%s", round, k, locks), ServerPID: etcd.PID})
				if err != nil {
					return rep, err
				}
				x := cell(k, locks)
				x.Rounds["etcd"] = append(x.Rounds["etcd"], *res)
			}
		}
	}
	return rep, nil
}

// seqdBench runs one seqd bench on a throwaway ZooKeeper.
func (c Compare) seqdBench(ctx context.Context, n int) (*seqdReport, error) {
	args := []string{"bench", "--dev", "--json", "--cases", "raw,gozk,session,http",
		"--clients", strconv.Itoa(n), "--duration", c.Duration.String()}
	if c.RTT > 0 {
		args = append(args, "--rtt", c.RTT.String())
	}
	cmd := exec.CommandContext(ctx, c.Seqd, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, c.Progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %w", c.Seqd, args, err)
	}
	var rep seqdReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("seqd bench's report: %w", err)
	}
	return &rep, nil
}

// median of what f reads from each round; ok is false with no round.
func median(rs []Result, f func(Result) float64) (float64, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// perRound is the ratio a/b of each round that has both, sorted.
func perRound(a, b []Result, f func(Result) float64) []float64 {
	var out []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if d := f(b[i]); d > 0 {
			out = append(out, f(a[i])/d)
		}
	}
	slices.Sort(out)
	return out
}

func rate(r Result) float64 { return r.CyclesPerS }
func p50(r Result) float64  { return r.P50ms }
func p99(r Result) float64  { return r.P99ms }
func cpu(field func(Result) *float64) func(Result) float64 {
	return func(r Result) float64 {
		if v := field(r); v != nil {
			return *v
		}
		return 0
	}
}

// WriteTable prints the medians, and each ratio's median with the range
// of the rounds' own ratios.
func (rep *CompareReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	regime := "one machine"
	if rep.RTTms > 0 {
		regime = fmt.Sprintf("%.1fms RTT to ZooKeeper and to etcd", rep.RTTms)
	}
	fmt.Fprintf(w, "seqd against etcd's Mutex, %s: %d rounds of %v per case, medians (the rounds' own ratios in brackets)\n",
		regime, rep.RoundsCount, time.Duration(rep.DurationS*float64(time.Second)))
	fmt.Fprintln(tw, "clients\tlocks\tseqd/s\tetcd/s\tseqd/etcd\tzk.Lock/s\tseqd/zk.Lock\tsession/etcd\tp50 seqd\tp50 etcd\tp50 raw\tp99 seqd\tp99 etcd\t")
	for _, c := range rep.Cells {
		h, e, g, raw, ses := c.Rounds["http"], c.Rounds["etcd"], c.Rounds["gozk"], c.Rounds["raw"], c.Rounds["session"]
		col := func(rs []Result, f func(Result) float64, format string) string {
			if v, ok := median(rs, f); ok {
				return fmt.Sprintf(format, v)
			}
			return "—"
		}
		ratio := func(a, b []Result, f func(Result) float64) string {
			va, oka := median(a, f)
			vb, okb := median(b, f)
			if !oka || !okb || vb == 0 {
				return "—"
			}
			rs := perRound(a, b, f)
			return fmt.Sprintf("%.2f [%.2f–%.2f]", va/vb, rs[0], rs[len(rs)-1])
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Clients, c.Locks,
			col(h, rate, "%.0f"), col(e, rate, "%.0f"), ratio(h, e, rate),
			col(g, rate, "%.0f"), ratio(h, g, rate), ratio(ses, e, rate),
			col(h, p50, "%.2fms"), col(e, p50, "%.2fms"), col(raw, p50, "%.2fms"),
			col(h, p99, "%.1fms"), col(e, p99, "%.1fms"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCPU per cycle (ms): seqd's server side is ZooKeeper's and the daemon's; etcd's is etcd's; the clients' is the bench's process")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tlocks\tseqd server\tetcd server\tseqd clients\tetcd clients\t")
	server := cpu(func(r Result) *float64 { return r.ServerCPUms })
	client := cpu(func(r Result) *float64 { return r.ClientCPUms })
	for _, c := range rep.Cells {
		h, e := c.Rounds["http"], c.Rounds["etcd"]
		col := func(rs []Result, f func(Result) float64) string {
			if v, ok := median(rs, f); ok && v > 0 {
				return fmt.Sprintf("%.3f", v)
			}
			return "—"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", c.Clients, c.Locks, col(h, server), col(e, server), col(h, client), col(e, client))
	}
	return tw.Flush()
}

// WriteJSON prints every round's results.
func (rep *CompareReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

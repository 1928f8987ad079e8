package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// benchRow is one line of the bench's table.
type benchRow struct {
	kind, locks    string
	clients        int
	perSecond      float64
	p50, p99, p999 time.Duration
	vsRaw, vsGoZK  string
}

// parseBenchTable reads the table seqd bench prints: a header, one row per
// case, then notes (lines that do not have the row's nine fields).
func parseBenchTable(t *testing.T, out string) []benchRow {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if want := []string{"case", "clients", "locks", "cycles/s", "p50", "p99", "p999", "vs", "raw", "vs", "gozk"}; !slices.Equal(strings.Fields(lines[0]), want) {
		t.Fatalf("table header %q, want the fields %q; output:\n%s", lines[0], want, out)
	}
	var rows []benchRow
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 9 {
			break
		}
		var r benchRow
		var err error
		r.kind, r.locks, r.vsRaw, r.vsGoZK = f[0], f[2], f[7], f[8]
		if r.clients, err = strconv.Atoi(f[1]); err != nil {
			t.Fatalf("row %q: clients: %v", line, err)
		}
		if r.perSecond, err = strconv.ParseFloat(f[3], 64); err != nil {
			t.Fatalf("row %q: cycles/s: %v", line, err)
		}
		for i, d := range []*time.Duration{&r.p50, &r.p99, &r.p999} {
			if *d, err = time.ParseDuration(f[4+i]); err != nil {
				t.Fatalf("row %q: latency %q: %v", line, f[4+i], err)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// benchNodes lists what the bench may leave behind: /seqd-bench and its
// children.
func benchNodes(t *testing.T, conn *zk.Conn) []string {
	t.Helper()
	ch, _, err := conn.Children("/seqd-bench")
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("children of /seqd-bench: %v", err)
	}
	return append([]string{"/seqd-bench"}, ch...)
}

// A short run against a real ZooKeeper: the table has every case with
// cycles and ordered percentiles, the baselines' ratios are measured in the
// same run, the JSON form says the same, and the run removes its nodes.
func TestBenchTableAndJSON(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, zkc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"bench", "--zk", zkc.ConnectString(), "--duration", "300ms", "--clients", "2"}

	code, out, errs := runCLI(ctx, args...)
	if code != 0 {
		t.Fatalf("seqd bench: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rows := parseBenchTable(t, out)
	var got []string
	for _, r := range rows {
		got = append(got, r.kind+"/"+strconv.Itoa(r.clients)+"/"+r.locks)
		if r.perSecond <= 0 {
			t.Errorf("%s: %v cycles/s, want some", got[len(got)-1], r.perSecond)
		}
		if !(0 < r.p50 && r.p50 <= r.p99 && r.p99 <= r.p999) {
			t.Errorf("%s: p50 %v, p99 %v, p999 %v: want 0 < p50 ≤ p99 ≤ p999", got[len(got)-1], r.p50, r.p99, r.p999)
		}
		if r.kind == "raw" && r.vsRaw != "1.00" || r.kind == "gozk" && r.vsGoZK != "1.00" {
			t.Errorf("%s: vs raw %s, vs gozk %s: a baseline is 1.00 against itself", got[len(got)-1], r.vsRaw, r.vsGoZK)
		}
		for _, v := range []string{r.vsRaw, r.vsGoZK} {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f <= 0 {
				t.Errorf("%s: ratio %q, want a positive number", got[len(got)-1], v)
			}
		}
	}
	want := []string{
		"raw/1/own", "gozk/1/own", "zklock/1/own", "session/1/own", "http/1/own",
		"raw/2/own", "gozk/2/own", "zklock/2/own", "session/2/own", "http/2/own",
		"raw/2/hot", "gozk/2/hot", "zklock/2/hot", "session/2/hot", "http/2/hot",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cases %q, want %q; output:\n%s", got, want, out)
	}
	if !strings.Contains(out, "http: the daemon as a separate `seqd serve` process, as deployed") {
		t.Errorf("the table does not say the daemon ran as a process of its own:\n%s", out)
	}
	for _, w := range []string{"zklock, 2 clients, own locks: ", "http, 1 client, own lock: ", "raw, 2 clients, one hot lock: "} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr has no progress line %q:\n%s", w, errs)
		}
	}
	if left := benchNodes(t, conn); left != nil {
		t.Errorf("the run left %q in ZooKeeper", left)
	}

	code, out, errs = runCLI(ctx, append(args, "--json", "--cases", "zklock,raw")...)
	if code != 0 {
		t.Fatalf("seqd bench --json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		Started  time.Time `json:"started"`
		Warmup   float64   `json:"warmup_s"`
		ZK       []string  `json:"zk"`
		Daemon   string    `json:"daemon"`
		Root     string    `json:"root"`
		Duration float64   `json:"duration_s"`
		Clients  int       `json:"clients"`
		Cases    []string  `json:"cases"`
		Results  []struct {
			Case       string   `json:"case"`
			Clients    int      `json:"clients"`
			Locks      string   `json:"locks"`
			Cycles     int64    `json:"cycles"`
			Seconds    float64  `json:"seconds"`
			CyclesPerS float64  `json:"cycles_per_s"`
			P50        float64  `json:"p50_ms"`
			P99        float64  `json:"p99_ms"`
			P999       float64  `json:"p999_ms"`
			VsRaw      *float64 `json:"vs_raw"`
			VsGoZK     *float64 `json:"vs_gozk"`
			ZKRequests *float64 `json:"zk_requests_per_cycle"`
			ZKCPU      *float64 `json:"zk_cpu_ms_per_cycle"`
			DaemonCPU  *float64 `json:"daemon_cpu_ms_per_cycle"`
			ClientCPU  *float64 `json:"client_cpu_ms_per_cycle"`
		} `json:"results"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	if rep.Clients != 2 || rep.Duration != 0.3 || rep.Started.IsZero() || rep.Warmup < 0 || !slices.Equal(rep.Cases, []string{"raw", "zklock"}) || !strings.HasPrefix(rep.Root, "/seqd-bench/") || len(rep.ZK) != 1 {
		t.Errorf("report header %+v: want 2 clients, 0.3s, cases raw and zklock, a root under /seqd-bench, one server", rep)
	}
	got = nil
	for _, r := range rep.Results {
		what := r.Case + "/" + strconv.Itoa(r.Clients) + "/" + r.Locks
		got = append(got, what)
		if r.Cycles <= 0 || r.CyclesPerS <= 0 || r.Seconds <= 0 {
			t.Errorf("%s: %d cycles in %vs, %v/s: want some", what, r.Cycles, r.Seconds, r.CyclesPerS)
		}
		if !(0 < r.P50 && r.P50 <= r.P99 && r.P99 <= r.P999) {
			t.Errorf("%s: p50 %vms, p99 %vms, p999 %vms: want 0 < p50 ≤ p99 ≤ p999", what, r.P50, r.P99, r.P999)
		}
		if r.VsRaw == nil || *r.VsRaw <= 0 || r.VsGoZK != nil {
			t.Errorf("%s: vs_raw %v, vs_gozk %v: want a ratio against raw and none against gozk, which did not run", what, r.VsRaw, r.VsGoZK)
		}
		if r.ClientCPU == nil || r.ZKRequests != nil || r.ZKCPU != nil || r.DaemonCPU != nil {
			t.Errorf("%s: client cpu %v, zk requests %v, zk cpu %v, daemon cpu %v: want the client's CPU only (ZooKeeper's process and counters were not given, no daemon ran)",
				what, r.ClientCPU, r.ZKRequests, r.ZKCPU, r.DaemonCPU)
		}
	}
	if want := []string{"raw/1/own", "zklock/1/own", "raw/2/own", "zklock/2/own", "raw/2/hot", "zklock/2/hot"}; !slices.Equal(got, want) {
		t.Errorf("JSON cases %q, want %q", got, want)
	}
	if left := benchNodes(t, conn); left != nil {
		t.Errorf("the JSON run left %q in ZooKeeper", left)
	}
}

// Bad input is a usage error (64) with a sentence, and ZooKeeper is not
// touched.
func TestBenchBadInput(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, zkc)
	before, _, err := conn.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--clients", "0"}, "--clients 0 is out of range"},
		{[]string{"--clients", "-3"}, "--clients -3 is out of range"},
		{[]string{"--clients", "many"}, `--clients "many" is not valid: want a whole number`},
		{[]string{"--duration", "-1s"}, "--duration -1s is negative"},
		{[]string{"--duration", "0"}, "--duration must be more than zero"},
		{[]string{"--duration", "soon"}, `--duration "soon" is not valid`},
		{[]string{"--cases", "raw,paxos"}, `unknown case "paxos"`},
		{[]string{"--cases", ","}, `unknown case ""`},
		{[]string{"--addr", "127.0.0.1:7070"}, "is not the daemon's base URL"},
		{[]string{"--zk-acl", "creator"}, "--zk-acl creator needs --zk-auth-file"},
		{[]string{"extra"}, "bench takes no arguments"},
		{[]string{"--rtt", "1ms"}, "--rtt needs --dev"},
		{[]string{"--dev", "--rtt", "-1ms"}, "--rtt -1ms is negative"},
		{[]string{"--addr", "http://127.0.0.1:7070", "--in-process"}, "--in-process is for a daemon the bench starts"},
	} {
		args := append([]string{"bench", "--zk", zkc.ConnectString(), "--duration", "100ms"}, tc.args...)
		code, out, errs := runCLI(ctx, args...)
		if code != ExitUsage || out != "" || !strings.Contains(errs, tc.msg) {
			t.Errorf("seqd %s: exit %d, stdout %q, stderr %q; want 64, nothing on stdout and %q", strings.Join(args, " "), code, out, errs, tc.msg)
		}
	}
	after, _, err := conn.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Errorf("ZooKeeper's top nodes went from %q to %q: bad input must change nothing", before, after)
	}
}

// Ctrl-C in the middle of a case: exit 130, the cases measured so far
// printed, and the run's nodes removed.
func TestBenchInterrupted(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, zkc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runCLI(ctx, "bench", "--zk", zkc.ConnectString(), "--duration", "2s", "--clients", "2", "--cases", "raw,zklock")
		done <- result{code, out, errs}
	}()
	// Interrupt once the first case's nodes are there: the run is under way.
	zktest.Eventually(t, time.Minute, "the bench's nodes in ZooKeeper", func() bool { return benchNodes(t, conn) != nil })
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("seqd bench did not stop within a minute of its interruption")
	}
	if r.code != ExitInterrupted || !strings.Contains(r.errs, "bench interrupted") {
		t.Fatalf("interrupted bench: exit %d, stderr %q; want 130 and a sentence", r.code, r.errs)
	}
	if left := benchNodes(t, conn); left != nil {
		t.Errorf("the interrupted run left %q in ZooKeeper", left)
	}
}

// --addr: the http cases go through a running daemon, whose lock nodes the
// run removes from under --root afterwards.
func TestBenchRunningDaemon(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, zkc)
	const root = "/seqd-bench-daemon"
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errs := runCLI(ctx, "bench", "--zk", zkc.ConnectString(), "--addr", addr, "--root", root,
		"--cases", "http", "--duration", "300ms", "--clients", "2")
	if code != 0 {
		t.Fatalf("seqd bench --addr: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rows := parseBenchTable(t, out)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the 3 http cases:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r.kind != "http" || r.perSecond <= 0 || r.vsRaw != "-" || r.vsGoZK != "-" {
			t.Errorf("row %+v: want http cycles and no ratios (their baselines did not run)", r)
		}
	}
	if !strings.Contains(out, "http: "+addr+" daemon") {
		t.Errorf("the table does not name the daemon %s:\n%s", addr, out)
	}
	ch, _, err := conn.Children(root)
	if err != nil {
		t.Fatalf("children of the daemon's root: %v", err)
	}
	if slices.Contains(ch, "seqd-bench") {
		t.Errorf("the run left its lock nodes under %s: %q", root, ch)
	}
	if left := benchNodes(t, conn); left != nil {
		t.Errorf("the run left %q in ZooKeeper", left)
	}
}

// perCycleRow is one line of the bench's second table: what a cycle cost.
type perCycleRow struct {
	kind, locks                   string
	clients                       int
	requests                      float64 // 0: "-"
	zkCPU, daemonCPU, clientCPU   time.Duration
	daemonMeasured, zkCPUMeasured bool
}

// parsePerCycle reads the per-cycle table below the bench's first table.
func parsePerCycle(t *testing.T, out string) []perCycleRow {
	t.Helper()
	_, table, ok := strings.Cut(out, "\nper cycle ")
	if !ok {
		t.Fatalf("no per-cycle table in:\n%s", out)
	}
	var rows []perCycleRow
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 7 {
			break
		}
		r := perCycleRow{kind: f[0], locks: f[2]}
		var err error
		if r.clients, err = strconv.Atoi(f[1]); err != nil {
			t.Fatalf("row %q: clients: %v", line, err)
		}
		if f[3] != "-" {
			if r.requests, err = strconv.ParseFloat(f[3], 64); err != nil {
				t.Fatalf("row %q: requests: %v", line, err)
			}
		}
		for i, d := range []*time.Duration{&r.zkCPU, &r.daemonCPU, &r.clientCPU} {
			if f[4+i] == "-" {
				continue
			}
			if *d, err = time.ParseDuration(f[4+i]); err != nil {
				t.Fatalf("row %q: cpu %q: %v", line, f[4+i], err)
			}
		}
		r.zkCPUMeasured, r.daemonMeasured = f[4] != "-", f[5] != "-"
		rows = append(rows, r)
	}
	return rows
}

// --dev starts its own ZooKeeper and runs on it, with what each cycle cost
// ZooKeeper (its CPU and the requests it received), the daemon (a process
// of its own) and the clients.
func TestBenchDev(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errs := runCLI(ctx, "bench", "--dev", "--cases", "raw,http", "--clients", "1", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("seqd bench --dev: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rows := parseBenchTable(t, out)
	if len(rows) != 2 || rows[0].kind != "raw" || rows[1].kind != "http" || rows[1].clients != 1 {
		t.Fatalf("rows %+v, want raw and http with one client", rows)
	}
	if !strings.Contains(errs, "ZooKeeper (throwaway, standalone) on ") {
		t.Errorf("stderr does not say where ZooKeeper runs:\n%s", errs)
	}
	cost := parsePerCycle(t, out)
	if len(cost) != 2 {
		t.Fatalf("per-cycle rows %+v, want raw and http", cost)
	}
	// A raw cycle is a create and a delete: two requests, and a heartbeat
	// now and then.
	if raw := cost[0]; raw.kind != "raw" || raw.requests < 1.9 || raw.requests > 3 || !raw.zkCPUMeasured || raw.daemonMeasured || raw.clientCPU <= 0 {
		t.Errorf("raw per cycle %+v: want about 2 requests, ZooKeeper's and the client's CPU, no daemon's", raw)
	}
	if h := cost[1]; h.kind != "http" || h.requests < 2 || !h.zkCPUMeasured || !h.daemonMeasured || h.clientCPU <= 0 {
		t.Errorf("http per cycle %+v: want ZooKeeper requests, ZooKeeper's, the daemon's and the client's CPU", h)
	}
}

// --in-process runs the daemon inside the bench, and the report says so;
// --rtt puts a delay proxy between every client and ZooKeeper, which every
// cycle then waits for.
func TestBenchInProcessAndRTT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errs := runCLI(ctx, "bench", "--dev", "--in-process", "--rtt", "20ms", "--cases", "raw,http", "--clients", "1", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("seqd bench --dev --in-process --rtt 20ms: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rows := parseBenchTable(t, out)
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want raw and http", rows)
	}
	// A raw cycle is two round trips to ZooKeeper: at least 40ms.
	if rows[0].p50 < 40*time.Millisecond {
		t.Errorf("raw p50 %v behind a 20ms RTT: want at least two round trips", rows[0].p50)
	}
	for _, w := range []string{"http: the daemon inside the bench's own process (for profiling", "behind a delay proxy adding 20ms of round trip", "its CPU is in the client's"} {
		if !strings.Contains(out, w) {
			t.Errorf("the report does not say %q:\n%s", w, out)
		}
	}
	if cost := parsePerCycle(t, out); len(cost) != 2 || cost[1].daemonMeasured || cost[1].clientCPU <= 0 {
		t.Errorf("per cycle %+v: want no daemon CPU of its own for an in-process daemon", cost)
	}
}

// `make bench` builds the binary and prints its table; BENCH_FLAGS reach it.
func TestMakeBench(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "bench", "BENCH_FLAGS=--duration 50ms --clients 2 --cases raw,http")
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	rows := parseBenchTable(t, string(out))
	var got []string
	for _, r := range rows {
		got = append(got, r.kind+"/"+strconv.Itoa(r.clients)+"/"+r.locks)
	}
	if want := []string{"raw/1/own", "http/1/own", "raw/2/own", "http/2/own", "raw/2/hot", "http/2/hot"}; !slices.Equal(got, want) {
		t.Errorf("make bench printed the cases %q, want %q:\n%s", got, want, out)
	}
	if !strings.Contains(string(out), "http: the daemon as a separate `seqd serve` process, as deployed") {
		t.Errorf("the first table is not the separate daemon's:\n%s", out)
	}
	const label = "The daemon inside the bench's own process (for profiling; not as deployed):\n"
	_, below, ok := strings.Cut(string(out), label)
	if !ok {
		t.Fatalf("make bench printed no in-process figures below the others (%q):\n%s", label, out)
	}
	got = nil
	for _, r := range parseBenchTable(t, below) {
		got = append(got, r.kind+"/"+strconv.Itoa(r.clients)+"/"+r.locks)
	}
	if want := []string{"http/1/own", "http/2/own", "http/2/hot"}; !slices.Equal(got, want) || !strings.Contains(below, "the daemon inside the bench's own process") {
		t.Errorf("below the label, the cases %q, want %q run in process:\n%s", got, want, below)
	}
}

// A running daemon that refuses the bench, or is not there, exits as the
// client commands do: 77 for a 401, 69 when unreachable.
func TestBenchDaemonRefusesOrIsGone(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-bench-refuses", "--api-token-file", tokenFile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"bench", "--zk", zkc.ConnectString(), "--cases", "http", "--clients", "1", "--duration", "50ms", "--root", "/seqd-bench-refuses"}
	if code, _, errs := runCLI(ctx, append(base, "--addr", addr)...); code != ExitAuth || !strings.Contains(errs, "--api-token-file") {
		t.Errorf("bench without the daemon's token: exit %d, stderr %q; want 77 and a word on --api-token-file", code, errs)
	}
	if code, out, errs := runCLI(ctx, append(base, "--addr", addr, "--api-token-file", tokenFile)...); code != 0 || len(parseBenchTable(t, out)) != 1 {
		t.Errorf("bench with the daemon's token: exit %d, stdout %q, stderr %q; want 0 and one row", code, out, errs)
	}
	if code, _, errs := runCLI(ctx, append(base, "--addr", "http://127.0.0.1:1")...); code != ExitUnavailable {
		t.Errorf("bench against no daemon: exit %d, stderr %q; want 69", code, errs)
	}
}

// --latency measures the hand-over, loss-detection and crash-to-successor
// figures, each holder and daemon a process of its own. What is checked is
// order, not speed: each figure has its rounds, a successor is granted only
// after its predecessor was killed, and never within the lock-delay of a
// holder's unclean end. Sessions of 3s, not the bench's 2s: a loaded
// machine must not make the daemon's own session doubt itself mid-round.
func TestBenchLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, out, errs := runCLI(ctx, "bench", "--dev", "--latency", "--rounds", "1", "--session-timeout", "3s", "--json")
	if code != 0 {
		t.Fatalf("seqd bench --dev --latency: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		LockDelayMS float64 `json:"lock_delay_ms"`
		Figures     []struct {
			Name    string    `json:"name"`
			Rounds  int       `json:"rounds"`
			P50MS   float64   `json:"p50_ms"`
			P99MS   float64   `json:"p99_ms"`
			Samples []float64 `json:"samples_ms"`
		} `json:"figures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
		want := 1
		if strings.HasPrefix(f.Name, "handover") {
			want = 10
		}
		if f.Rounds != want || len(f.Samples) != want || f.P50MS > f.P99MS {
			t.Errorf("%s: %d rounds, %d samples, p50 %vms p99 %vms: want %d rounds and p50 ≤ p99", f.Name, f.Rounds, len(f.Samples), f.P50MS, f.P99MS, want)
		}
		for _, s := range f.Samples {
			switch {
			case strings.HasPrefix(f.Name, "crash") && s <= 0:
				t.Errorf("%s: a successor granted %vms after its predecessor was killed", f.Name, s)
			case f.Name == "crash-lock-delay" && s < rep.LockDelayMS:
				t.Errorf("%s: a successor granted %vms after the kill, within the lock-delay of %vms", f.Name, s, rep.LockDelayMS)
			}
		}
	}
	if want := []string{"handover", "handover-from-request", "loss-client", "loss-lock", "crash-lock", "crash-lock-delay", "crash-lease"}; !slices.Equal(names, want) {
		t.Errorf("figures %q, want %q", names, want)
	}
	if code, _, errs := runCLI(ctx, "bench", "--latency", "--clients", "4"); code != 64 || !strings.Contains(errs, "--clients does not go with --latency") {
		t.Errorf("--latency --clients: exit %d, %q; want 64 and a sentence", code, errs)
	}
}

// The scale figures: a daemon of its own given leases, all renewed, and
// what each costs. Held leases add no goroutine (the daemon's own, from
// its /metrics: beside the idle ones, about one per client connection);
// every renewal is answered 200.
func TestBenchScale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const leases, clients = 400, 8
	code, out, errs := runCLI(ctx, "bench", "--dev", "--scale", strconv.Itoa(leases), "--duration", "1s", "--clients", strconv.Itoa(clients), "--json")
	if code != 0 {
		t.Fatalf("seqd bench --dev --scale: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		Clients int `json:"clients"`
		Sizes   []struct {
			Leases int `json:"leases"`
			Idle   struct {
				RSS        float64 `json:"rss_bytes"`
				Goroutines float64 `json:"goroutines"`
			} `json:"idle"`
			Held struct {
				RSS        float64 `json:"rss_bytes"`
				Goroutines float64 `json:"goroutines"`
			} `json:"held"`
			Renewed int64 `json:"renewed"`
			Passes  int   `json:"passes"`
			Failed  int64 `json:"failed"`
		} `json:"sizes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if len(rep.Sizes) != 1 || rep.Clients != clients {
		t.Fatalf("report of %d sizes for %d clients, want 1 for %d:\n%s", len(rep.Sizes), rep.Clients, clients, out)
	}
	s := rep.Sizes[0]
	switch {
	case s.Leases != leases || s.Passes < 1 || s.Renewed != int64(s.Passes)*leases || s.Failed != 0:
		t.Errorf("%d leases, %d passes, %d renewed, %d failed: want %d leases each renewed every pass", s.Leases, s.Passes, s.Renewed, s.Failed, leases)
	case s.Idle.RSS <= 0 || s.Held.RSS <= 0 || s.Idle.Goroutines <= 0:
		t.Errorf("footprints idle %+v, held %+v: the daemon's /metrics were not read", s.Idle, s.Held)
	case s.Held.Goroutines-s.Idle.Goroutines > 2*clients+10:
		t.Errorf("%d held leases cost the daemon %.0f goroutines (%.0f idle, %.0f held): want none per lease",
			leases, s.Held.Goroutines-s.Idle.Goroutines, s.Idle.Goroutines, s.Held.Goroutines)
	}
	for _, args := range [][]string{{"--scale", "0"}, {"--scale", "10,x"}, {"--scale", "10", "--latency"}, {"--scale", "10", "--cases", "http"}} {
		if code, _, errs := runCLI(ctx, append([]string{"bench"}, args...)...); code != 64 || !strings.Contains(errs, "--scale") {
			t.Errorf("bench %q: exit %d, %q; want 64 and a sentence naming --scale", args, code, errs)
		}
	}
}

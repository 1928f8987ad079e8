package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// One standalone ZooKeeper for the package's tests.
var sharedZK zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	sharedZK.Close()
	os.Exit(code)
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 1000; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {0.999, 999 * time.Millisecond}, {1, time.Second}} {
		if got := Percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v of 1..1000ms = %v, want %v", tc.p, got, tc.want)
		}
	}
	few := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if p50, p99, p999 := Percentile(few, 0.5), Percentile(few, 0.99), Percentile(few, 0.999); p50 != 2*time.Millisecond || p99 != 3*time.Millisecond || p999 != 3*time.Millisecond {
		t.Errorf("three samples: p50 %v p99 %v p999 %v, want 2ms 3ms 3ms", p50, p99, p999)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("no samples: %v, want 0", got)
	}
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", Kinds},
		{"http,raw", []string{"raw", "http"}},
		{" zklock , gozk,zklock", []string{"gozk", "zklock"}},
	} {
		got, err := ParseKinds(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"paxos", "raw,", "RAW", "raw zklock"} {
		if _, err := ParseKinds(in); err == nil || !strings.Contains(err.Error(), "unknown case") {
			t.Errorf("ParseKinds(%q): error %v, want an unknown case", in, err)
		}
	}
}

func TestFormatLatency(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{850 * time.Microsecond, "850µs"},
		{1234 * time.Microsecond, "1.23ms"},
		{12345 * time.Microsecond, "12.3ms"},
		{1250 * time.Millisecond, "1.25s"},
	} {
		got := FormatLatency(tc.d)
		if got != tc.want {
			t.Errorf("FormatLatency(%v) = %q, want %q", tc.d, got, tc.want)
		}
		// The table's latencies read back as durations.
		if _, err := time.ParseDuration(got); err != nil {
			t.Errorf("%q does not parse as a duration: %v", got, err)
		}
	}
}

func TestGroupsAndDescribe(t *testing.T) {
	if got, want := Groups(1), []Group{{1, LocksOwn}}; !slices.Equal(got, want) {
		t.Errorf("Groups(1) = %v, want %v", got, want)
	}
	if got, want := Groups(16), []Group{{1, LocksOwn}, {16, LocksOwn}, {16, LocksHot}}; !slices.Equal(got, want) {
		t.Errorf("Groups(16) = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		kind string
		g    Group
		want string
	}{
		{"zklock", Group{16, LocksOwn}, "zklock, 16 clients, own locks"},
		{"raw", Group{1, LocksOwn}, "raw, 1 client, own lock"},
		{"http", Group{4, LocksHot}, "http, 4 clients, one hot lock"},
	} {
		if got := describe(tc.kind, tc.g); got != tc.want {
			t.Errorf("describe(%s, %v) = %q, want %q", tc.kind, tc.g, got, tc.want)
		}
	}
}

// The ratios compare cases of the same clients and locks only, and are
// absent when the baseline did not run.
func TestRatiosAndTable(t *testing.T) {
	rep := &Report{Duration: time.Second, Servers: []string{"zk:2181"}, Daemon: "in-process", Results: []Result{
		{Kind: KindRaw, Clients: 1, Locks: LocksOwn, PerSecond: 200, P50: time.Millisecond, P99: 2 * time.Millisecond, P999: 3 * time.Millisecond},
		{Kind: KindZklock, Clients: 1, Locks: LocksOwn, PerSecond: 100, P50: 2 * time.Millisecond, P99: 3 * time.Millisecond, P999: 4 * time.Millisecond},
		{Kind: KindZklock, Clients: 4, Locks: LocksHot, PerSecond: 50, P50: 20 * time.Millisecond, P99: 30 * time.Millisecond, P999: 40 * time.Millisecond},
	}}
	rep.ratios()
	if r := rep.Results[1]; r.VsRaw != 0.5 || r.VsGoZK != 0 {
		t.Errorf("zklock 1 own: vs raw %v, vs gozk %v; want 0.5 and none", r.VsRaw, r.VsGoZK)
	}
	if r := rep.Results[2]; r.VsRaw != 0 {
		t.Errorf("zklock 4 hot: vs raw %v, want none (raw ran with 1 client only)", r.VsRaw)
	}
	for _, tc := range []struct {
		got, want string
	}{
		{ratio(0.5), "0.50"}, {ratio(0.0042), "0.0042"}, {ratio(0), "-"},
		{rate(1234.4), "1234"}, {rate(3.14159), "3.1"}, {rate(0.25), "0.25"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if want := []string{"zklock", "1", "own", "100", "2.00ms", "3.00ms", "4.00ms", "0.50", "-"}; !slices.Equal(strings.Fields(lines[2]), want) {
		t.Errorf("row %q, want the fields %q; table:\n%s", lines[2], want, b.String())
	}
	if len(lines[0]) != len(lines[1]) || len(lines[1]) != len(lines[3]) {
		t.Errorf("the table's columns are not aligned:\n%s", b.String())
	}
}

// zkConn is the test's own connection, to look at what a run leaves.
func zkConn(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	r := &runner{cfg: Config{Servers: servers}.withDefaults()}
	conn, err := r.connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func exists(t *testing.T, conn *zk.Conn, p string) bool {
	t.Helper()
	ok, _, err := conn.Exists(p)
	if err != nil {
		t.Fatalf("exists %s: %v", p, err)
	}
	return ok
}

// A run with a digest identity and the creator ACL, as `seqd bench
// --zk-auth-file` makes it: every case measures cycles with ordered
// percentiles, and the run removes its nodes, its base too.
func TestRunWithDigestAuth(t *testing.T) {
	servers := sharedZK.Get(t).Servers()
	conn := zkConn(t, servers)
	base := "/bench-test-auth"
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Servers:   servers,
		Auth:      &zklock.DigestAuth{User: "bench", Password: "secret"},
		ACL:       zklock.ACLCreator,
		Clients:   2,
		Duration:  200 * time.Millisecond,
		Base:      base,
		Progress:  &progress,
		InProcess: true,
	})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	if len(rep.Results) != 15 {
		t.Fatalf("%d results, want 5 kinds × 3 groups", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Cycles < 1 || r.PerSecond <= 0 || !(0 < r.P50 && r.P50 <= r.P99 && r.P99 <= r.P999) {
			t.Errorf("%s: %d cycles, %v/s, p50 %v p99 %v p999 %v", describe(r.Kind, Group{r.Clients, r.Locks}), r.Cycles, r.PerSecond, r.P50, r.P99, r.P999)
		}
		if r.VsRaw <= 0 || r.VsGoZK <= 0 {
			t.Errorf("%s: vs raw %v, vs gozk %v: both baselines ran", describe(r.Kind, Group{r.Clients, r.Locks}), r.VsRaw, r.VsGoZK)
		}
	}
	if n := strings.Count(progress.String(), "\n"); n != 15 {
		t.Errorf("%d progress lines, want one per case:\n%s", n, progress.String())
	}
	if exists(t, conn, rep.Root) || exists(t, conn, base) {
		t.Errorf("the run left %s behind", base)
	}
	b, err := json.Marshal(rep)
	if err != nil || !json.Valid(b) {
		t.Errorf("the report's JSON: %v", err)
	}
}

// A case that fails says which, and the run stops there with the cases
// measured before it.
func TestRunFailure(t *testing.T) {
	servers := sharedZK.Get(t).Servers()
	conn := zkConn(t, servers)
	// A base only another identity may create under.
	base := "/bench-test-locked"
	if err := conn.AddAuth("digest", []byte("owner:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(base, nil, 0, zk.DigestACL(zk.PermAll, "owner", "pw")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Delete(base, -1) })
	rep, err := Run(context.Background(), Config{Servers: servers, Kinds: []string{KindRaw}, Clients: 1, Duration: 50 * time.Millisecond, Base: base})
	if err == nil || !strings.Contains(err.Error(), "raw, 1 client, own lock: ") || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Run under a base it may not write: %v; want the case's error, not unavailable", err)
	}
	if rep == nil || len(rep.Results) != 0 {
		t.Errorf("report %+v, want one with no results", rep)
	}
}

// No ZooKeeper: the error is ErrUnavailable, within the connect timeout.
func TestRunUnavailable(t *testing.T) {
	_, err := Run(context.Background(), Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: 500 * time.Millisecond, Duration: 50 * time.Millisecond, InProcess: true})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Run with no ZooKeeper: %v, want ErrUnavailable", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Servers: []string{"x:1"}, Clients: -1},
		{Servers: []string{"x:1"}, Duration: -time.Second},
		{Servers: []string{"x:1"}, Kinds: []string{"paxos"}},
		{Servers: []string{"x:1"}, Base: "relative"},
		{Servers: []string{"x:1"}, Kinds: []string{KindHTTP}}, // no way to run the daemon
		{},
	} {
		if _, err := Run(context.Background(), cfg); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Run(%+v): %v, want a configuration error", cfg, err)
		}
	}
}

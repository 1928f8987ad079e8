package sequencer_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/testenv/zktest"
)

// metricActivity drives every counter the service owns through HTTP: a
// grant, a renewal, a release, a try that finds the lock held, a stale
// renew, release and check, a valid check, a release of a lease already
// released.
func metricActivity(t testing.TB, d *daemon, name string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	a, err := d.client.Acquire(ctx, name, "A", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.Renew(ctx, name, a.LeaseID, a.Token, 0); err != nil {
		t.Fatal(err)
	}
	_, err = d.client.Acquire(ctx, name, "B", 10*time.Second, 0)
	wantConflict(t, err, CodeHeld, a.Token)
	if err := d.client.Release(ctx, name, a.LeaseID, a.Token); err != nil {
		t.Fatal(err)
	}
	b, err := d.client.Acquire(ctx, name, "B", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantStaleEverywhere(t, ctx, d.client, a, b.Token)
	if res, err := d.client.Check(ctx, name, b.Token); err != nil || !res.Valid {
		t.Fatalf("check of the holder's token = %+v, %v; want valid", res, err)
	}
	if err := d.client.Release(ctx, name, b.LeaseID, b.Token); err != nil {
		t.Fatal(err)
	}
	err = d.client.Release(ctx, name, b.LeaseID, b.Token)
	wantConflict(t, err, CodeLost, 0)
}

// Every series the daemon exports passes client_golang's linter (naming,
// units, _total on counters, help text) once it has series to show.
func TestMetricsLint(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	metricActivity(t, d, "lint/lock")

	// The activity must have produced the series, or the lint proves little.
	wantCounters(t, d.reg, []counterWant{
		{"seqd_grants_total", map[string]string{"lock": "lint/lock"}, 2},
		{"seqd_renewals_total", map[string]string{"lock": "lint/lock"}, 1},
		{"seqd_releases_total", map[string]string{"lock": "lint/lock", "reason": "released"}, 2},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": "lint/lock", "source": "renew"}, 1},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": "lint/lock", "source": "release"}, 1},
		{"seqd_stale_tokens_rejected_total", map[string]string{"lock": "lint/lock", "source": "check"}, 1},
	})
	problems, err := testutil.GatherAndLint(d.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	// Every metric the daemon defines is there (the vectors once they have a
	// child).
	for _, name := range []string{
		"seqd_grants_total", "seqd_renewals_total", "seqd_releases_total",
		"seqd_stale_tokens_rejected_total", "seqd_locks_held", "seqd_lock_waiters",
		"seqd_acquire_duration_seconds", "seqd_zk_connected",
		"seqd_zk_session_expirations_total", "seqd_build_info",
	} {
		if !got[name] {
			t.Errorf("metric %s not exported", name)
		}
	}
}

const (
	metricReleasesHead = `# HELP seqd_releases_total Leases ended, by reason: released by the holder, expired (TTL passed), lost (session or contender gone) or broken (by an operator).
# TYPE seqd_releases_total counter
`
	metricStaleHead = `# HELP seqd_stale_tokens_rejected_total Operations refused because they carried a token below the current one.
# TYPE seqd_stale_tokens_rejected_total counter
`
	metricGrantsHead = `# HELP seqd_grants_total Lock grants, each with a new and higher fencing token.
# TYPE seqd_grants_total counter
`
)

// A scripted sequence on the injected clock, and the exact series it must
// leave: every stale rejection counted once with its source, every end of
// a lease once with its reason, and nothing counted for the refusals that
// are not stale (a token nobody holds, a lease already released).
func TestMetricsCompareScripted(t *testing.T) {
	zkc := sharedZK.Get(t)
	clk := newFakeClock()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk, timeout: 30 * time.Second})
	ctx := ctxT(t, 60*time.Second)
	const a, b = "cmp/a", "cmp/b"

	a1, err := d.svc.Acquire(ctx, a, "A", 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.svc.Release(ctx, a, a1.LeaseID, a1.Token); err != nil { // released{a}
		t.Fatal(err)
	}
	a2, err := d.svc.Acquire(ctx, a, "B", 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.svc.Renew(ctx, a, a1.LeaseID, a1.Token, 0); !errors.Is(err, fence.ErrStaleToken) { // renew{a}
		t.Fatalf("renew with the old token = %v, want stale", err)
	}
	if err := d.svc.Release(ctx, a, a1.LeaseID, a1.Token); !errors.Is(err, fence.ErrStaleToken) { // release{a}
		t.Fatalf("release with the old token = %v, want stale", err)
	}
	for range 2 { // check{a} twice
		if _, err := d.svc.Check(ctx, a, a1.Token); !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("check of the old token = %v, want stale", err)
		}
	}
	if _, err := d.svc.Check(ctx, a, a2.Token); err != nil {
		t.Fatalf("check of the holder's token = %v", err)
	}
	clk.Advance(3 * time.Second) // a2's TTL passes: expired{a}
	zktest.Eventually(t, 30*time.Second, "the expiry to be counted", func() bool {
		return counter(t, d.reg, "seqd_releases_total", map[string]string{"lock": a, "reason": "expired"}) == 1
	})
	// Nobody holds a now: its last token is not stale, only not held.
	if _, err := d.svc.Check(ctx, a, a2.Token); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("check of the expired token = %v, want not held", err)
	}

	b1, err := d.svc.Acquire(ctx, b, "C", 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.svc.Release(ctx, b, b1.LeaseID, b1.Token); err != nil { // released{b}
		t.Fatal(err)
	}
	if err := d.svc.Release(ctx, b, b1.LeaseID, b1.Token); !errors.Is(err, ErrLost) { // not counted
		t.Fatalf("second release = %v, want lost", err)
	}

	want := metricReleasesHead + `seqd_releases_total{lock="cmp/a",reason="expired"} 1
seqd_releases_total{lock="cmp/a",reason="released"} 1
seqd_releases_total{lock="cmp/b",reason="released"} 1
` + metricStaleHead + `seqd_stale_tokens_rejected_total{lock="cmp/a",source="check"} 2
seqd_stale_tokens_rejected_total{lock="cmp/a",source="release"} 1
seqd_stale_tokens_rejected_total{lock="cmp/a",source="renew"} 1
`
	if err := testutil.GatherAndCompare(d.reg, strings.NewReader(want),
		"seqd_releases_total", "seqd_stale_tokens_rejected_total"); err != nil {
		t.Fatal(err)
	}
}

// Past MaxLockLabels distinct names, further names share lock="_other";
// names seen before the cap keep their own series.
func TestMetricsLockLabelCap(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), mopts: metrics.Options{MaxLockLabels: 2}})
	ctx := ctxT(t, 30*time.Second)
	for _, name := range []string{"cap/1", "cap/2", "cap/3", "cap/4", "cap/1"} {
		l, err := d.client.Acquire(ctx, name, "A", 5*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.client.Release(ctx, name, l.LeaseID, l.Token); err != nil {
			t.Fatal(err)
		}
	}
	want := metricGrantsHead + `seqd_grants_total{lock="_other"} 2
seqd_grants_total{lock="cap/1"} 2
seqd_grants_total{lock="cap/2"} 1
` + metricReleasesHead + `seqd_releases_total{lock="_other",reason="released"} 2
seqd_releases_total{lock="cap/1",reason="released"} 2
seqd_releases_total{lock="cap/2",reason="released"} 1
`
	if err := testutil.GatherAndCompare(d.reg, strings.NewReader(want),
		"seqd_grants_total", "seqd_releases_total"); err != nil {
		t.Fatal(err)
	}
	// The status of a lock past the cap still names it: only the label is
	// folded, not the API.
	if st, err := d.client.Status(ctx, "cap/4"); err != nil || st.Name != "cap/4" {
		t.Fatalf("status of cap/4 = %+v, %v", st, err)
	}
}

// promtool, as CI runs it, on a live /metrics body fetched over HTTP from a
// daemon with the Go and process collectors. A missing promtool fails the
// test: `make test` installs it (Debian package prometheus).
func TestMetricsPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (install Debian's prometheus package; make deps does): %v", err)
	}
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), reg: metrics.NewRegistry()})
	metricActivity(t, d, "promtool/lock")

	resp, err := http.Get(d.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200:\n%s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the text format", ct)
	}
	for _, s := range []string{
		`seqd_grants_total{lock="promtool/lock"} 2`,
		`seqd_stale_tokens_rejected_total{lock="promtool/lock",source="check"} 1`,
		`seqd_zk_connected 1`,
		"seqd_build_info{",
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("/metrics lacks %q", s)
		}
	}

	ctx := ctxT(t, 30*time.Second)
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Logf("promtool check metrics:\n%s", out)
	}
	if err != nil {
		t.Fatalf("promtool check metrics: %v (body %d bytes):\n%s", err, len(body), out)
	}
	// The seqd series lint clean under client_golang's linter as well.
	problems, err := testutil.GatherAndLint(d.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "seqd_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		} else {
			t.Logf("lint (not ours): %s: %s", p.Metric, p.Text)
		}
	}
}

package metrics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// A *Metrics is what a seqd session reports to.
var _ zklock.Observer = (*metrics.Metrics)(nil)

// The events a zklock session reports land on the seqd_* series.
func TestObserverEvents(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.Options{})
	var obs zklock.Observer = m

	obs.Waiting("a", 1)
	obs.Waiting("a", 1)
	obs.Waiting("a", -1)
	obs.Granted("a", 20*time.Millisecond)
	obs.Granted("b", 2*time.Second)
	obs.GrantEnded("a", zklock.ErrReleased)
	obs.TokenRegression("b")
	obs.Connected(true)
	obs.Connected(false)
	obs.Connected(true)
	obs.SessionExpired()

	want := `
# HELP seqd_grants_total Lock grants, each with a new and higher fencing token.
# TYPE seqd_grants_total counter
seqd_grants_total{lock="a"} 1
seqd_grants_total{lock="b"} 1
# HELP seqd_lock_waiters Acquire calls currently waiting for a lock.
# TYPE seqd_lock_waiters gauge
seqd_lock_waiters 1
# HELP seqd_locks_held Locks currently held through this process.
# TYPE seqd_locks_held gauge
seqd_locks_held 1
# HELP seqd_token_regressions_total Tokens from ZooKeeper not above the last one issued for the lock (e.g. ZooKeeper restored from an old snapshot); refused, never handed out.
# TYPE seqd_token_regressions_total counter
seqd_token_regressions_total{lock="b"} 1
# HELP seqd_zk_connected 1 while the ZooKeeper session is connected, else 0.
# TYPE seqd_zk_connected gauge
seqd_zk_connected 1
# HELP seqd_zk_session_expirations_total ZooKeeper sessions that expired; every lock they held was lost.
# TYPE seqd_zk_session_expirations_total counter
seqd_zk_session_expirations_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"seqd_grants_total", "seqd_lock_waiters", "seqd_locks_held", "seqd_token_regressions_total",
		"seqd_zk_connected", "seqd_zk_session_expirations_total"); err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(reg, "seqd_acquire_duration_seconds"); got != 1 {
		t.Errorf("seqd_acquire_duration_seconds series = %d, want 1", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "seqd_acquire_duration_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != 2.02 {
			t.Errorf("acquire durations: count %d sum %v, want 2 and 2.02", h.GetSampleCount(), h.GetSampleSum())
		}
	}
}

// A nil *Metrics records nothing and does not panic, so that it can be
// handed to a session as its observer when metrics are off.
func TestNilObserver(t *testing.T) {
	var m *metrics.Metrics
	var obs zklock.Observer = m
	obs.Waiting("a", 1)
	obs.Granted("a", time.Second)
	obs.GrantEnded("a", errors.New("lost"))
	obs.TokenRegression("a")
	obs.Connected(true)
	obs.SessionExpired()
}

// Package metrics holds every Prometheus collector seqd exports, built on an
// injected prometheus.Registerer. It has no global state: each daemon, test or
// library user makes its own *Metrics. A nil *Metrics is valid and records
// nothing, so library users that do not want metrics pass nil.
//
// The lock label is bounded: at most Options.MaxLockLabels names have series
// of their own at a time; a name idle for LabelIdle gives its place to a new
// one, and names beyond that are counted under lock="_other", so that a
// client inventing names cannot blow up the series count.
package metrics

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// OtherLock is the lock label value used once the label cap is reached.
const OtherLock = "_other"

// DefaultMaxLockLabels is the default cap on distinct lock label values.
const DefaultMaxLockLabels = 1000

// Release reasons, the values of the reason label of seqd_releases_total.
const (
	ReasonReleased = "released"
	ReasonExpired  = "expired"
	ReasonLost     = "lost"
	ReasonBroken   = "broken" // by an operator
)

// Sources of stale-token rejections, the values of the source label.
const (
	SourceRenew   = "renew"
	SourceRelease = "release"
	SourceCheck   = "check"
	SourceFence   = "fence"
)

// Options tunes New.
type Options struct {
	// MaxLockLabels caps the distinct values of the lock label, and of the
	// election label in a set of its own (see
	// LabelIdle for how names come and go); 0 means DefaultMaxLockLabels,
	// and a negative value labels no lock: every one is counted as
	// OtherLock, for deployments where lock names must not leave the
	// daemon.
	MaxLockLabels int
	// Version is reported by seqd_build_info; empty means the module version
	// from the build info, or "devel".
	Version string
}

// Metrics is the set of seqd collectors. Methods are safe for concurrent use
// and are no-ops on a nil receiver.
type Metrics struct {
	grants            *prometheus.CounterVec
	renewals          *prometheus.CounterVec
	releases          *prometheus.CounterVec
	staleRejected     *prometheus.CounterVec
	regressions       *prometheus.CounterVec
	overtaken         *prometheus.CounterVec
	blocked           *prometheus.CounterVec
	locksHeld         prometheus.Gauge
	lockWaiters       prometheus.Gauge
	acquireDuration   prometheus.Histogram
	lockWait          *prometheus.HistogramVec
	lockHold          *prometheus.HistogramVec
	zkConnected       prometheus.Gauge
	sessionExpiration prometheus.Counter
	auditFailures     *prometheus.CounterVec
	requestDuration   *prometheus.HistogramVec
	requestObservers  sync.Map // verb → its series of requestDuration: a lookup saved per request

	labels *labelSet
	elections
	ids *identities
}

// New builds the collectors and registers them on reg. It panics if reg
// already holds collectors of the same names (a programming error, as with
// promauto).
func New(reg prometheus.Registerer, opts Options) *Metrics {
	if opts.MaxLockLabels == 0 {
		opts.MaxLockLabels = DefaultMaxLockLabels
	}
	m := &Metrics{
		grants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_grants_total",
			Help: "Lock grants, each with a new and higher fencing token.",
		}, []string{"lock"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_renewals_total",
			Help: "Lease renewals (the token is kept).",
		}, []string{"lock"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_releases_total",
			Help: "Leases ended, by reason: released by the holder, expired (TTL passed), lost (session or contender gone) or broken (by an operator).",
		}, []string{"lock", "reason"}),
		staleRejected: newStaleRejected(),
		regressions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_token_regressions_total",
			Help: "Tokens from ZooKeeper not above the last one issued for the lock (e.g. ZooKeeper restored from an old snapshot); refused, never handed out.",
		}, []string{"lock"}),
		overtaken: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_grants_overtaken_total",
			Help: "Grants declared lost because a contender that sorts below the holder's appeared under the held lock (a node planted by another ZooKeeper client).",
		}, []string{"lock"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_locks_blocked_total",
			Help: "Locks found blocked by a contender-shaped node that no session owns (not ephemeral), counted once per such node.",
		}, []string{"lock"}),
		locksHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_locks_held",
			Help: "Locks currently held through this process.",
		}),
		lockWaiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_lock_waiters",
			Help: "Acquire calls currently waiting for a lock.",
		}),
		acquireDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seqd_acquire_duration_seconds",
			Help:    "Time from the start of an acquire to its grant.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seqd_lock_wait_seconds",
			Help:    "Time from the start of an acquire to its grant, per lock (semaphores count under their names).",
			Buckets: waitBuckets,
		}, []string{"lock"}),
		lockHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seqd_lock_hold_seconds",
			Help:    "Time from a grant to its end (released, expired, lost or broken), per lock (semaphores count under their names).",
			Buckets: holdBuckets,
		}, []string{"lock"}),
		zkConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_zk_connected",
			Help: "1 while the ZooKeeper session is connected, else 0.",
		}),
		sessionExpiration: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqd_zk_session_expirations_total",
			Help: "ZooKeeper sessions that expired; every lock they held was lost.",
		}),
		auditFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_audit_failures_total",
			Help: "Audit log lines that could not be written (or, for a break, synced), per event; a break whose line fails is refused.",
		}, []string{"event"}),
		requestDuration: newRequestDuration(),
	}
	m.labels = newLabelSet("lock", opts.MaxLockLabels, m.grants, m.renewals, m.releases, m.staleRejected, m.regressions, m.overtaken, m.blocked, m.lockWait, m.lockHold)
	reg.MustRegister(m.grants, m.renewals, m.releases, m.staleRejected, m.regressions, m.overtaken, m.blocked,
		m.lockWait, m.lockHold, m.locksHeld, m.lockWaiters, m.acquireDuration, m.zkConnected, m.sessionExpiration, m.auditFailures, m.requestDuration, newBuildInfo(opts.Version))
	m.elections = newElections(reg, opts.MaxLockLabels)
	m.ids = newIdentities(reg)
	return m
}

// The buckets of the per-lock histograms: few, since each lock label has a
// series per bucket. Waits run from a round trip to minutes; holds from a
// round trip to an hour (a lease's longest TTL, renewed or not).
var (
	waitBuckets = []float64{.005, .025, .1, .5, 2.5, 10, 60, 300}
	holdBuckets = []float64{.01, .1, 1, 10, 60, 300, 1800, 3600}
)

// newStaleRejected is seqd_stale_tokens_rejected_total, shared by the daemon's
// collectors and the store's, which count it with source="fence".
func newStaleRejected() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seqd_stale_tokens_rejected_total",
		Help: "Operations refused because they carried a token below the current one.",
	}, []string{"lock", "source"})
}

// newBuildInfo is seqd_build_info, set to 1 for this binary.
func newBuildInfo(v string) prometheus.Collector {
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "seqd_build_info",
		Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version(v), runtime.Version()).Set(1)
	return buildInfo
}

// NewRegistry returns a fresh registry with the Go runtime and process
// collectors registered explicitly (there is no global registry in seqd).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func version(v string) string {
	if v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Renewal counts a lease renewal.
func (m *Metrics) Renewal(lock string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.renewals.WithLabelValues(l).Inc() })
}

// Release counts the end of a lease with one of the Reason* values.
func (m *Metrics) Release(lock, reason string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.releases.WithLabelValues(l, reason).Inc() })
}

// StaleRejected counts a refused stale token with one of the Source* values.
func (m *Metrics) StaleRejected(lock, source string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.staleRejected.WithLabelValues(l, source).Inc() })
}

// TokenRegression counts a token refused by the regression guard.
func (m *Metrics) TokenRegression(lock string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.regressions.WithLabelValues(l).Inc() })
}

// The methods below implement zklock.Observer (structurally: metrics does
// not import zklock), so that a *Metrics given as a session's observer
// records its events under the seqd_* names.

// Waiting moves seqd_lock_waiters by delta.
func (m *Metrics) Waiting(_ string, delta int) {
	if m == nil {
		return
	}
	m.lockWaiters.Add(float64(delta))
}

// Granted counts a grant of lock in seqd_grants_total, adds it to
// seqd_locks_held and observes wait in seqd_acquire_duration_seconds and
// seqd_lock_wait_seconds.
func (m *Metrics) Granted(lock string, wait time.Duration) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.grants.WithLabelValues(l).Inc() })
	m.locksHeld.Inc()
	m.acquireDuration.Observe(wait.Seconds())
	m.labels.with(lock, func(l string) { m.lockWait.WithLabelValues(l).Observe(wait.Seconds()) })
}

// Held observes in seqd_lock_hold_seconds how long a grant of lock was
// held (zklock.HoldObserver).
func (m *Metrics) Held(lock string, held time.Duration) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.lockHold.WithLabelValues(l).Observe(held.Seconds()) })
}

// GrantEnded takes an ended grant, released or lost, off seqd_locks_held.
func (m *Metrics) GrantEnded(string, error) {
	if m == nil {
		return
	}
	m.locksHeld.Dec()
}

// Connected sets seqd_zk_connected to 1 or 0.
func (m *Metrics) Connected(up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.zkConnected.Set(v)
}

// Overtaken counts in seqd_grants_overtaken_total a grant lost to a lower
// contender that appeared under the held lock.
func (m *Metrics) Overtaken(lock string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.overtaken.WithLabelValues(l).Inc() })
}

// Blocked counts in seqd_locks_blocked_total a lock found blocked by a
// contender-shaped node that is not ephemeral.
func (m *Metrics) Blocked(lock string) {
	if m == nil {
		return
	}
	m.labels.with(lock, func(l string) { m.blocked.WithLabelValues(l).Inc() })
}

// AuditFailed counts an audit line of event that could not be recorded.
func (m *Metrics) AuditFailed(event string) {
	if m == nil {
		return
	}
	m.auditFailures.WithLabelValues(event).Inc()
}

// SessionExpired counts an expired ZooKeeper session.
func (m *Metrics) SessionExpired() {
	if m == nil {
		return
	}
	m.sessionExpiration.Inc()
}

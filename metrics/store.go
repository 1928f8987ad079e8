package metrics

import "github.com/prometheus/client_golang/prometheus"

// Store operation results, the values of the result label of
// seqd_store_operations_total.
const (
	StoreOK          = "ok"
	StoreStale       = "stale_token"
	StoreBadRequest  = "bad_request"
	StoreNotFound    = "not_found"
	StoreError       = "error"
	StoreUnavailable = "unavailable"
	StoreForbidden   = "forbidden" // refused: not a sequencer seqd signed for the key's lock
)

// StoreMetrics are the collectors of `seqd store`, the fenced key-value
// store: its own, seqd_stale_tokens_rejected_total (source="fence") and
// seqd_build_info. The daemon's (seqd_zk_connected, seqd_locks_held, ...) are
// not registered: a process without a ZooKeeper session would export them
// as a misleading 0. Like Metrics, a nil *StoreMetrics records nothing.
type StoreMetrics struct {
	operations  *prometheus.CounterVec
	logWrites   prometheus.Counter
	logRecords  prometheus.Counter
	fsync       prometheus.Histogram
	compactions prometheus.Counter
	logBytes    prometheus.Gauge
	keys        prometheus.Gauge
	dropped     prometheus.Counter
	stopped     prometheus.Gauge

	staleRejected *prometheus.CounterVec // lock = the key
	labels        *labelSet
}

// NewStore builds the store collectors and registers them on reg. The lock
// label of seqd_stale_tokens_rejected_total (the store's key) is capped at
// DefaultMaxLockLabels values.
func NewStore(reg prometheus.Registerer) *StoreMetrics {
	m := &StoreMetrics{
		staleRejected: newStaleRejected(),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_store_operations_total",
			Help: "Store requests by operation (get, put, delete) and result (ok, stale_token, bad_request, not_found, error, unavailable, forbidden).",
		}, []string{"op", "result"}),
		logWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqd_store_writes_total",
			Help: "Write-and-fsync calls on the log; one carries every record queued while the previous one ran (group commit).",
		}),
		logRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqd_store_records_total",
			Help: "Records appended to the log, one per acknowledged change of data or of a key's max token.",
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seqd_store_fsync_duration_seconds",
			Help:    "Time of one write-and-fsync of the log.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		compactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqd_store_compactions_total",
			Help: "Log compactions (live state rewritten to a new log, then renamed over the old one).",
		}),
		logBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_store_log_bytes",
			Help: "Size of the log on disk.",
		}),
		keys: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_store_keys",
			Help: "Keys with a value (deleted keys, whose max token is kept, are not counted).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqd_store_recovery_dropped_bytes_total",
			Help: "Bytes of a torn last batch dropped at start; they were never acknowledged.",
		}),
		stopped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqd_store_stopped",
			Help: "1 once a write, fsync or compaction of the log failed (a full disk, an I/O error) and the store stopped serving until a restart.",
		}),
	}
	m.labels = newLabelSet("lock", DefaultMaxLockLabels, m.staleRejected)
	reg.MustRegister(m.operations, m.logWrites, m.logRecords, m.fsync, m.compactions, m.logBytes, m.keys, m.dropped, m.stopped,
		m.staleRejected, newBuildInfo(""))
	return m
}

// StaleRejected counts an operation on key refused by the store's fence, as
// seqd_stale_tokens_rejected_total{source="fence"}.
func (m *StoreMetrics) StaleRejected(key string) {
	if m == nil {
		return
	}
	m.labels.with(key, func(l string) { m.staleRejected.WithLabelValues(l, SourceFence).Inc() })
}

// Operation counts a store request; op is get, put or delete and result one
// of the Store* values.
func (m *StoreMetrics) Operation(op, result string) {
	if m == nil {
		return
	}
	m.operations.WithLabelValues(op, result).Inc()
}

// LogWrite records one write-and-fsync carrying records records.
func (m *StoreMetrics) LogWrite(records int, seconds float64) {
	if m == nil {
		return
	}
	m.logWrites.Inc()
	m.logRecords.Add(float64(records))
	m.fsync.Observe(seconds)
}

// Compacted counts a compaction.
func (m *StoreMetrics) Compacted() {
	if m == nil {
		return
	}
	m.compactions.Inc()
}

// SetLogBytes sets the size of the log.
func (m *StoreMetrics) SetLogBytes(n int64) {
	if m == nil {
		return
	}
	m.logBytes.Set(float64(n))
}

// SetKeys sets the number of live keys.
func (m *StoreMetrics) SetKeys(n int) {
	if m == nil {
		return
	}
	m.keys.Set(float64(n))
}

// RecoveryDropped counts bytes of a torn tail dropped at start.
func (m *StoreMetrics) RecoveryDropped(n int64) {
	if m == nil {
		return
	}
	m.dropped.Add(float64(n))
}

// Stopped records that the store stopped serving after a failed write.
func (m *StoreMetrics) Stopped() {
	if m != nil {
		m.stopped.Set(1)
	}
}

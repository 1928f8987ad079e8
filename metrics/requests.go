package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestDuration is seqd_request_duration_seconds: how long each verb of
// the lease service took, by verb (a fixed set: the label is bounded). An
// observation made inside a sampled trace carries the trace id as an
// exemplar, which the OpenMetrics exposition shows, so that a slow bucket
// leads to the trace of one request in it.
func newRequestDuration() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "seqd_request_duration_seconds",
		Help:    "Time the lease service took to answer a verb (acquires include their wait), by verb.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"verb"})
}

// Request observes d in seqd_request_duration_seconds for verb, with
// traceID (hex, "" for none) as the observation's exemplar.
func (m *Metrics) Request(verb string, d time.Duration, traceID string) {
	if m == nil {
		return
	}
	o, ok := m.requestObservers.Load(verb)
	if !ok {
		o, _ = m.requestObservers.LoadOrStore(verb, m.requestDuration.WithLabelValues(verb))
	}
	if traceID == "" {
		o.(prometheus.Observer).Observe(d.Seconds())
		return
	}
	o.(prometheus.ExemplarObserver).ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": traceID})
}

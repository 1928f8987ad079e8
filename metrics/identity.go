package metrics

import "github.com/prometheus/client_golang/prometheus"

// OtherIdentity is the identity label of callers that neither the policy
// file nor the tokens file names: the label stays bounded whatever
// certificates callers present.
const OtherIdentity = "_other"

// identities are the series of the daemon's identities and its reloaded
// files (policy, tokens).
type identities struct {
	refusals     *prometheus.CounterVec
	reloads      *prometheus.CounterVec
	reloadFailed *prometheus.GaugeVec
	leases       *prometheus.GaugeVec
}

func newIdentities(reg prometheus.Registerer) *identities {
	i := &identities{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_policy_refusals_total",
			Help: "Requests the policy file refused, by identity (those the policy or tokens file names; others as _other) and code (forbidden, quota_exceeded).",
		}, []string{"identity", "code"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_config_reloads_total",
			Help: "Reloads of a changed file (policy, tokens), by result (ok; failed: the old contents stay in force).",
		}, []string{"file", "result"}),
		reloadFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seqd_config_reload_failed",
			Help: "1 while the last change of the file (policy, tokens) did not load: the daemon runs on its old contents.",
		}, []string{"file"}),
		leases: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seqd_identity_leases",
			Help: "Live leases of this daemon by the identity that took them (those the policy or tokens file names; others as _other).",
		}, []string{"identity"}),
	}
	reg.MustRegister(i.refusals, i.reloads, i.reloadFailed, i.leases)
	return i
}

// PolicyRefused counts a request the policy refused identity with code.
func (m *Metrics) PolicyRefused(identity, code string) {
	if m == nil {
		return
	}
	m.ids.refusals.WithLabelValues(identity, code).Inc()
}

// ConfigReloaded counts a reload of the file what ("policy", "tokens").
func (m *Metrics) ConfigReloaded(what string, ok bool) {
	if m == nil {
		return
	}
	result, failed := "ok", 0.0
	if !ok {
		result, failed = "failed", 1
	}
	m.ids.reloads.WithLabelValues(what, result).Inc()
	m.ids.reloadFailed.WithLabelValues(what).Set(failed)
}

// IdentityLease counts a lease identity took (delta 1) or that ended (-1).
func (m *Metrics) IdentityLease(identity string, delta int) {
	if m == nil {
		return
	}
	m.ids.leases.WithLabelValues(identity).Add(float64(delta))
}

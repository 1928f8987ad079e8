package metrics

import "github.com/prometheus/client_golang/prometheus"

// elections are the election series. The election label is bounded like
// the lock label (the same cap, a set of its own); seqd_leader carries only
// the daemon's own campaigns, which its flags name.
type elections struct {
	won     *prometheus.CounterVec
	changes *prometheus.CounterVec
	leader  *prometheus.GaugeVec

	electionLabels *labelSet
}

func newElections(reg prometheus.Registerer, maxLabels int) elections {
	e := elections{
		won: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_elections_won_total",
			Help: "Campaigns through this daemon that were elected, each with a new and higher term.",
		}, []string{"election"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqd_leader_changes_observed_total",
			Help: "Changes of leader (a new term, or no leader) seen by this daemon's watch of the election.",
		}, []string{"election"}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seqd_leader",
			Help: "1 while this daemon's own campaign (serve --campaign) leads the election, else 0.",
		}, []string{"election"}),
	}
	e.electionLabels = newLabelSet("election", maxLabels, e.won, e.changes)
	reg.MustRegister(e.won, e.changes, e.leader)
	return e
}

// ElectionWon counts a campaign through this daemon that was elected.
func (m *Metrics) ElectionWon(election string) {
	if m == nil {
		return
	}
	m.electionLabels.with(election, func(l string) { m.won.WithLabelValues(l).Inc() })
}

// LeaderChangeObserved counts a change of leader seen by the daemon.
func (m *Metrics) LeaderChangeObserved(election string) {
	if m == nil {
		return
	}
	m.electionLabels.with(election, func(l string) { m.changes.WithLabelValues(l).Inc() })
}

// Leader sets seqd_leader for one of the daemon's own campaigns: 1 while it
// leads.
func (m *Metrics) Leader(election string, leading bool) {
	if m == nil {
		return
	}
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.WithLabelValues(election).Set(v)
}

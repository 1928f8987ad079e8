package sequencer

import (
	"context"
	"log/slog"
	"sync"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Service holds leases over zklock on one ZooKeeper session at a time. When
// ZooKeeper expires the session, every lease is lost (and counted) and the
// Service dials a new session.
type Service struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics.Metrics
	clock zklock.Clock
	guard *zklock.Guard

	leases *leaseTable // every live lease, its expiry and the quota counts

	mu     sync.Mutex // guards sess, closed and the own campaigns' leads
	sess   *zklock.Session
	closed bool
	queues queueReads // queue reads shared by the readers of one state

	wake chan struct{} // session ended: redial
	stop chan struct{}
	wg   sync.WaitGroup

	audit         *auditor
	recipes       recipes
	watches       *hub
	own           map[string]*ownCampaign // the daemon's own campaigns, by name
	stopCampaigns context.CancelFunc
	campaigns     sync.WaitGroup
}

// New makes a Service; Start connects it.
func New(cfg Config) *Service {
	cfg.setDefaults()
	s := &Service{
		own:    map[string]*ownCampaign{},
		cfg:    cfg,
		log:    cfg.Logger.With("component", "sequencer"),
		m:      cfg.Metrics,
		clock:  cfg.Clock,
		guard:  zklock.NewGuard(),
		leases: newLeaseTable(cfg.Clock, cfg.Metrics),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	s.audit = &auditor{to: cfg.Audit, daemon: cfg.Identity, clock: cfg.Clock, m: cfg.Metrics, log: s.log}
	s.recipes = cfg.recipes()
	s.watches = newHub(&s.cfg, s.guard, s.log, s.recipes)
	return s
}

// ownCampaign is a Candidate while the Service runs it.
type ownCampaign struct {
	Candidate
	owner string
	lead  *zklock.Leadership // under Service.mu; nil while not leading
}

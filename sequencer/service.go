package sequencer

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer/policy"
	"github.com/seqd/seqd/zklock"
)

// Config configures a Service.
type Config struct {
	Servers []string
	// Root, SemaphoreRoot and ElectionRoot are the znodes under which the
	// locks, semaphores and elections live (default zklock.DefaultRoot,
	// DefaultSemaphoreRoot, DefaultElectionRoot). They must not nest:
	// Start refuses roots that do.
	Root           string
	SemaphoreRoot  string
	ElectionRoot   string
	SessionTimeout time.Duration
	TokenMode      zklock.TokenMode
	Logger         *slog.Logger
	Metrics        *metrics.Metrics
	Clock          zklock.Clock
	// DialTimeout bounds each attempt to establish a session; default the
	// session timeout.
	DialTimeout time.Duration
	// Identity is written into contender nodes next to the owner, so that
	// a status read on another daemon can tell where a holder is. Default
	// host:pid.
	Identity string
	// Signer, if set, signs every sequencer the daemon hands out, so that
	// resources holding the public key admit only tokens seqd granted.
	Signer *fence.Signer
	// Verifier checks signed sequencers sent to check; default the
	// Signer's own public key, if there is a Signer.
	Verifier *fence.Verifier
	// Campaigns are the daemon's own campaigns, run from Start until
	// Close (which resigns them first).
	Campaigns []Candidate
	// ZKAuth, ZKACL and ZKTLS are the session's digest identity, the ACL
	// policy of the nodes it creates and its TLS configuration (see
	// zklock.Options).
	ZKAuth *zklock.DigestAuth
	ZKACL  zklock.ACLPolicy
	ZKTLS  *tls.Config
	// MaxBlockingReads caps the blocking reads (GET with index) that wait
	// at once, and the names they watch; one more is answered unavailable
	// at once. Default DefaultMaxBlockingReads.
	MaxBlockingReads int
	// LockDelay is the lock-delay of acquires that name none: how long
	// after a lease ends uncleanly nobody is granted its lock. Default 0.
	LockDelay time.Duration
	// TokenFloor is the floor a root gets when the daemon records its
	// token mark (a root that records none yet); Floors, if set, records
	// every token the daemon issues, and the daemon grants nothing on a
	// root whose tokens would fall below them (a ZooKeeper restored or
	// rebuilt) until the root's floor is raised (see zklock.Options).
	TokenFloor uint64
	Floors     *zklock.Floors
	// Authority names the identities and holds the policy that the verbs
	// judge callers by; nil: no policy, and no admin (nobody may break).
	Authority *policy.Authority
	// Audit, if set, records every grant, release, expiry, loss, break,
	// term and resignation of the daemon's leases (and every break it
	// makes).
	Audit *AuditLog
	// Tracer, if set, makes a span of every verb, a child of the span
	// context the verb's ctx carries; nil: no spans.
	Tracer trace.TracerProvider
}

// Service holds leases over zklock on one ZooKeeper session at a time. When
// ZooKeeper expires the session, every lease is lost (and counted) and the
// Service dials a new session.
type Service struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics.Metrics
	clock zklock.Clock
	guard *zklock.Guard

	mu     sync.Mutex
	sess   *zklock.Session
	leases map[leaseID]*lease   // live ones only
	byName map[byNameKey]*lease // the live lease per exclusive lock and election
	closed bool
	exp    expiries   // every live lease by expiry
	broken brokenSet  // the leases broken lately, for their holders' next call
	queues queueReads // queue reads shared by the readers of one state
	quota  quotaState // leases and acquires in flight, by identity

	wake chan struct{} // session ended: redial
	stop chan struct{}
	wg   sync.WaitGroup

	watches       *hub
	own           map[string]*ownCampaign // the daemon's own campaigns, by name
	stopCampaigns context.CancelFunc
	campaigns     sync.WaitGroup
}

// New makes a Service; Start connects it.
func New(cfg Config) *Service {
	if cfg.Root == "" {
		cfg.Root = zklock.DefaultRoot
	}
	if cfg.SemaphoreRoot == "" {
		cfg.SemaphoreRoot = zklock.DefaultSemaphoreRoot
	}
	if cfg.ElectionRoot == "" {
		cfg.ElectionRoot = zklock.DefaultElectionRoot
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = zklock.DefaultSessionTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = cfg.SessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = zklock.WallClock()
	}
	if cfg.Verifier == nil && cfg.Signer != nil {
		cfg.Verifier, _ = fence.NewVerifier(map[string]ed25519.PublicKey{cfg.Signer.KeyID(): cfg.Signer.Public()})
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	s := &Service{
		own:    map[string]*ownCampaign{},
		cfg:    cfg,
		log:    cfg.Logger.With("component", "sequencer"),
		m:      cfg.Metrics,
		clock:  cfg.Clock,
		guard:  zklock.NewGuard(),
		leases: map[leaseID]*lease{},
		byName: map[byNameKey]*lease{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		exp:    expiries{kick: make(chan struct{}, 1)},
	}
	s.watches = newHub(s, cfg.MaxBlockingReads)
	return s
}

// closeParallelism is how many leases with a lock-delay Close releases at
// once.
const closeParallelism = 128

// releaseAll ends the leases of ls, which Close has claimed, from at most n
// goroutines counted in wg.
func (s *Service) releaseAll(ctx context.Context, wg *sync.WaitGroup, ls []*lease, n int) {
	var next atomic.Int64
	for range min(len(ls), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(ls); i = int(next.Add(1) - 1) {
				s.ended(ctx, ls[i], released, metrics.ReasonReleased, true)
			}
		}()
	}
}

// Close resigns the daemon's own campaigns (so that the next leader is
// elected at once rather than after a session timeout), releases every held
// lease, closes the session and waits for the Service's goroutines. Closing
// the session deletes every contender at once, so that waiters elsewhere
// proceed; a lease with a lock-delay is still released one by one first,
// since its marker must say the end was clean.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.resignAll()
	s.watches.close()
	// Leases without a lock-delay go with the session's close, which
	// deletes their contenders at once: ending them is work for the CPU
	// alone. A lease with a lock-delay is released with a request of its
	// own, many in flight at once: ZooKeeper answers one session's
	// requests in order over one connection, so this costs round trips for
	// the slowest, not for all of them.
	var fast, slow []*lease
	s.mu.Lock()
	s.exp.clearLocked() // all at once rather than lease by lease
	for _, l := range s.leases {
		switch {
		case !s.claimLocked(l, released):
		case l.delay > 0:
			slow = append(slow, l)
		default:
			fast = append(fast, l)
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	s.releaseAll(ctx, &wg, slow, closeParallelism)
	s.releaseAll(ctx, &wg, fast, runtime.GOMAXPROCS(0))
	wg.Wait()
	if n := len(fast) + len(slow); n > 0 {
		s.log.Info("released every lease before closing the session", "leases", n)
	}
	close(s.stop)
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
	s.wg.Wait()
	return nil
}

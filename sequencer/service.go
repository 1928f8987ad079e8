package sequencer

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Errors of the Service. Handler maps them to status codes.
var (
	// ErrHeld: the lock was not granted within the wait.
	ErrHeld = errors.New("sequencer: lock held")
	// ErrLost: the lease ended (TTL passed, session lost or released) and
	// nobody has been granted the lock since.
	ErrLost = errors.New("sequencer: lease lost")
	// ErrUnavailable: ZooKeeper cannot be reached now; try again.
	ErrUnavailable = errors.New("sequencer: zookeeper unavailable")
	// ErrBadRequest wraps every validation error.
	ErrBadRequest = errors.New("sequencer: bad request")
	// ErrNotHeld: a check for a token that is not below the current one but
	// is not the current holder's either: nobody holds the lock, or someone
	// holds it with another token.
	ErrNotHeld = errors.New("sequencer: token does not hold the lock")
)

// ConflictError is a 409: a stale token, a lost lease, a held lock or a
// check that failed, with the lock's current token where one is known.
type ConflictError struct {
	Err          error  // fence.ErrStaleToken, ErrLost, ErrHeld or ErrNotHeld
	Name         string // lock
	Token        uint64 // what the caller sent (0 for acquire)
	CurrentToken uint64 // 0 when unknown
	// Ended says, for ErrLost, how the lease ended as far as this daemon
	// knows: "released", "expired", "lost", or "" when it does not know the
	// lease (released or expired some time ago, or never granted here).
	Ended    string
	Election bool // Name is an election's (tokens are terms)
}

func (e *ConflictError) Error() string {
	switch {
	case errors.Is(e.Err, fence.ErrStaleToken):
		return fmt.Sprintf("token %d for %q is stale: the lock's current token is %d", e.Token, e.Name, e.CurrentToken)
	case errors.Is(e.Err, ErrHeld) && e.Election:
		return fmt.Sprintf("election %q has another leader (an owner retrying its own campaign sends the lease_id it was given)", e.Name)
	case errors.Is(e.Err, ErrHeld):
		return fmt.Sprintf("lock %q is held (an owner retrying its own acquire sends the lease_id it was given)", e.Name)
	case errors.Is(e.Err, ErrNotHeld):
		return fmt.Sprintf("token %d does not hold %q: the lock is free or held with another token", e.Token, e.Name)
	}
	if e.Election {
		return fmt.Sprintf("the leadership of %q with term %d is lost", e.Name, e.Token)
	}
	switch e.Ended {
	case "released", "expired":
		return fmt.Sprintf("the lease on %q with token %d was %s", e.Name, e.Token, e.Ended)
	case "lost":
		return fmt.Sprintf("the lease on %q with token %d was lost (its ZooKeeper session or contender node went away)", e.Name, e.Token)
	}
	return fmt.Sprintf("no live lease on %q with token %d: unknown lease (released, expired, or not granted by this daemon)", e.Name, e.Token)
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Config configures a Service.
type Config struct {
	Servers        []string
	Root           string // default zklock.DefaultRoot
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
	// ElectionRoot is the znode under which elections live; default
	// DefaultElectionRoot.
	ElectionRoot string
	// Campaigns are the daemon's own campaigns, run from Start until
	// Close (which resigns them first).
	Campaigns []Candidate
	// ZKAuth, ZKACL and ZKTLS are the session's digest identity, the ACL
	// policy of the nodes it creates and its TLS configuration (see
	// zklock.Options).
	ZKAuth *zklock.DigestAuth
	ZKACL  zklock.ACLPolicy
	ZKTLS  *tls.Config
	// LockDelay is the lock-delay of acquires that name none: how long
	// after a lease ends uncleanly nobody is granted its lock. Default 0.
	LockDelay time.Duration
	// GroupCommit sends the contender creates (and the release deletes)
	// of different locks that wait at the same time as one ZooKeeper
	// transaction (zklock.Options.GroupCommit).
	GroupCommit bool
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
	leases map[leaseID]*lease // live ones only
	byName map[string]*lease  // the live lease per lock name
	closed bool
	exp    expiries // every live lease by expiry

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
	if cfg.ElectionRoot == "" {
		cfg.ElectionRoot = DefaultElectionRoot
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
		byName: map[string]*lease{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		exp:    expiries{kick: make(chan struct{}, 1)},
	}
	s.watches = newHub(s)
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
		case l.delayed:
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

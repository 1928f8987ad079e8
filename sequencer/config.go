package sequencer

import (
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"os"
	"time"

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

// setDefaults fills in what c leaves out.
func (c *Config) setDefaults() {
	if c.Root == "" {
		c.Root = zklock.DefaultRoot
	}
	if c.SemaphoreRoot == "" {
		c.SemaphoreRoot = zklock.DefaultSemaphoreRoot
	}
	if c.ElectionRoot == "" {
		c.ElectionRoot = zklock.DefaultElectionRoot
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = zklock.DefaultSessionTimeout
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = c.SessionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = zklock.WallClock()
	}
	if c.Verifier == nil && c.Signer != nil {
		c.Verifier, _ = fence.NewVerifier(map[string]ed25519.PublicKey{c.Signer.KeyID(): c.Signer.Public()})
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
}

// zkOptions are the options of the daemon's sessions, with guard.
func (c *Config) zkOptions(guard *zklock.Guard) zklock.Options {
	return zklock.Options{
		SessionTimeout: c.SessionTimeout,
		Logger:         c.Logger,
		Observer:       c.Metrics,
		Clock:          c.Clock,
		Guard:          guard,
		TokenFloor:     c.TokenFloor,
		Floors:         c.Floors,
		Auth:           c.ZKAuth,
		ACL:            c.ZKACL,
		TLS:            c.ZKTLS,
	}
}

// roots are the daemon's roots, named as its flags name them.
func (c *Config) roots() []zklock.Root {
	return []zklock.Root{
		{What: "the lock root", Path: c.Root},
		{What: "the semaphore root", Path: c.SemaphoreRoot},
		{What: "the election root", Path: c.ElectionRoot},
	}
}

// recipes names the zklock recipes under c's roots.
func (c *Config) recipes() recipes {
	return recipes{locks: c.Root, semaphores: c.SemaphoreRoot, elections: c.ElectionRoot, mode: c.TokenMode}
}

// Candidate is one of the daemon's own campaigns.
type Candidate struct {
	Name  string // election name
	Value string // the value it publishes as leader
}

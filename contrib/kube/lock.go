package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// DefaultTTL is the seqd lease's TTL when Config.TTL is 0: client-go's
// usual LeaseDuration.
const DefaultTTL = 15 * time.Second

// Config says which election a Lock campaigns in, as whom.
type Config struct {
	// Election is the seqd election's name (required).
	Election string
	// Identity names this candidate (required), unique among the
	// candidates: a pod's name. It is the value the leader publishes and
	// the seqd lease's owner.
	Identity string
	// TTL is the seqd lease's TTL (default DefaultTTL): how long a leader
	// that stops renewing keeps the leadership. Give it the elector's
	// LeaseDuration.
	TTL time.Duration
	// Client is the daemon's client; nil makes one with client.New(""),
	// which reads SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT
	// and SEQD_KEY.
	Client *client.Client
	// EventRecorder, when set, records the elector's events ("became
	// leader", "stopped leading") about EventObject (default: a Lease
	// object named after the election, which need not exist).
	EventRecorder resourcelock.EventRecorder
	EventObject   runtime.Object
	// Clock measures the lease's deadline (default: the real clock).
	Clock clock.WithDelayedExecution
}

// Lock is a resourcelock.Interface whose record is a seqd election: Get
// reads who leads, Create and Update campaign or renew this candidate's
// leadership, and an Update with no holder (client-go's ReleaseOnCancel)
// resigns it. Use it with leaderelection.RunOrDie or NewLeaderElector, and
// wrap the callbacks with Callbacks so that OnStartedLeading learns the
// term and stops when the seqd lease ends.
//
// A Lock serves one elector. Once a leadership has ended during a run, the
// Lock does not campaign again until that run is over (OnStoppedLeading of
// Callbacks): otherwise the elector would carry on leading under a new term
// while the work it started has been told to stop.
type Lock struct {
	c     *client.Client
	cfg   Config
	clock clock.WithDelayedExecution

	mu      sync.Mutex
	term    *term      // the leadership held; nil when none
	ended   error      // why this run's leadership ended; nil until it did
	pending string     // lease id of a campaign left without an answer, sent again on retry
	lapsed  *api.Lease // the lease of a term that ended at its deadline, perhaps still live at the daemon
}

var _ resourcelock.Interface = (*Lock)(nil)

// Errors of a Lock's leadership. A leadership that the daemon ended is an
// error matching client.ErrLost (client.ErrBroken too when an operator broke
// it).
var (
	// ErrExpired: no renewal was confirmed within the lease's TTL, so the
	// daemon may have granted the leadership to another candidate.
	ErrExpired = errors.New("kube: the seqd lease's TTL passed without a confirmed renewal")
	// ErrSuperseded: the daemon reports a leader with a higher term.
	ErrSuperseded = errors.New("kube: another candidate leads with a higher term")
	// ErrRunEnded: the leadership ended during this run of the elector;
	// the Lock campaigns again in the next run.
	ErrRunEnded = errors.New("kube: the leadership of this run has ended")
	// ErrResigned: the leadership was given up (ReleaseOnCancel).
	ErrResigned = errors.New("kube: the leadership was resigned")
)

// New returns a Lock of cfg's election; it does no I/O.
func New(cfg Config) (*Lock, error) {
	if cfg.Election == "" {
		return nil, errors.New("kube: Config.Election names no election")
	}
	if cfg.Identity == "" {
		return nil, errors.New("kube: Config.Identity is empty: give each candidate its own, such as its pod's name")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < api.MinTTL || cfg.TTL > api.MaxTTL {
		return nil, fmt.Errorf("kube: Config.TTL %v is outside %v..%v", cfg.TTL, api.MinTTL, api.MaxTTL)
	}
	l := &Lock{c: cfg.Client, cfg: cfg, clock: cfg.Clock}
	if l.c == nil {
		c, err := client.New("")
		if err != nil {
			return nil, fmt.Errorf("kube: %w", err)
		}
		l.c = c
	}
	if l.clock == nil {
		l.clock = clock.RealClock{}
	}
	return l, nil
}

// record is what Get's raw bytes hold. Observed changes with every read, so
// that the elector sees a leader the daemon vouches for as freshly renewed
// and leaves it alone: it campaigns once the daemon reports nobody leading,
// not when its own timer says the record is old.
type record struct {
	resourcelock.LeaderElectionRecord
	Term     uint64 `json:"term"`
	Observed int64  `json:"observed"`
}

// Get reads the election: its leader's published value as the holder (this
// Lock's identity while it holds the leader's term), no holder when nobody
// leads.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	st, err := l.c.Election(ctx, l.cfg.Election)
	if err != nil {
		return nil, nil, fmt.Errorf("kube: read the election %s: %w", l.cfg.Election, err)
	}
	now := l.clock.Now()
	rec := record{Observed: now.UnixNano()}
	rec.LeaseDurationSeconds = int((l.cfg.TTL + time.Second - 1) / time.Second)
	if st.Leader != nil {
		rec.Term = st.Leader.Term
		rec.HolderIdentity = st.Leader.Value
		rec.AcquireTime = metav1.NewTime(st.Leader.Since)
		rec.RenewTime = metav1.NewTime(now)
	}
	l.mu.Lock()
	if t := l.term; t != nil {
		switch {
		case rec.Term == t.lease.Token:
			rec.HolderIdentity = l.cfg.Identity
		case rec.Term > t.lease.Token:
			l.endLocked(t, fmt.Errorf("%w: %q in term %d, after term %d", ErrSuperseded, rec.HolderIdentity, rec.Term, t.lease.Token))
		}
	}
	l.mu.Unlock()
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("kube: %w", err)
	}
	return &rec.LeaderElectionRecord, raw, nil
}

// Create is Update: there is no object to create, the election exists once
// a candidate campaigns.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, ler)
}

// Update renews this candidate's leadership, or campaigns for it when it
// holds none (tried once: another leader makes it an error matching
// client.ErrHeld). A record with no holder resigns.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	switch ler.HolderIdentity {
	case "":
		return l.resign(ctx)
	case l.cfg.Identity:
	default:
		return fmt.Errorf("kube: the lock of %q cannot make %q the leader", l.cfg.Identity, ler.HolderIdentity)
	}
	l.mu.Lock()
	t, ended := l.term, l.ended
	l.mu.Unlock()
	switch {
	case t != nil:
		return l.renew(ctx, t)
	case ended != nil:
		return fmt.Errorf("%w: %w", ErrRunEnded, ended)
	}
	return l.campaign(ctx)
}

// campaign stands for the leadership once. A campaign whose answer was not
// read is sent again with the same lease id, so that a leadership granted
// meanwhile is returned rather than left to block the election until its
// TTL passes.
func (l *Lock) campaign(ctx context.Context) error {
	l.mu.Lock()
	if l.pending == "" {
		l.pending = api.NewLeaseID()
	}
	id := l.pending
	l.mu.Unlock()
	sent := l.clock.Now()
	lease, err := l.c.AcquireLeadership(ctx, l.cfg.Election, l.cfg.Identity,
		client.Owner(l.cfg.Identity), client.TTL(l.cfg.TTL), client.LeaseID(id))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if errors.As(err, new(*api.APIError)) {
			l.pending = "" // the daemon's answer: not granted
		}
		return fmt.Errorf("kube: campaign in %s: %w", l.cfg.Election, err)
	}
	l.pending = ""
	l.term = l.startTerm(lease, sent)
	return nil
}

// renew renews t, and ends it when the daemon refuses or the answer cannot
// be trusted.
func (l *Lock) renew(ctx context.Context, t *term) error {
	sent := l.clock.Now()
	renewed, err := l.c.Renew(ctx, t.lease, l.cfg.TTL)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != t {
		return fmt.Errorf("%w: %w", ErrRunEnded, l.ended)
	}
	if err != nil {
		var ae *api.APIError
		if errors.Is(err, client.ErrProtocol) || errors.As(err, &ae) && ae.Status/100 == 4 {
			l.endLocked(t, err)
		}
		return fmt.Errorf("kube: renew the leadership of %s: %w", l.cfg.Election, err)
	}
	t.lease = renewed
	l.armLocked(t, l.deadline(sent, renewed))
	return nil
}

// resign gives the leadership up, if this Lock holds it. The lease of a
// term that ended at its deadline is released too, at best: the daemon may
// still count it, and releasing it lets the next leader in at once.
func (l *Lock) resign(ctx context.Context) error {
	l.mu.Lock()
	t, lapsed := l.term, l.lapsed
	if t != nil {
		l.endLocked(t, ErrResigned)
	}
	l.lapsed = nil
	l.mu.Unlock()
	if t == nil {
		if lapsed != nil {
			l.c.Release(ctx, *lapsed) // refused if it has ended: nothing to do then
		}
		return nil
	}
	if err := l.c.Release(ctx, t.lease); err != nil {
		return fmt.Errorf("kube: resign the leadership of %s: %w", l.cfg.Election, err)
	}
	return nil
}

// endRun closes a run of the elector: a leadership still held is given up
// locally and left to lapse at the daemon after its TTL (as client-go's own
// locks do without ReleaseOnCancel), and the next run may campaign.
func (l *Lock) endRun() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.term; t != nil {
		l.endLocked(t, ErrRunEnded)
	}
	l.ended = nil
}

// RecordEvent records the elector's event s, if Config has a recorder.
func (l *Lock) RecordEvent(s string) {
	if l.cfg.EventRecorder == nil {
		return
	}
	obj := l.cfg.EventObject
	if obj == nil {
		obj = &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: l.cfg.Election},
		}
	}
	l.cfg.EventRecorder.Eventf(obj, "Normal", "LeaderElection", "%v %v", l.cfg.Identity, s)
}

// Identity is Config.Identity.
func (l *Lock) Identity() string { return l.cfg.Identity }

// Describe names the election and the daemon, for the elector's logs.
func (l *Lock) Describe() string {
	return "seqd election " + l.cfg.Election + " at " + l.c.Addr()
}

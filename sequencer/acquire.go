package sequencer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Acquire: validating the request, the idempotent retry by lease id,
// contending in ZooKeeper, and making the grant a lease.

func validateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return fmt.Errorf("%w: ttl %v is out of range: it must be between %v and %v", ErrBadRequest, ttl, MinTTL, MaxTTL)
	}
	return nil
}

func validateName(name string) error {
	if err := zklock.ValidateName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}

// AcquireOption refines an acquire.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	shared    bool
	leaseID   string
	lockDelay *time.Duration // nil: the daemon's Config.LockDelay
}

// WithShared makes the lease shared (a reader): it holds the lock together
// with other shared leases and excludes exclusive ones.
func WithShared() AcquireOption {
	return func(o *acquireOptions) { o.shared = true }
}

// WithLockDelay sets the lease's lock-delay (0..MaxLockDelay): after it ends
// uncleanly (its TTL passed, the session was lost, its node was deleted by
// someone else), the lock is granted to nobody, on any daemon, until d has
// passed. A release hands over at once. Without it the daemon's
// Config.LockDelay applies.
func WithLockDelay(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.lockDelay = &d }
}

// WithLeaseID makes an acquire idempotent: if id is the owner's live lease
// on the lock, that lease comes back (same token, TTL extended); otherwise
// a new lease is granted under id, so that a retry after a lost answer finds
// it. id is 32 lowercase hex digits, random, chosen by the client or taken
// from an earlier answer. Knowing a holder's owner string is never enough
// to obtain its lease: without its lease_id, an acquire of a held lock is
// refused as held.
func WithLeaseID(id string) AcquireOption {
	return func(o *acquireOptions) { o.leaseID = id }
}

// Acquire grants name to owner for ttl, waiting up to wait (0 tries once).
// If ctx ends while waiting (the HTTP client went away), the contender is
// withdrawn.
func (s *Service) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := validateAcquire(name, owner, ttl, wait); err != nil {
		return Lease{}, err
	}
	if o.leaseID != "" && !validLeaseID(o.leaseID) {
		return Lease{}, fmt.Errorf("%w: lease_id %.40q must be 32 lowercase hex digits", ErrBadRequest, o.leaseID)
	}
	delay := s.cfg.LockDelay
	if o.shared {
		delay = 0 // readers have none
	}
	if o.lockDelay != nil {
		if o.shared && *o.lockDelay != 0 {
			return Lease{}, fmt.Errorf("%w: a shared lease has no lock_delay", ErrBadRequest)
		}
		delay = *o.lockDelay
	}
	if delay < 0 || delay > MaxLockDelay {
		return Lease{}, fmt.Errorf("%w: lock_delay %v is out of range: it must be between 0s and %v", ErrBadRequest, delay, MaxLockDelay)
	}
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	if o.leaseID != "" {
		out, ok, err := s.extendOwn(lockLease, name, owner, o.leaseID, ttl, 0)
		if ok || err != nil {
			return out, err
		}
	}
	g, err := s.contend(ctx, sess, name, owner, wait, delay, o.shared)
	if err != nil {
		return Lease{}, err
	}
	return s.admit(ctx, &lease{kind: lockLease, grant: g, shared: o.shared, delayed: delay > 0}, name, owner, o.leaseID, ttl, 0)
}

func validLeaseID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func validateAcquire(name, owner string, ttl, wait time.Duration) error {
	if err := validateName(name); err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("%w: owner is required: name who is asking, e.g. host:pid", ErrBadRequest)
	}
	if len(owner) > 256 {
		return fmt.Errorf("%w: owner is %d bytes, longer than 256", ErrBadRequest, len(owner))
	}
	if err := validateTTL(ttl); err != nil {
		return err
	}
	if wait < 0 || wait > MaxWait {
		return fmt.Errorf("%w: wait %v is out of range: it must be between 0s and %v", ErrBadRequest, wait, MaxWait)
	}
	return nil
}

// extendOwn is an acquire that names lease id: if id is owner's live lease
// on name, it extends the lease to ttl from now and reports it, with ok,
// counted as a renewal. An id in use for another lock or owner is refused.
func (s *Service) extendOwn(k leaseKind, name, owner, id string, ttl time.Duration, limit int) (out Lease, ok bool, err error) {
	s.mu.Lock()
	l := s.lookupLocked(id)
	if l != nil && (l.name != name || l.owner != owner || l.kind != k || int(l.limit) != limit) {
		s.mu.Unlock()
		return Lease{}, false, fmt.Errorf("%w: lease_id %s belongs to another lock, semaphore or owner", ErrBadRequest, id)
	}
	if l == nil || l.state != live || l.grant.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return Lease{}, false, nil
	}
	l.ttl = ttl
	l.expires = s.clock.Now().Add(ttl)
	s.scheduleLocked(l)
	out = l.view()
	s.mu.Unlock()
	if k == lockLease {
		s.m.Renewal(name)
	}
	return out, true, nil
}

// contend puts a contender for name on sess and waits up to wait for the
// grant (0 tries once); delay is the grant's lock-delay; shared makes it a
// reader.
func (s *Service) contend(ctx context.Context, sess *zklock.Session, name, owner string, wait, delay time.Duration, shared bool) (*zklock.Grant, error) {
	data := marshalContender(contenderData{Owner: owner, Daemon: s.cfg.Identity})
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode), zklock.WithData(data), zklock.WithLockDelay(delay))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	var lk interface {
		Acquire(context.Context) (*zklock.Grant, error)
		TryAcquire(context.Context) (*zklock.Grant, error)
	} = mu
	if shared {
		if s.cfg.TokenMode != zklock.TokenZxid {
			return nil, fmt.Errorf("%w: shared leases need token mode zxid, not %s", ErrBadRequest, s.cfg.TokenMode)
		}
		if lk, err = zklock.NewReadLock(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithData(data)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
	}
	var g *zklock.Grant
	if wait == 0 {
		g, err = lk.TryAcquire(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		g, err = lk.Acquire(wctx)
		cancel()
	}
	if err != nil {
		return nil, acquireError(ctx, sess, mu, name, err)
	}
	return g, nil
}

// acquireError maps a failed acquire to the Service's errors: a lock still
// held when the wait ended is a *ConflictError with the holder's token.
func acquireError(ctx context.Context, sess *zklock.Session, mu *zklock.Mutex, name string, err error) error {
	switch {
	case errors.Is(err, zklock.ErrUnavailable), errors.Is(err, zklock.ErrSessionExpired), errors.Is(err, zklock.ErrClosed):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case errors.Is(err, zklock.ErrHeld), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && sess.Connected():
		ce := &ConflictError{Err: ErrHeld, Name: name}
		if h, herr := mu.Holder(context.WithoutCancel(ctx)); herr == nil {
			ce.CurrentToken = h.Token
		}
		return ce
	case errors.Is(err, zklock.ErrTokenRegression):
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// admit makes l's grant a lease of owner for ttl and schedules its expiry; a
// Service that is closing releases the grant instead. limit is a
// semaphore's, 0 for a lock or an election.
func (s *Service) admit(ctx context.Context, l *lease, name, owner, id string, ttl time.Duration, limit int) (Lease, error) {
	l.id = newLeaseID()
	if id != "" {
		l.id, _ = parseLeaseID(id) // validated with the request
	}
	g := l.grant
	if s.cfg.Signer != nil {
		l.signed = s.cfg.Signer.Sign(name, g.Token)
	}
	l.name, l.owner, l.ttl, l.limit = name, owner, ttl, int32(limit)
	l.at = -1
	s.mu.Lock()
	l.expires = s.clock.Now().Add(ttl)
	if s.closed {
		s.mu.Unlock()
		g.Release(context.WithoutCancel(ctx))
		return Lease{}, fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	if _, taken := s.leases[l.id]; taken {
		// Two acquires named the same new id and both were granted (two
		// locks, or a retry racing its original): one lease per id.
		s.mu.Unlock()
		g.Release(context.WithoutCancel(ctx))
		return Lease{}, fmt.Errorf("%w: lease_id %s is already in use", ErrBadRequest, l.id)
	}
	s.leases[l.id] = l
	if limit == 0 && !l.shared {
		s.byName[leaseKey(l.kind, name)] = l
	}
	s.scheduleLocked(l)
	out := l.view()
	s.wg.Add(1) // under s.mu: Close cannot be waiting yet (it sets closed first)
	s.mu.Unlock()
	// The grant's loss ends the lease. A grant released has been released
	// by end, which ended the lease first.
	g.AfterEnd(func(err error) {
		defer s.wg.Done()
		if !errors.Is(err, zklock.ErrReleased) {
			s.end(context.Background(), l, lost, metrics.ReasonLost)
		}
	})
	if l.kind == electionLease {
		s.m.ElectionWon(name)
		s.watches.touch(watchKey{election: true, name: name})
		s.log.Info("elected", "election", name, "term", g.Token, "owner", owner, "ttl", ttl)
		return out, nil
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "granted", slog.String("lock", name), slog.Uint64("token", g.Token), slog.String("owner", owner), slog.Duration("ttl", ttl))
	return out, nil
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func newLeaseID() leaseID {
	var id leaseID
	if _, err := rand.Read(id[:]); err != nil {
		panic(fmt.Sprintf("sequencer: crypto/rand: %v", err))
	}
	return id
}

package sequencer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// The lease lifecycle: acquire, renew, release, and the end of a lease by
// release, expiry or loss of its grant.

type leaseState int

const (
	live leaseState = iota
	released
	expired
	lost
)

type lease struct {
	id      string
	name    string
	owner   string
	ttl     time.Duration
	expires time.Time
	grant   *zklock.Grant
	// sequencer is the grant's, signed when the daemon signs: made once,
	// at grant, since every answer about the lease carries it.
	sequencer string
	state     leaseState
	renewed   chan struct{} // poked when expires moves
	stop      chan struct{} // closed when released
}

// contenderData is stored in each contender node.
type contenderData struct {
	Owner  string `json:"owner"`
	Daemon string `json:"daemon,omitempty"`
}

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
	leaseID string
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
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	if o.leaseID != "" {
		out, ok, err := s.extendOwn(name, owner, o.leaseID, ttl)
		if ok || err != nil {
			return out, err
		}
	}
	g, err := s.contend(ctx, sess, name, owner, wait)
	if err != nil {
		return Lease{}, err
	}
	return s.admit(ctx, g, name, owner, o.leaseID, ttl)
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
func (s *Service) extendOwn(name, owner, id string, ttl time.Duration) (out Lease, ok bool, err error) {
	s.mu.Lock()
	l := s.leases[id]
	if l != nil && (l.name != name || l.owner != owner) {
		s.mu.Unlock()
		return Lease{}, false, fmt.Errorf("%w: lease_id %s belongs to another lock or owner", ErrBadRequest, id)
	}
	if l == nil || l.state != live || l.grant.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return Lease{}, false, nil
	}
	l.ttl = ttl
	l.expires = s.clock.Now().Add(ttl)
	out = l.view()
	s.mu.Unlock()
	poke(l.renewed)
	s.m.Renewal(name)
	return out, true, nil
}

// contend puts a contender for name on sess and waits up to wait for the
// grant (0 tries once).
func (s *Service) contend(ctx context.Context, sess *zklock.Session, name, owner string, wait time.Duration) (*zklock.Grant, error) {
	data, _ := json.Marshal(contenderData{Owner: owner, Daemon: s.cfg.Identity})
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode), zklock.WithData(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	var g *zklock.Grant
	if wait == 0 {
		g, err = mu.TryAcquire(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		g, err = mu.Acquire(wctx)
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

// admit makes grant g a lease of owner for ttl and starts its watch; a
// Service that is closing releases g instead.
func (s *Service) admit(ctx context.Context, g *zklock.Grant, name, owner, id string, ttl time.Duration) (Lease, error) {
	if id == "" {
		id = newLeaseID()
	}
	l := &lease{
		sequencer: s.sequencer(name, g.Token),
		id:        id,
		name:      name,
		owner:     owner,
		ttl:       ttl,
		expires:   s.clock.Now().Add(ttl),
		grant:     g,
		renewed:   make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		g.Release(context.WithoutCancel(ctx))
		return Lease{}, fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	if _, taken := s.leases[id]; taken {
		// Two acquires named the same new id and both were granted (two
		// locks, or a retry racing its original): one lease per id.
		s.mu.Unlock()
		g.Release(context.WithoutCancel(ctx))
		return Lease{}, fmt.Errorf("%w: lease_id %s is already in use", ErrBadRequest, id)
	}
	s.leases[l.id] = l
	s.byName[name] = l
	out := l.view()
	s.wg.Add(1) // under s.mu: Close cannot be waiting yet (it sets closed first)
	go s.watch(l)
	s.mu.Unlock()
	s.log.Info("granted", "lock", name, "token", g.Token, "owner", owner, "ttl", ttl)
	return out, nil
}

// sequencer is the sequencer of name's grant with token, signed if the
// daemon has a signing key.
func (s *Service) sequencer(name string, token uint64) string {
	if s.cfg.Signer != nil {
		return s.cfg.Signer.Sign(name, token)
	}
	return fence.FormatSequencer(name, token)
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func newLeaseID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sequencer: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// view is the API form of l; s.mu must be held.
func (l *lease) view() Lease {
	return Lease{
		Name:      l.name,
		Token:     l.grant.Token,
		Sequencer: l.sequencer,
		LeaseID:   l.id,
		Owner:     l.owner,
		TTL:       Duration(l.ttl),
		ExpiresAt: l.expires.UTC(),
	}
}

// watch ends the lease when its TTL passes or its grant is lost.
func (s *Service) watch(l *lease) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		expires := l.expires
		s.mu.Unlock()
		tc, t := s.clock.TimerAt(expires)
		select {
		case <-tc:
			// end decides under s.mu whether the TTL has really passed: a
			// renewal that got in first keeps the lease, one that comes after
			// finds it ended. Expiry deletes the contender so that the next
			// waiter proceeds.
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTimeout)
			ended := s.end(ctx, l, expired, metrics.ReasonExpired)
			cancel()
			if ended {
				return
			}
			s.mu.Lock()
			gone := l.state != live
			s.mu.Unlock()
			if gone {
				return
			}
		case <-l.renewed:
			t.Stop()
		case <-l.grant.Lost():
			t.Stop()
			s.end(context.Background(), l, lost, metrics.ReasonLost)
			return
		case <-l.stop:
			t.Stop()
			return
		}
	}
}

// end moves a live lease to state, counts and logs it, and releases its
// grant (a no-op for a grant already lost). It reports whether this call
// ended the lease.
func (s *Service) end(ctx context.Context, l *lease, state leaseState, reason string) bool {
	s.mu.Lock()
	if l.state != live || state == expired && s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return false
	}
	l.state = state
	delete(s.leases, l.id)
	if s.byName[l.name] == l {
		delete(s.byName, l.name)
	}
	s.mu.Unlock()
	if state == released {
		close(l.stop)
	}
	err := l.grant.Release(ctx)
	s.m.Release(l.name, reason)
	switch state {
	case expired:
		s.log.Warn("lease expired", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	case lost:
		s.log.Warn("lease lost", "lock", l.name, "token", l.grant.Token, "owner", l.owner, "err", l.grant.Err())
	default:
		s.log.Info("released", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	}
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		s.log.Warn("release: contender left for the janitor", "lock", l.name, "err", err)
	}
	return true
}

// leaseFor finds the live lease for a renew or release. If there is none,
// it asks ZooKeeper for the lock's current token and answers 409:
// stale_token when the lock has moved on to a higher token, lost otherwise.
func (s *Service) leaseFor(ctx context.Context, name, leaseID string, token uint64, source string) (*lease, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if leaseID == "" {
		return nil, fmt.Errorf("%w: lease_id is required", ErrBadRequest)
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: token is required and must be a positive integer", ErrBadRequest)
	}
	s.mu.Lock()
	l := s.leases[leaseID]
	s.mu.Unlock()
	if l != nil && l.name != name {
		return nil, fmt.Errorf("%w: lease %s is for lock %q, not %q", ErrBadRequest, leaseID, l.name, name)
	}
	if l != nil && l.grant.Err() == nil && token == l.grant.Token {
		return l, nil
	}
	if l != nil && token > l.grant.Token {
		return nil, fmt.Errorf("%w: token %d was never issued to lease %s", ErrBadRequest, token, leaseID)
	}
	// The lease is gone (or the token is older than the lease's): what is
	// the lock's token now?
	cur, err := s.currentToken(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur > token {
		s.m.StaleRejected(name, source)
		s.log.Warn("stale token rejected", "lock", name, "token", token, "current_token", cur, "source", source)
		return nil, &ConflictError{Err: &fence.StaleTokenError{Key: name, Token: token, Max: cur}, Name: name, Token: token, CurrentToken: cur}
	}
	return nil, &ConflictError{Err: ErrLost, Name: name, Token: token, CurrentToken: cur}
}

// Renew extends a live lease by its TTL (or ttl, if not zero) and keeps its
// token. While ZooKeeper is unreachable it answers ErrUnavailable: the
// lease cannot be vouched for.
func (s *Service) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	if ttl != 0 {
		if err := validateTTL(ttl); err != nil {
			return Lease{}, err
		}
	}
	l, err := s.leaseFor(ctx, name, leaseID, token, metrics.SourceRenew)
	if err != nil {
		return Lease{}, err
	}
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper; the lease cannot be renewed now", ErrUnavailable)
	}
	// Still the lowest contender? One planted below it has taken the lock,
	// and check would already name another holder.
	if err := l.grant.Verify(ctx); err != nil {
		switch {
		case l.grant.Err() == nil: // ZooKeeper did not answer
			if ctx.Err() != nil {
				return Lease{}, ctx.Err()
			}
			return Lease{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		case errors.Is(err, zklock.ErrLockLost):
			s.end(context.WithoutCancel(ctx), l, lost, metrics.ReasonLost)
			// Answer as for any ended lease: stale when the lock moved on.
			if _, err := s.leaseFor(ctx, name, leaseID, token, metrics.SourceRenew); err != nil {
				return Lease{}, err
			}
		}
		return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	s.mu.Lock()
	// Not past its TTL (the expiry goroutine may not have run yet) and its
	// grant not lost: a renewal never revives a lease that has ended.
	if l.state != live || l.grant.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	if ttl != 0 {
		l.ttl = ttl
	}
	l.expires = s.clock.Now().Add(l.ttl)
	out := l.view()
	s.mu.Unlock()
	poke(l.renewed)
	s.m.Renewal(name)
	return out, nil
}

// Release ends a live lease and deletes its contender.
func (s *Service) Release(ctx context.Context, name, leaseID string, token uint64) error {
	l, err := s.leaseFor(ctx, name, leaseID, token, metrics.SourceRelease)
	if err != nil {
		return err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	return nil
}

// Leases lists the live leases of this daemon, by name.
func (s *Service) Leases() []Lease {
	s.mu.Lock()
	out := make([]Lease, 0, len(s.leases))
	for _, l := range s.leases {
		v := l.view()
		v.LeaseID = "" // a listing never gives out what proves a lease
		out = append(out, v)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

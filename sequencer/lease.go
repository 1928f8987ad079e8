package sequencer

import (
	"context"
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
	limit     int           // a semaphore's limit; 0 for a lock
	shared    bool          // a lock's shared lease (a reader)
	renewed   chan struct{} // poked when expires moves
	stop      chan struct{} // closed when released
}

// contenderData is stored in each contender node.
type contenderData struct {
	Owner  string `json:"owner"`
	Daemon string `json:"daemon,omitempty"`
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
		Limit:     l.limit,
		Mode:      l.mode(),
	}
}

// mode is the lease's mode on the wire: "shared", or "" for exclusive.
func (l *lease) mode() string {
	if l.shared {
		return ModeShared
	}
	return ""
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
	release := l.grant.Release
	if state == expired {
		// Not a clean release: a lock-delay applies before the next grant.
		release = l.grant.Abandon
	}
	err := release(ctx)
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
	if l != nil && l.limit != 0 {
		return nil, fmt.Errorf("%w: lease %s is for semaphore %q, not lock %q", ErrBadRequest, leaseID, l.name, name)
	}
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
	return s.renew(l, token, ttl)
}

// renew extends the live lease l (ttl 0 keeps its TTL).
func (s *Service) renew(l *lease, token uint64, ttl time.Duration) (Lease, error) {
	name := l.name
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper; the lease cannot be renewed now", ErrUnavailable)
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

// SafeFor is how long the live lease id on name is guaranteed to hold: until
// its TTL passes or the session could expire, whichever is first (0 once it
// has ended). ok is false when id is not a lease of name on this daemon.
func (s *Service) SafeFor(name, id string) (safe time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[id]
	if l == nil || l.name != name {
		return 0, false
	}
	if l.state != live {
		return 0, true
	}
	return max(0, min(l.expires.Sub(s.clock.Now()), l.grant.SafeFor())), true
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

package sequencer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// The lease lifecycle: acquire, renew, release, and the end of a lease by
// release, expiry or loss of its grant.

type leaseState uint8

const (
	live leaseState = iota
	released
	expired
	lost
)

// leaseKind tells a lock's lease from an election's (a leadership).
type leaseKind uint8

const (
	lockLease leaseKind = iota
	electionLease
)

func (k leaseKind) String() string {
	if k == electionLease {
		return "election"
	}
	return "lock"
}

// leaseKey is the key of byName: lock and election names are apart.
func leaseKey(k leaseKind, name string) string {
	if k == electionLease {
		return "election:" + name // ':' is not allowed in a name
	}
	return name
}

// A daemon holds many leases: the fields are ordered, and sized, to keep
// a lease small.
type lease struct {
	grant *zklock.Grant
	lead  *zklock.Leadership // elections only
	name  string
	owner string
	// signed is the grant's signed sequencer when the daemon signs: made
	// once, at grant, since every answer about the lease carries it. An
	// unsigned sequencer is made when asked for.
	signed  string
	ttl     time.Duration
	expires time.Time
	id      leaseID
	at      int32 // index in the expiry schedule (Service.exp); -1 when out of it
	limit   int32 // a semaphore's limit; 0 for a lock
	kind    leaseKind
	state   leaseState
	shared  bool // a lock's shared lease (a reader)
	delayed bool // a lock's lease with a lock-delay
}

// leaseID is a lease's id: 16 random bytes, 32 lowercase hex digits on the
// wire.
type leaseID [16]byte

func (id leaseID) String() string { return hex.EncodeToString(id[:]) }

// parseLeaseID reads a lease id in its wire form; ok is false for anything
// else.
func parseLeaseID(s string) (id leaseID, ok bool) {
	if !validLeaseID(s) {
		return id, false
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err == nil
}

// lookupLocked is the live lease with the id s (in wire form), or nil; s.mu
// must be held.
func (s *Service) lookupLocked(id string) *lease {
	k, ok := parseLeaseID(id)
	if !ok {
		return nil
	}
	return s.leases[k]
}

// sequencer is the lease's sequencer, signed if the daemon signs.
func (l *lease) sequencer() string {
	if l.signed != "" {
		return l.signed
	}
	return fence.FormatSequencer(l.name, l.grant.Token)
}

// contenderData is stored in each contender node. `seqd lock` writes the
// same keys (owner, command), so that Status names its holders too.
type contenderData struct {
	Owner   string `json:"owner"`
	Daemon  string `json:"daemon,omitempty"`
	Command string `json:"command,omitempty"`
}

// view is the API form of l; s.mu must be held.
func (l *lease) view() Lease {
	return Lease{
		Name:      l.name,
		Token:     l.grant.Token,
		Sequencer: l.sequencer(),
		LeaseID:   l.id.String(),
		Owner:     l.owner,
		TTL:       Duration(l.ttl),
		ExpiresAt: l.expires.UTC(),
		Term:      l.term(),
		Limit:     int(l.limit),
		Mode:      l.mode(),
	}
}

// term is the leadership's term; 0 for a lock's lease.
func (l *lease) term() uint64 {
	if l.kind == electionLease {
		return l.grant.Token
	}
	return 0
}

// mode is the lease's mode on the wire: "shared", or "" for exclusive.
func (l *lease) mode() string {
	if l.shared {
		return ModeShared
	}
	return ""
}

// end moves a live lease to state, counts and logs it, and releases its
// grant (a no-op for a grant already lost). It reports whether this call
// ended the lease.
func (s *Service) end(ctx context.Context, l *lease, state leaseState, reason string) bool {
	s.mu.Lock()
	ok := s.claimLocked(l, state)
	s.mu.Unlock()
	if ok {
		s.ended(ctx, l, state, reason, false)
	}
	return ok
}

// claimLocked moves l to state and forgets it if it is live (and, for
// expiry, past its TTL), reporting whether it did; s.mu must be held. The
// caller then calls ended.
func (s *Service) claimLocked(l *lease, state leaseState) bool {
	if l.state != live || state == expired && s.clock.Now().Before(l.expires) {
		return false
	}
	l.state = state
	delete(s.leases, l.id)
	if key := leaseKey(l.kind, l.name); s.byName[key] == l {
		delete(s.byName, key)
	}
	s.unscheduleLocked(l)
	return true
}

// ended releases the grant of l, which claimLocked has ended, and counts
// and logs the end. closing (Close, with the session about to close) leaves
// the contender to the session's close where no lock-delay marker needs a
// clean release (see zklock.Grant.ReleaseOnClose).
func (s *Service) ended(ctx context.Context, l *lease, state leaseState, reason string, closing bool) {
	release := l.grant.Release
	switch {
	case state == expired:
		// Not a clean release: a lock-delay applies before the next grant.
		release = l.grant.Abandon
	case closing:
		release = l.grant.ReleaseOnClose
	}
	err := release(ctx)
	if l.kind == electionLease {
		s.watches.touch(watchKey{election: true, name: l.name})
		s.log.Info("leadership ended", "election", l.name, "term", l.grant.Token, "owner", l.owner, "how", reason, "err", l.grant.Err())
		return
	}
	s.m.Release(l.name, reason)
	switch {
	case state == expired:
		s.log.Warn("lease expired", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	case state == lost:
		s.log.Warn("lease lost", "lock", l.name, "token", l.grant.Token, "owner", l.owner, "err", l.grant.Err())
	case closing:
		// One line for all of them: Close logs how many.
		s.log.Debug("released", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	default:
		s.log.LogAttrs(ctx, slog.LevelDebug, "released", slog.String("lock", l.name), slog.Uint64("token", l.grant.Token), slog.String("owner", l.owner))
	}
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		s.log.Warn("release: contender left for the janitor", "lock", l.name, "err", err)
	}
}

// leaseFor finds the live lease for a renew or release. If there is none,
// it asks ZooKeeper for the lock's current token and answers 409:
// stale_token when the lock has moved on to a higher token, lost otherwise.
func (s *Service) leaseFor(ctx context.Context, k leaseKind, name, leaseID string, token uint64, source string) (*lease, error) {
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
	l := s.lookupLocked(leaseID)
	s.mu.Unlock()
	if l != nil && l.kind != k {
		return nil, fmt.Errorf("%w: lease %s is not for %s %q", ErrBadRequest, leaseID, k, name)
	}
	if l != nil && l.limit != 0 {
		return nil, fmt.Errorf("%w: lease %s is for semaphore %q, not lock %q", ErrBadRequest, leaseID, l.name, name)
	}
	if l != nil && l.name != name {
		return nil, fmt.Errorf("%w: lease %s is for %s %q, not %q", ErrBadRequest, leaseID, k, l.name, name)
	}
	if l != nil && l.grant.Err() == nil && token == l.grant.Token {
		return l, nil
	}
	if l != nil && token > l.grant.Token {
		return nil, fmt.Errorf("%w: token %d was never issued to lease %s", ErrBadRequest, token, leaseID)
	}
	// The lease is gone (or the token is older than the lease's): what is
	// the lock's token now?
	cur, err := s.currentToken(ctx, k, name)
	if err != nil {
		return nil, err
	}
	if cur > token {
		if k == lockLease {
			s.m.StaleRejected(name, source)
		}
		s.log.Warn("stale token rejected", "lock", name, "token", token, "current_token", cur, "source", source)
		return nil, &ConflictError{Err: &fence.StaleTokenError{Key: name, Token: token, Max: cur}, Name: name, Token: token, CurrentToken: cur, Election: k == electionLease}
	}
	return nil, &ConflictError{Err: ErrLost, Name: name, Token: token, CurrentToken: cur, Election: k == electionLease, Ended: s.endedAs(l)}
}

// endedAs names how l ended, for messages; "" when the daemon no longer
// knows the lease.
func (s *Service) endedAs(l *lease) string {
	if l == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.state {
	case released:
		return "released"
	case expired:
		return "expired"
	}
	return "lost"
}

// Renew extends a live lease by its TTL (or ttl, if not zero) and keeps its
// token. While ZooKeeper is unreachable it answers ErrUnavailable: the
// lease cannot be vouched for.
func (s *Service) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.renew(ctx, lockLease, name, leaseID, token, ttl)
}

func (s *Service) renew(ctx context.Context, k leaseKind, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	if ttl != 0 {
		if err := validateTTL(ttl); err != nil {
			return Lease{}, err
		}
	}
	l, err := s.leaseFor(ctx, k, name, leaseID, token, metrics.SourceRenew)
	if err != nil {
		return Lease{}, err
	}
	return s.renewLease(ctx, k, l, leaseID, token, ttl, true)
}

// renewLease extends the live lease l (ttl 0 keeps its TTL). With verify,
// it first checks that l's contender is still the lowest (a lock's or an
// election's; a semaphore's holders are not ordered that way).
func (s *Service) renewLease(ctx context.Context, k leaseKind, l *lease, leaseID string, token uint64, ttl time.Duration, verify bool) (Lease, error) {
	name := l.name
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper; the lease cannot be renewed now", ErrUnavailable)
	}
	// Still the lowest contender? One planted below it has taken the lock,
	// and check would already name another holder.
	if verify {
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
				if _, err := s.leaseFor(ctx, k, name, leaseID, token, metrics.SourceRenew); err != nil {
					return Lease{}, err
				}
			}
			return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token, Election: k == electionLease, Ended: s.endedAs(l)}
		}
	}
	s.mu.Lock()
	// Not past its TTL (the expiry schedule may not have ended it yet) and its
	// grant not lost: a renewal never revives a lease that has ended.
	if l.state != live || l.grant.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token, Election: k == electionLease, Ended: s.endedAs(l)}
	}
	if ttl != 0 {
		l.ttl = ttl
	}
	l.expires = s.clock.Now().Add(l.ttl)
	s.scheduleLocked(l)
	out := l.view()
	s.mu.Unlock()
	if k == lockLease {
		s.m.Renewal(name)
	}
	return out, nil
}

// Release ends a live lease and deletes its contender.
func (s *Service) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return s.release(ctx, lockLease, name, leaseID, token)
}

func (s *Service) release(ctx context.Context, k leaseKind, name, leaseID string, token uint64) error {
	l, err := s.leaseFor(ctx, k, name, leaseID, token, metrics.SourceRelease)
	if err != nil {
		return err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return &ConflictError{Err: ErrLost, Name: name, Token: token, Election: k == electionLease, Ended: s.endedAs(l)}
	}
	return nil
}

// SafeFor is how long the live lease id on name is guaranteed to hold: until
// its TTL passes or the session could expire, whichever is first (0 once it
// has ended). ok is false when id is not a lease of name on this daemon.
func (s *Service) SafeFor(name, id string) (safe time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lookupLocked(id)
	if l == nil || l.name != name || l.kind != lockLease {
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
		if l.kind != lockLease {
			continue
		}
		v := l.view()
		v.LeaseID = "" // a listing never gives out what proves a lease
		out = append(out, v)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package sequencer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/zklock"
)

// Elections: a campaign is a lease on an election (zklock.Election) whose
// token is the leader's term; renew and resign are a lock lease's renew and
// release. The daemon's own campaigns (Config.Campaigns) run for as long as
// the Service does.

// DefaultElectionRoot is the znode under which election nodes live.
const DefaultElectionRoot = zklock.DefaultElectionRoot

func (s *Service) election(sess *zklock.Session, name string) (*zklock.Election, error) {
	e, err := zklock.NewElection(sess, name, zklock.WithRoot(s.cfg.ElectionRoot), zklock.WithTokenMode(s.cfg.TokenMode))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return e, nil
}

func validateValue(value string) error {
	if len(value) > MaxValueBytes {
		return fmt.Errorf("%w: value is %d bytes, longer than %d", ErrBadRequest, len(value), MaxValueBytes)
	}
	return nil
}

// Campaign stands for election name on owner's behalf with value (default
// the owner), waiting up to wait to be elected (0 tries once), and returns
// the leadership as a lease whose Term is its token.
func (s *Service) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := validateAcquire(name, owner, ttl, wait); err != nil {
		return Lease{}, err
	}
	if err := validateValue(value); err != nil {
		return Lease{}, err
	}
	if o.leaseID != "" && !validLeaseID(o.leaseID) {
		return Lease{}, fmt.Errorf("%w: lease_id %.40q must be 32 lowercase hex digits", ErrBadRequest, o.leaseID)
	}
	if value == "" {
		value = owner
	}
	sess, err := s.liveSession()
	if err != nil {
		return Lease{}, err
	}
	if o.leaseID != "" {
		if out, ok, err := s.extendOwn(electionLease, name, owner, o.leaseID, ttl, 0); ok || err != nil {
			return out, err
		}
	}
	e, err := s.election(sess, name)
	if err != nil {
		return Lease{}, err
	}
	var lead *zklock.Leadership
	if wait == 0 {
		lead, err = e.TryCampaign(ctx, []byte(value))
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		lead, err = e.Campaign(wctx, []byte(value))
		cancel()
	}
	if err != nil {
		return Lease{}, s.campaignError(ctx, sess, e, name, err)
	}
	return s.admit(ctx, &lease{kind: electionLease, grant: lead.Grant, lead: lead}, name, owner, o.leaseID, ttl, 0)
}

// campaignError maps a failed campaign like acquireError: not elected
// within the wait is a *ConflictError with the leader's term.
func (s *Service) campaignError(ctx context.Context, sess *zklock.Session, e *zklock.Election, name string, err error) error {
	if errors.Is(err, zklock.ErrHeld) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && sess.Connected() {
		ce := &ConflictError{Err: ErrHeld, Name: name, Election: true}
		if l, lerr := e.Leader(context.WithoutCancel(ctx)); lerr == nil {
			ce.CurrentToken = l.Term
		}
		return ce
	}
	if ctx.Err() != nil && !errors.Is(err, zklock.ErrUnavailable) {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// RenewElection extends a leadership lease, as Renew does a lock's.
func (s *Service) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.renew(ctx, electionLease, name, leaseID, token, ttl)
}

// Resign ends a leadership lease and deletes its candidate, so that the
// next candidate is elected at once.
func (s *Service) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return s.release(ctx, electionLease, name, leaseID, token)
}

// Proclaim sets the value of a live leadership lease, keeping its term.
func (s *Service) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	if err := validateValue(value); err != nil {
		return Lease{}, err
	}
	l, err := s.leaseFor(ctx, electionLease, name, leaseID, token, "proclaim")
	if err != nil {
		return Lease{}, err
	}
	if _, err := s.liveSession(); err != nil {
		return Lease{}, err
	}
	if err := l.lead.Proclaim(ctx, []byte(value)); err != nil {
		if errors.Is(err, zklock.ErrLockLost) || errors.Is(err, zklock.ErrReleased) {
			return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token, Election: true}
		}
		if ctx.Err() != nil {
			return Lease{}, ctx.Err()
		}
		return Lease{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s.mu.Lock()
	out := l.view()
	s.mu.Unlock()
	return out, nil
}

// leader reads name's leader from ZooKeeper.
func (s *Service) leader(ctx context.Context, name string) (zklock.Leader, error) {
	sess, err := s.liveSession()
	if err != nil {
		return zklock.Leader{}, err
	}
	e, err := s.election(sess, name)
	if err != nil {
		return zklock.Leader{}, err
	}
	l, err := e.Leader(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return zklock.Leader{}, ctx.Err()
		}
		return zklock.Leader{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return l, nil
}

// ElectionStatus reads an election's leader from ZooKeeper.
func (s *Service) ElectionStatus(ctx context.Context, name string) (ElectionStatus, error) {
	if err := validateName(name); err != nil {
		return ElectionStatus{}, err
	}
	l, err := s.leader(ctx, name)
	if err != nil {
		return ElectionStatus{}, err
	}
	return s.electionStatus(name, l), nil
}

// electionStatus is the API form of l; self is decided now, from the
// leaderships this daemon holds.
func (s *Service) electionStatus(name string, l zklock.Leader) ElectionStatus {
	st := ElectionStatus{Name: name, Candidates: l.Candidates, Index: l.Index}
	if !l.Elected {
		return st
	}
	st.Leader = &LeaderView{Value: string(l.Value), Term: l.Term, Since: l.Since.UTC()}
	owner, ok := s.selfLeads(name, l.Term)
	st.Leader.Owner, st.Self = owner, ok
	return st
}

// selfLeads reports whether a leadership of this daemon with term is live
// now, and its owner.
func (s *Service) selfLeads(name string, term uint64) (string, bool) {
	sess, err := s.session()
	if err != nil || !sess.Live() {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.byName[leaseKey(electionLease, name)]; l != nil && l.state == live && l.grant.Err() == nil && l.grant.Token == term {
		return l.owner, true
	}
	if c := s.own[name]; c != nil && c.lead != nil && c.lead.Err() == nil && c.lead.Term == term {
		return c.owner, true
	}
	return "", false
}

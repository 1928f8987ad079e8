package sequencer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// ZooKeeper reads: the lock's current holder and token, for check, status
// and the answers to a renew or release of a lease that has ended. They
// work for locks held through any daemon.

// currentToken reads the lock's current token from ZooKeeper (0 if none is
// known: nobody holds it, in zxid mode).
func (s *Service) currentToken(ctx context.Context, k leaseKind, name string) (uint64, error) {
	if k == electionLease {
		l, err := s.leader(ctx, name)
		return l.Term, err
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return 0, err
	}
	return h.Token, nil
}

// liveSession is the session, if it can be trusted now.
func (s *Service) liveSession() (*zklock.Session, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	if !sess.Connected() || !sess.Live() {
		return nil, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	return sess, nil
}

// holder reads name's holder. It answers ErrUnavailable at once while the
// session is down or past its deadline, and within a fraction of the
// session timeout when ZooKeeper stops answering (zklock bounds the reads).
func (s *Service) holder(ctx context.Context, name string) (zklock.Holder, error) {
	sess, err := s.session()
	if err != nil {
		return zklock.Holder{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return zklock.Holder{}, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode))
	if err != nil {
		return zklock.Holder{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	h, err := mu.Holder(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return zklock.Holder{}, ctx.Err()
		}
		return zklock.Holder{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return h, nil
}

// parseSequencer reads a sequencer sent to check: a signed one must verify
// with the daemon's keys (a plain one is read as it is: check compares its
// token with ZooKeeper's anyway).
func (s *Service) parseSequencer(seq string) (string, uint64, error) {
	if s.cfg.Verifier != nil {
		name, token, err := s.cfg.Verifier.Verify(seq)
		if !errors.Is(err, fence.ErrUnsigned) {
			return name, token, err
		}
	}
	return fence.ParseSequencer(seq)
}

// Check answers whether token is the current holder's token of name,
// reading ZooKeeper (so it answers for holders on other daemons). It
// returns the current token, and a *ConflictError when the token is not it.
func (s *Service) Check(ctx context.Context, name string, token uint64) (uint64, error) {
	if err := validateName(name); err != nil {
		return 0, err
	}
	if token == 0 {
		return 0, fmt.Errorf("%w: token is required and must be a positive integer", ErrBadRequest)
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return 0, err
	}
	if h.Held && h.Token == token {
		return token, nil
	}
	if token < h.Token {
		s.m.StaleRejected(name, metrics.SourceCheck)
		s.log.Warn("stale token rejected", "lock", name, "token", token, "current_token", h.Token, "source", metrics.SourceCheck)
		return h.Token, &ConflictError{Err: &fence.StaleTokenError{Key: name, Token: token, Max: h.Token}, Name: name, Token: token, CurrentToken: h.Token}
	}
	return h.Token, &ConflictError{Err: ErrNotHeld, Name: name, Token: token, CurrentToken: h.Token}
}

// Status reads a lock's state from ZooKeeper.
func (s *Service) Status(ctx context.Context, name string) (LockStatus, error) {
	if err := validateName(name); err != nil {
		return LockStatus{}, err
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return LockStatus{}, err
	}
	return s.lockStatus(name, h), nil
}

// lockStatus is the API form of h; s.mu must not be held.
func (s *Service) lockStatus(name string, h zklock.Holder) LockStatus {
	st := LockStatus{Name: name, Held: h.Held, Token: h.Token, Waiters: h.Waiters, Index: h.Index, BlockedBy: h.Blocked, OwnerRewritten: h.DataRewritten}
	if h.Held {
		var cd contenderData
		if json.Unmarshal(h.Data, &cd) == nil {
			st.Owner, st.Command = cd.Owner, cd.Command
		}
		s.mu.Lock()
		if l := s.byName[name]; l != nil && l.grant.Token == h.Token {
			exp := l.expires.UTC()
			st.ExpiresAt = &exp
		}
		s.mu.Unlock()
	}
	return st
}

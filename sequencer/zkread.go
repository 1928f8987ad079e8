package sequencer

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// ZooKeeper reads: a lock's current holder and token, an election's leader,
// for check, status and the answers to a renew or release of a lease that
// has ended. They work for grants held through any daemon.

// currentToken reads the current token of a kind with one holder at a
// time: a lock's holder's, an election's term (0 if none is known: nobody
// holds it, in zxid mode). A shared hold or a semaphore has no single
// current token: 0.
func (s *Service) currentToken(ctx context.Context, k fence.Kind, name string) (uint64, error) {
	switch k {
	case fence.KindElection:
		l, err := s.leader(ctx, name)
		return l.Term, err
	case fence.KindLock:
		h, err := s.holder(ctx, name)
		return h.Token, err
	}
	return 0, nil
}

// liveSession is the session, if it can be trusted now.
func (s *Service) liveSession() (*zklock.Session, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	if !sess.Connected() || !sess.Live() {
		return nil, unavailable("disconnected from zookeeper", nil)
	}
	return sess, nil
}

// readError is the answer to a read that ZooKeeper did not answer: the
// caller's own cancellation, or unavailable.
func (s *Service) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable("zookeeper did not answer", err)
}

// holder reads name's holder. It answers unavailable at once while the
// session is down or past its deadline, and within a fraction of the
// session timeout when ZooKeeper stops answering (zklock bounds the reads).
func (s *Service) holder(ctx context.Context, name string) (zklock.Holder, error) {
	sess, err := s.liveSession()
	if err != nil {
		return zklock.Holder{}, err
	}
	mu, err := s.mutex(sess, name)
	if err != nil {
		return zklock.Holder{}, err
	}
	h, err := mu.Holder(ctx)
	if err != nil {
		return zklock.Holder{}, s.readError(ctx, err)
	}
	return h, nil
}

// mutex names the lock name on sess for a read.
func (s *Service) mutex(sess *zklock.Session, name string) (*zklock.Mutex, error) {
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return mu, nil
}

// parseSequencer reads a sequencer sent to check: a signed one must verify
// with the daemon's keys (a plain one is read as it is: check compares its
// token with ZooKeeper's anyway).
func (s *Service) parseSequencer(seq string) (fence.Sequencer, error) {
	if s.cfg.Verifier != nil {
		got, err := s.cfg.Verifier.Verify(seq)
		if !errors.Is(err, fence.ErrUnsigned) {
			return got, err
		}
	}
	return fence.ParseSequencer(seq)
}

// Check answers whether seq's token is its grantor's current holder's,
// reading ZooKeeper, so that it answers for holders on other daemons: an
// exclusive lock's holder, an election's leader (its term), or, for the
// kinds that hold side by side, one of a semaphore's holders or of a lock's
// readers. It returns the current token (for a shared hold or a semaphore
// slot: seq's own while it holds, 0 otherwise), and a *ConflictError when
// the token does not hold: stale when a later token holds an exclusive
// lock or leads the election.
func (s *Service) Check(ctx context.Context, seq fence.Sequencer) (uint64, error) {
	if err := validateName(familyOf(seq.Kind), seq.Name); err != nil {
		return 0, err
	}
	if seq.Token == 0 {
		return 0, badRequest("token is required and must be a positive integer")
	}
	held, cur, err := s.current(ctx, seq)
	if err != nil {
		return 0, err
	}
	if held {
		return seq.Token, nil
	}
	if seq.Token < cur {
		if seq.Kind != fence.KindElection {
			s.m.StaleRejected(seq.Name, metrics.SourceCheck)
		}
		s.log.Warn("stale token rejected", noun(seq.Kind), seq.Name, "token", seq.Token, "current_token", cur, "source", metrics.SourceCheck)
		return cur, &ConflictError{Err: &fence.StaleTokenError{Key: seq.Name, Token: seq.Token, Max: cur}, Kind: seq.Kind, Name: seq.Name, Token: seq.Token, CurrentToken: cur}
	}
	return cur, &ConflictError{Err: api.ErrNotHeld, Kind: seq.Kind, Name: seq.Name, Token: seq.Token, CurrentToken: cur}
}

// current reads whether seq's token holds now, and the token that rules
// out older ones: the exclusive holder's token or the leader's term (0 for
// a semaphore).
func (s *Service) current(ctx context.Context, seq fence.Sequencer) (held bool, cur uint64, err error) {
	switch seq.Kind {
	case fence.KindElection:
		l, err := s.leader(ctx, seq.Name)
		return l.Elected && l.Term == seq.Token, l.Term, err
	case fence.KindSemaphore:
		sess, err := s.liveSession()
		if err != nil {
			return false, 0, err
		}
		sem, err := s.semaphore(sess, seq.Name)
		if err != nil {
			return false, 0, err
		}
		held, err := sem.HoldsToken(ctx, seq.Token)
		if err != nil {
			return false, 0, s.readError(ctx, err)
		}
		return held, 0, nil
	}
	h, err := s.holder(ctx, seq.Name)
	if err != nil || seq.Kind == fence.KindLock {
		// A reader's token asked in the exclusive form does not hold: a
		// resource asking for a writer must not admit a reader.
		return h.Held && !h.Shared && h.Token == seq.Token, h.Token, err
	}
	// A reader: it holds while its node is among the readers ahead of
	// every writer; an exclusive holder's later token makes it stale.
	sess, err := s.liveSession()
	if err != nil {
		return false, 0, err
	}
	rl, err := zklock.NewReadLock(sess, seq.Name, zklock.WithRoot(s.cfg.Root))
	if err != nil {
		return false, 0, badRequest("%v", err)
	}
	held, err = rl.HoldsToken(ctx, seq.Token)
	if err != nil {
		return false, 0, s.readError(ctx, err)
	}
	if h.Held {
		cur = h.Token // a writer holds: older readers are stale
	}
	return held, cur, nil
}

// Status reads a lock's state from ZooKeeper.
func (s *Service) Status(ctx context.Context, name string) (api.LockStatus, error) {
	if err := validateName(api.Locks, name); err != nil {
		return api.LockStatus{}, err
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return api.LockStatus{}, err
	}
	st := s.lockStatus(name, h)
	return st, s.queueLock(ctx, &st)
}

// lockStatus is the API form of h; s.mu must not be held.
func (s *Service) lockStatus(name string, h zklock.Holder) api.LockStatus {
	st := api.LockStatus{Name: name, Held: h.Held, Token: h.Token, Waiters: h.Waiters, Index: h.Index, BlockedBy: h.Blocked, OwnerRewritten: h.DataRewritten}
	if h.Held {
		var cd contenderData
		if json.Unmarshal(h.Data, &cd) == nil {
			st.Owner, st.Command = cd.Owner, cd.Command
		}
		s.mu.Lock()
		if l := s.byName[byNameKey{fence.KindLock, name}]; l != nil && l.grant.Token == h.Token {
			exp := l.expires.UTC()
			st.ExpiresAt = &exp
		}
		s.mu.Unlock()
	}
	return st
}

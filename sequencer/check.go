package sequencer

import (
	"context"
	"errors"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Check: whether a token is its grantor's current holder's, read from
// ZooKeeper so that it answers for grants held through any daemon.

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

// check answers whether seq's token is its grantor's current holder's,
// reading ZooKeeper, so that it answers for holders on other daemons: an
// exclusive lock's holder, an election's leader (its term), or, for the
// kinds that hold side by side, one of a semaphore's holders or of a lock's
// readers. It returns the current token (for a shared hold or a semaphore
// slot: seq's own while it holds, 0 otherwise), and a *ConflictError when
// the token does not hold: stale when a later token holds an exclusive
// lock or leads the election.
func (s *Service) check(ctx context.Context, seq fence.Sequencer) (uint64, error) {
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
		sem, err := s.recipes.semaphore(sess, seq.Name)
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

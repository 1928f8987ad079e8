package sequencer

import (
	"context"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// What ZooKeeper says now, read on the leases' session: a lock's holder,
// an election's leader, a semaphore's holders, the current token of a
// lock or an election.

// holder reads name's holder. It answers unavailable at once while the
// session is down or past its deadline, and within a fraction of the
// session timeout when ZooKeeper stops answering (zklock bounds the reads).
func (s *Service) holder(ctx context.Context, name string) (zklock.Holder, error) {
	sess, err := s.liveSession()
	if err != nil {
		return zklock.Holder{}, err
	}
	mu, err := s.recipes.mutex(sess, name)
	if err != nil {
		return zklock.Holder{}, err
	}
	h, err := mu.Holder(ctx)
	if err != nil {
		return zklock.Holder{}, s.readError(ctx, err)
	}
	return h, nil
}

// leader reads name's leader from ZooKeeper.
func (s *Service) leader(ctx context.Context, name string) (zklock.Leader, error) {
	sess, err := s.liveSession()
	if err != nil {
		return zklock.Leader{}, err
	}
	e, err := s.recipes.election(sess, name)
	if err != nil {
		return zklock.Leader{}, err
	}
	l, err := e.Leader(ctx)
	if err != nil {
		return zklock.Leader{}, s.readError(ctx, err)
	}
	return l, nil
}

// semaphoreState reads name's holders and limit from ZooKeeper.
func (s *Service) semaphoreState(ctx context.Context, name string) (zklock.SemaphoreState, error) {
	sess, err := s.liveSession()
	if err != nil {
		return zklock.SemaphoreState{}, err
	}
	sem, err := s.recipes.semaphore(sess, name)
	if err != nil {
		return zklock.SemaphoreState{}, err
	}
	st, err := sem.State(ctx)
	if err != nil {
		return zklock.SemaphoreState{}, s.readError(ctx, err)
	}
	return st, nil
}

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

package sequencer

import (
	"context"
	"encoding/json"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/zklock"
)

// The exclusive lock family's reads: a lock's holder and its status, read
// from ZooKeeper, so that they answer for holders on any daemon. The grant
// itself is in acquire.go, shared by every kind.

// readLock reads a lock's state from ZooKeeper.
func (s *Service) readLock(ctx context.Context, name string) (api.LockStatus, error) {
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

// lockStatus is the API form of h.
func (s *Service) lockStatus(name string, h zklock.Holder) api.LockStatus {
	st := api.LockStatus{Name: name, Held: h.Held, Token: h.Token, Waiters: h.Waiters, Index: h.Index, BlockedBy: h.Blocked, OwnerRewritten: h.DataRewritten}
	if h.Held {
		var cd contenderData
		if json.Unmarshal(h.Data, &cd) == nil {
			st.Owner, st.Command = cd.Owner, cd.Command
		}
		st.ExpiresAt = s.leases.expiresAt(api.Locks, name, h.Token, false)
	}
	return st
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

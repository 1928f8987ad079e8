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

package sequencer

import (
	"context"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// Semaphores: leases on one of limit slots, with the lock leases' lifecycle
// (TTL, renew, release, loss with the session). Their ZooKeeper layout is
// Curator's InterProcessSemaphoreV2's, under the semaphore root, and the
// first acquirer records the limit in the semaphore's node.

// acquireSemaphore grants req.Owner one of req.Limit slots of name for
// req.TTL, waiting up to req.Wait (0 tries once). Every holder must name
// the limit the first recorded: another is a *ConflictError
// (client.ErrLimitMismatch) with the recorded one. The lease's token is
// above every earlier grant's on the semaphore.
func (s *Service) acquireSemaphore(ctx context.Context, name string, req api.SemaphoreAcquireRequest) (api.Lease, error) {
	g, err := readGrant(api.Semaphores, name, req.Owner, req.LeaseID, req.TTL, req.Wait)
	if err != nil {
		return api.Lease{}, err
	}
	retryOnly := req.Limit == 0 && req.LeaseID != ""
	if !retryOnly && (req.Limit < 1 || req.Limit > api.MaxSemaphoreLimit) {
		return api.Lease{}, badRequest("limit %d is out of range: it must be between 1 and %d", req.Limit, api.MaxSemaphoreLimit)
	}
	sess, err := s.liveSession()
	if err != nil {
		return api.Lease{}, err
	}
	out, ok, err := s.retry(g, func(l *lease) string {
		switch {
		case l.kind != fence.KindSemaphore:
			return "kind"
		case req.Limit != 0 && int(l.limit) != req.Limit:
			return "limit"
		}
		return ""
	})
	if ok || err != nil {
		return out, err
	}
	if retryOnly {
		return api.Lease{}, badRequest("limit is required: lease_id %s is no live lease to retry", req.LeaseID)
	}
	sem, err := zklock.NewSemaphore(sess, name, req.Limit, zklock.WithRoot(s.cfg.SemaphoreRoot), zklock.WithData(s.contenderData(g.owner)))
	if err != nil {
		return api.Lease{}, badRequest("%v", err)
	}
	gr, err := waitFor(ctx, g.wait, sem.Acquire, sem.TryAcquire)
	if err != nil {
		err = s.grantError(ctx, sess, fence.KindSemaphore, name, err, func(context.Context) uint64 { return 0 })
		if ce, ok := err.(*ConflictError); ok && ce.Limit == 0 {
			ce.Limit = req.Limit // a full semaphore: say how many slots it has
		}
		return api.Lease{}, err
	}
	return s.admit(ctx, &lease{kind: fence.KindSemaphore, grant: gr}, g, req.Limit)
}

// readSemaphore reads the semaphore's holders from ZooKeeper.
func (s *Service) readSemaphore(ctx context.Context, name string) (api.SemaphoreStatus, error) {
	if err := validateName(api.Semaphores, name); err != nil {
		return api.SemaphoreStatus{}, err
	}
	st, err := s.semaphoreState(ctx, name)
	if err != nil {
		return api.SemaphoreStatus{}, err
	}
	out := semaphoreStatus(name, st)
	return out, s.queueSemaphore(ctx, &out)
}

func semaphoreStatus(name string, st zklock.SemaphoreState) api.SemaphoreStatus {
	return api.SemaphoreStatus{Name: name, Holders: st.Holders, Limit: st.Limit, Index: st.Index}
}

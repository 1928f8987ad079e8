package httpapi

import (
	"context"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// Service is what the handler asks of the lease service: its verbs, each
// of which judges the caller the handler attached to its context, and the
// Authority that names callers. *sequencer.Service implements it.
type Service interface {
	Authority() *policy.Authority
	Ready() bool

	Acquire(ctx context.Context, name string, req api.AcquireRequest) (api.Lease, error)
	AcquireSemaphore(ctx context.Context, name string, req api.SemaphoreAcquireRequest) (api.Lease, error)
	Campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Lease, error)
	AcquireMulti(ctx context.Context, req api.MultiAcquireRequest) (api.MultiLease, error)

	Renew(ctx context.Context, f api.Family, name string, req api.LeaseRequest) (api.Lease, error)
	RenewMany(ctx context.Context, req api.RenewManyRequest) ([]api.Lease, []error, error)
	RenewMulti(ctx context.Context, req api.MultiLeaseRequest) (api.MultiLease, error)
	Release(ctx context.Context, f api.Family, name string, req api.LeaseRequest) error
	ReleaseMulti(ctx context.Context, req api.MultiLeaseRequest) (api.ReleaseResponse, error)
	Proclaim(ctx context.Context, name string, req api.ProclaimRequest) (api.Lease, error)
	Break(ctx context.Context, f api.Family, name string, req api.BreakRequest, by string) (api.BreakResponse, error)

	ParseSequencer(seq string) (fence.Sequencer, error)
	Check(ctx context.Context, seq fence.Sequencer) (uint64, error)

	Status(ctx context.Context, name string) (api.LockStatus, error)
	SemaphoreStatus(ctx context.Context, name string) (api.SemaphoreStatus, error)
	ElectionStatus(ctx context.Context, name string) (api.ElectionStatus, error)
	WaitLock(ctx context.Context, name string, index uint64, wait time.Duration) (api.LockStatus, error)
	WaitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (api.SemaphoreStatus, error)
	WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (api.ElectionStatus, error)
	SafeFor(ctx context.Context, f api.Family, name, id string) (time.Duration, bool)
	MultiLockStatus(ctx context.Context, id string, blocking bool, index uint64, wait time.Duration) (api.MultiLockStatus, error)

	Leases(ctx context.Context, f api.Family) []api.Lease
	MultiLeases(ctx context.Context) []api.MultiLease
	Overview(ctx context.Context, f api.Family, blocking bool, index uint64, wait time.Duration) (api.Overview, error)
}

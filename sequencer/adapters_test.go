package sequencer_test

// Adapters that give the tests one call shape for the Service in process
// and for the client over HTTP: positional owner, ttl and wait, and a lease
// named by its name, id and token. Each turns its arguments into the
// request the API takes and nothing else.

import (
	"context"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
)

// Aliases for the wire types the tests name.
type (
	Lease           = api.Lease
	LockStatus      = api.LockStatus
	ElectionStatus  = api.ElectionStatus
	SemaphoreStatus = api.SemaphoreStatus
	CheckResponse   = api.CheckResponse
	APIError        = api.APIError
	RenewItem       = api.RenewItem
	RenewResult     = api.RenewResult
	Duration        = api.Duration
	ErrorBody       = api.ErrorBody
)

// Errors and codes the tests name.
var (
	ErrHeld        = api.ErrHeld
	ErrLost        = api.ErrLost
	ErrUnavailable = api.ErrUnavailable
	ErrBadRequest  = api.ErrBadRequest
	ErrNotHeld     = api.ErrNotHeld
)

const (
	CodeHeld         = api.CodeHeld
	CodeLost         = api.CodeLost
	CodeStaleToken   = api.CodeStaleToken
	CodeNotHeld      = api.CodeNotHeld
	CodeBadRequest   = api.CodeBadRequest
	CodeBadSignature = api.CodeBadSignature
	CodeUnavailable  = api.CodeUnavailable
	ModeShared       = api.ModeShared
	ModeExclusive    = api.ModeExclusive
	DefaultTTL       = api.DefaultTTL
	MaxWait          = api.MaxWait
	IndexHeader      = api.IndexHeader
	MaxBodyBytes     = api.MaxBodyBytes
	MaxValueBytes    = api.MaxValueBytes
	MaxRenewBatch    = api.MaxRenewBatch
	CodeMethod       = api.CodeMethod
	CodeUnauthorized = api.CodeUnauthorized
	CodeNotFound     = api.CodeNotFound
	CodeInternal     = api.CodeInternal
)

// AcquireOption is an option of a test's grant: WithShared, WithLockDelay,
// WithLeaseID.
type AcquireOption func(*grantOpts)

type grantOpts struct {
	shared  bool
	delay   *time.Duration
	leaseID string
}

func WithShared() AcquireOption                   { return func(o *grantOpts) { o.shared = true } }
func WithLockDelay(d time.Duration) AcquireOption { return func(o *grantOpts) { o.delay = &d } }
func WithLeaseID(id string) AcquireOption         { return func(o *grantOpts) { o.leaseID = id } }

func grantOptions(opts []AcquireOption) grantOpts {
	var o grantOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

func durPtr(d time.Duration) *api.Duration {
	if d == 0 {
		return nil
	}
	x := api.Duration(d)
	return &x
}

func acquireRequest(owner string, ttl, wait time.Duration, opts []AcquireOption) api.AcquireRequest {
	o := grantOptions(opts)
	req := api.AcquireRequest{Owner: owner, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)}
	if o.shared {
		req.Mode = api.ModeShared
	}
	if o.delay != nil {
		x := api.Duration(*o.delay)
		req.LockDelay = &x
	}
	return req
}

func leaseRequest(leaseID string, token uint64, ttl time.Duration) api.LeaseRequest {
	return api.LeaseRequest{LeaseID: leaseID, Token: token, TTL: durPtr(ttl)}
}

// tsvc is the Service with the tests' call shapes.
type tsvc struct{ *sequencer.Service }

func (s tsvc) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	return s.Service.Acquire(ctx, name, acquireRequest(owner, ttl, wait, opts))
}

func (s tsvc) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, api.Locks, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, api.Locks, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Check(ctx context.Context, name string, token uint64) (uint64, error) {
	return s.Service.Check(ctx, fence.Sequencer{Name: name, Token: token})
}

func (s tsvc) Leases() []Lease { return s.Service.Leases(context.Background(), api.Locks) }

func (s tsvc) AcquireSemaphore(ctx context.Context, name, owner string, limit int, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	return s.Service.AcquireSemaphore(ctx, name, api.SemaphoreAcquireRequest{Owner: owner, Limit: limit, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)})
}

func (s tsvc) RenewSemaphore(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, api.Semaphores, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, api.Semaphores, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	return s.Service.Campaign(ctx, name, api.CampaignRequest{Owner: owner, Value: value, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)})
}

func (s tsvc) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, api.Elections, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, api.Elections, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	return s.Service.Proclaim(ctx, name, api.ProclaimRequest{LeaseID: leaseID, Token: token, Value: value})
}

func (s tsvc) RenewMany(ctx context.Context, items []RenewItem, ttl time.Duration) ([]Lease, []error, error) {
	return s.Service.RenewMany(ctx, api.RenewManyRequest{Leases: items, TTL: durPtr(ttl)})
}

// tclient is the client with the tests' call shapes.
type tclient struct{ *client.Client }

func newTClient(addr string) *tclient {
	c, err := client.New(addr, client.WithoutEnv())
	if err != nil {
		panic(err)
	}
	return &tclient{c}
}

func grantOpts3(owner string, ttl, wait time.Duration, leaseID string) []client.GrantOption {
	out := []client.GrantOption{client.Owner(owner), client.TTL(ttl), client.Wait(wait)}
	if leaseID != "" {
		out = append(out, client.LeaseID(leaseID))
	}
	return out
}

func (c *tclient) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	var copts []client.AcquireOption
	for _, g := range grantOpts3(owner, ttl, wait, o.leaseID) {
		copts = append(copts, g)
	}
	if o.shared {
		copts = append(copts, client.Shared())
	}
	if o.delay != nil {
		copts = append(copts, client.LockDelay(*o.delay))
	}
	return c.Client.Acquire(ctx, name, copts...)
}

func (c *tclient) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.RenewID(ctx, api.Locks, name, leaseID, token, ttl)
}

func (c *tclient) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, api.Locks, name, leaseID, token)
}

func (c *tclient) Check(ctx context.Context, name string, token uint64) (CheckResponse, error) {
	return c.CheckToken(ctx, name, token)
}

func (c *tclient) CheckSequencer(ctx context.Context, seq string) (CheckResponse, error) {
	return c.Client.Check(ctx, seq)
}

func (c *tclient) Leases(ctx context.Context) ([]Lease, error) {
	return c.Client.Leases(ctx, api.Locks)
}

func (c *tclient) AcquireSemaphore(ctx context.Context, name, owner string, limit int, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	var copts []client.SemaphoreOption
	for _, g := range grantOpts3(owner, ttl, wait, o.leaseID) {
		copts = append(copts, g)
	}
	return c.Client.AcquireSemaphore(ctx, name, limit, copts...)
}

func (c *tclient) RenewSemaphore(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.RenewID(ctx, api.Semaphores, name, leaseID, token, ttl)
}

func (c *tclient) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, api.Semaphores, name, leaseID, token)
}

func (c *tclient) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	var copts []client.CampaignOption
	for _, g := range grantOpts3(owner, ttl, wait, o.leaseID) {
		copts = append(copts, g)
	}
	return c.Client.AcquireLeadership(ctx, name, value, copts...)
}

func (c *tclient) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.RenewID(ctx, api.Elections, name, leaseID, token, ttl)
}

func (c *tclient) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, api.Elections, name, leaseID, token)
}

func (c *tclient) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	return c.Client.Proclaim(ctx, Lease{Name: name, LeaseID: leaseID, Token: token, Term: token}, value)
}

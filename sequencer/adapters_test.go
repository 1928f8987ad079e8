package sequencer

// Adapters that give the tests one call shape for the Service in process
// and for the client over HTTP: positional owner, ttl and wait, and a lease
// named by its name, id and token. Each turns its arguments into the
// request the API takes and nothing else.

import (
	"context"
	"time"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
)

// Aliases for the wire types the tests name.
type (
	Lease           = client.Lease
	LockStatus      = client.LockStatus
	ElectionStatus  = client.ElectionStatus
	SemaphoreStatus = client.SemaphoreStatus
	CheckResponse   = client.CheckResponse
	APIError        = client.APIError
	RenewItem       = client.RenewItem
	RenewResult     = client.RenewResult
	Duration        = client.Duration
	ErrorBody       = client.ErrorBody
)

// Errors and codes the tests name.
var (
	ErrHeld        = client.ErrHeld
	ErrLost        = client.ErrLost
	ErrUnavailable = client.ErrUnavailable
	ErrBadRequest  = client.ErrBadRequest
	ErrNotHeld     = client.ErrNotHeld
)

const (
	CodeHeld         = client.CodeHeld
	CodeLost         = client.CodeLost
	CodeStaleToken   = client.CodeStaleToken
	CodeNotHeld      = client.CodeNotHeld
	CodeBadRequest   = client.CodeBadRequest
	CodeBadSignature = client.CodeBadSignature
	CodeUnavailable  = client.CodeUnavailable
	ModeShared       = client.ModeShared
	ModeExclusive    = client.ModeExclusive
	DefaultTTL       = client.DefaultTTL
	MaxWait          = client.MaxWait
	IndexHeader      = client.IndexHeader
	MaxBodyBytes     = client.MaxBodyBytes
	MaxValueBytes    = client.MaxValueBytes
	MaxRenewBatch    = client.MaxRenewBatch
	CodeMethod       = client.CodeMethod
	CodeUnauthorized = client.CodeUnauthorized
	CodeNotFound     = client.CodeNotFound
	CodeInternal     = client.CodeInternal
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

func durPtr(d time.Duration) *client.Duration {
	if d == 0 {
		return nil
	}
	x := client.Duration(d)
	return &x
}

func acquireRequest(owner string, ttl, wait time.Duration, opts []AcquireOption) client.AcquireRequest {
	o := grantOptions(opts)
	req := client.AcquireRequest{Owner: owner, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)}
	if o.shared {
		req.Mode = client.ModeShared
	}
	if o.delay != nil {
		x := client.Duration(*o.delay)
		req.LockDelay = &x
	}
	return req
}

func leaseRequest(leaseID string, token uint64, ttl time.Duration) client.LeaseRequest {
	return client.LeaseRequest{LeaseID: leaseID, Token: token, TTL: durPtr(ttl)}
}

// tsvc is the Service with the tests' call shapes.
type tsvc struct{ *Service }

func (s tsvc) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	return s.Service.Acquire(ctx, name, acquireRequest(owner, ttl, wait, opts))
}

func (s tsvc) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, client.Locks, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, client.Locks, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Check(ctx context.Context, name string, token uint64) (uint64, error) {
	return s.Service.Check(ctx, fence.Sequencer{Name: name, Token: token})
}

func (s tsvc) Leases() []Lease { return s.Service.Leases(client.Locks) }

func (s tsvc) AcquireSemaphore(ctx context.Context, name, owner string, limit int, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	return s.Service.AcquireSemaphore(ctx, name, client.SemaphoreAcquireRequest{Owner: owner, Limit: limit, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)})
}

func (s tsvc) RenewSemaphore(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, client.Semaphores, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, client.Semaphores, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	return s.Service.Campaign(ctx, name, client.CampaignRequest{Owner: owner, Value: value, LeaseID: o.leaseID, TTL: durPtr(ttl), Wait: durPtr(wait)})
}

func (s tsvc) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return s.Service.Renew(ctx, client.Elections, name, leaseRequest(leaseID, token, ttl))
}

func (s tsvc) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return s.Service.Release(ctx, client.Elections, name, leaseRequest(leaseID, token, 0))
}

func (s tsvc) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	return s.Service.Proclaim(ctx, name, client.ProclaimRequest{LeaseID: leaseID, Token: token, Value: value})
}

func (s tsvc) RenewMany(ctx context.Context, items []RenewItem, ttl time.Duration) ([]Lease, []error, error) {
	return s.Service.RenewMany(ctx, client.RenewManyRequest{Leases: items, TTL: durPtr(ttl)})
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
	return c.RenewID(ctx, client.Locks, name, leaseID, token, ttl)
}

func (c *tclient) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, client.Locks, name, leaseID, token)
}

func (c *tclient) Check(ctx context.Context, name string, token uint64) (CheckResponse, error) {
	return c.CheckToken(ctx, name, token)
}

func (c *tclient) CheckSequencer(ctx context.Context, seq string) (CheckResponse, error) {
	return c.Client.Check(ctx, seq)
}

func (c *tclient) Leases(ctx context.Context) ([]Lease, error) {
	return c.Client.Leases(ctx, client.Locks)
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
	return c.RenewID(ctx, client.Semaphores, name, leaseID, token, ttl)
}

func (c *tclient) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, client.Semaphores, name, leaseID, token)
}

func (c *tclient) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	o := grantOptions(opts)
	var copts []client.CampaignOption
	for _, g := range grantOpts3(owner, ttl, wait, o.leaseID) {
		copts = append(copts, g)
	}
	return c.Client.Campaign(ctx, name, value, copts...)
}

func (c *tclient) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.RenewID(ctx, client.Elections, name, leaseID, token, ttl)
}

func (c *tclient) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return c.ReleaseID(ctx, client.Elections, name, leaseID, token)
}

func (c *tclient) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	return c.Client.Proclaim(ctx, Lease{Name: name, LeaseID: leaseID, Token: token, Term: token}, value)
}

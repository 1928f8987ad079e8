package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/seqd/seqd/api"
)

// Grant options. Every kind of grant takes a GrantOption; only a lock's
// acquire takes a LockOption, so that an option a kind cannot honour (a
// lock-delay on a semaphore) does not compile.

// AcquireOption refines Acquire.
type AcquireOption interface{ applyAcquire(*api.AcquireRequest) }

// SemaphoreOption refines AcquireSemaphore.
type SemaphoreOption interface {
	applySemaphore(*api.SemaphoreAcquireRequest)
}

// CampaignOption refines Campaign.
type CampaignOption interface{ applyCampaign(*api.CampaignRequest) }

// GrantOption is an option of every kind of grant.
type GrantOption struct {
	set func(owner, leaseID *string, ttl, wait **api.Duration)
}

func (o GrantOption) applyAcquire(r *api.AcquireRequest) {
	o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait)
}
func (o GrantOption) applySemaphore(r *api.SemaphoreAcquireRequest) {
	o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait)
}
func (o GrantOption) applyCampaign(r *api.CampaignRequest) {
	o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait)
}

// Owner names who holds the grant (default the Client's default owner):
// a label shown by status reads, not a proof.
func Owner(owner string) GrantOption {
	return GrantOption{func(o, _ *string, _, _ **api.Duration) { *o = owner }}
}

// TTL is how long the lease lives without renewal (MinTTL..MaxTTL; the
// daemon's DefaultTTL if not given).
func TTL(d time.Duration) GrantOption {
	return GrantOption{func(_, _ *string, ttl, _ **api.Duration) { *ttl = durationPtr(d) }}
}

// Wait is how long to wait for the grant (0..MaxWait); without it, or with
// 0, the daemon tries once.
func Wait(d time.Duration) GrantOption {
	return GrantOption{func(_, _ *string, _, wait **api.Duration) { *wait = durationPtr(d) }}
}

// LeaseID makes the grant idempotent: id is 32 lowercase hex digits, random
// (NewLeaseID). The first try grants a lease under id; a retry with the
// same id and the same other options returns that lease (same token)
// while it lives.
func LeaseID(id string) GrantOption {
	return GrantOption{func(_, lid *string, _, _ **api.Duration) { *lid = id }}
}

// LockOption is an option of a lock's acquire only.
type LockOption struct{ set func(*api.AcquireRequest) }

func (o LockOption) applyAcquire(r *api.AcquireRequest) { o.set(r) }

// Shared makes the lease shared (a reader): it holds the lock together
// with other shared leases and excludes exclusive ones.
func Shared() LockOption { return LockOption{func(r *api.AcquireRequest) { r.Mode = api.ModeShared }} }

// LockDelayOption is a lock-delay, for a lock's acquire or a multi-lock's.
type LockDelayOption struct{ d time.Duration }

func (o LockDelayOption) applyAcquire(r *api.AcquireRequest) {
	x := api.Duration(o.d)
	r.LockDelay = &x
}
func (o LockDelayOption) applyMulti(r *api.MultiAcquireRequest) {
	x := api.Duration(o.d)
	r.LockDelay = &x
}

// LockDelay is the lease's lock-delay (0..MaxLockDelay): after it ends
// uncleanly, nobody is granted the lock (a multi-lock's: any of its locks),
// on any daemon, until d has passed. Without it the daemon's --lock-delay
// applies.
func LockDelay(d time.Duration) LockDelayOption { return LockDelayOption{d} }

// Acquire asks for the lock name. Without options it is exclusive, tried
// once, for DefaultTTL, owned by the Client's default owner. Not granted
// within the wait is an error matching ErrHeld, with the holder's token in
// the *APIError.
func (c *Client) Acquire(ctx context.Context, name string, opts ...AcquireOption) (api.Lease, error) {
	req := api.AcquireRequest{Owner: c.owner}
	for _, o := range opts {
		o.applyAcquire(&req)
	}
	return c.take(ctx, api.Locks, name, "/acquire", &req, &req.LeaseID, req.Wait)
}

// AcquireSemaphore asks for one of limit slots of the semaphore name. Every
// holder names the same limit; another one is an error matching
// ErrLimitMismatch.
func (c *Client) AcquireSemaphore(ctx context.Context, name string, limit int, opts ...SemaphoreOption) (api.Lease, error) {
	req := api.SemaphoreAcquireRequest{Owner: c.owner, Limit: limit}
	for _, o := range opts {
		o.applySemaphore(&req)
	}
	return c.take(ctx, api.Semaphores, name, "/acquire", &req, &req.LeaseID, req.Wait)
}

// AcquireLeadership stands for the election name with value (what the
// leader publishes; "" publishes the owner) and returns the leadership as a
// lease whose Term is its token (POST /v1/elections/{name}/campaign).
func (c *Client) AcquireLeadership(ctx context.Context, name, value string, opts ...CampaignOption) (api.Lease, error) {
	req := api.CampaignRequest{Owner: c.owner, Value: value}
	for _, o := range opts {
		o.applyCampaign(&req)
	}
	return c.take(ctx, api.Elections, name, "/campaign", &req, &req.LeaseID, req.Wait)
}

// Campaign is the old name of AcquireLeadership.
//
// Deprecated: every seqd client names this call AcquireLeadership
// (docs/clients.md).
func (c *Client) Campaign(ctx context.Context, name, value string, opts ...CampaignOption) (api.Lease, error) {
	return c.AcquireLeadership(ctx, name, value, opts...)
}

// take sends an acquire or a campaign, under a new lease id unless the
// request names one (so that it can be retried), and accepts only a lease
// (req points to the request, so that the id set here is the one sent)
// of that name and lease id.
func (c *Client) take(ctx context.Context, f api.Family, name, action string, req any, leaseID *string, wait *api.Duration) (api.Lease, error) {
	if *leaseID == "" {
		*leaseID = api.NewLeaseID()
	}
	var w time.Duration
	if wait != nil {
		w = time.Duration(*wait)
	}
	var l api.Lease
	err := c.call(ctx, call{method: http.MethodPost, path: path(string(f), name) + action, in: req, out: &l, wait: w,
		accept: func() string { return leaseProblem(l, name, *leaseID, 0) }})
	return l, err
}

// Renew renews l (ttl 0 keeps its TTL) and returns it with its new expiry.
// A lease that has ended is an error matching ErrLost, or
// fence.ErrStaleToken once another holder has a higher token.
func (c *Client) Renew(ctx context.Context, l api.Lease, ttl time.Duration) (api.Lease, error) {
	return c.RenewID(ctx, l.Family(), l.Name, l.LeaseID, l.Token, ttl)
}

// RenewID is Renew for a caller that kept the lease's family, name, id and
// token only.
func (c *Client) RenewID(ctx context.Context, f api.Family, name, leaseID string, token uint64, ttl time.Duration) (api.Lease, error) {
	var l api.Lease
	err := c.call(ctx, call{method: http.MethodPost, path: path(string(f), name) + "/renew",
		in: api.LeaseRequest{LeaseID: leaseID, Token: token, TTL: durationPtr(ttl)}, out: &l,
		accept: func() string { return leaseProblem(l, name, leaseID, token) }})
	return l, err
}

// Release ends l: a lock's or a semaphore's release, an election's resign.
func (c *Client) Release(ctx context.Context, l api.Lease) error {
	return c.ReleaseID(ctx, l.Family(), l.Name, l.LeaseID, l.Token)
}

// ReleaseID is Release for a caller that kept the lease's family, name, id
// and token only.
func (c *Client) ReleaseID(ctx context.Context, f api.Family, name, leaseID string, token uint64) error {
	action := "/release"
	if f == api.Elections {
		action = "/resign"
	}
	return c.do(ctx, http.MethodPost, path(string(f), name)+action, api.LeaseRequest{LeaseID: leaseID, Token: token}, nil)
}

// Proclaim changes the value a leader publishes, keeping its term.
func (c *Client) Proclaim(ctx context.Context, l api.Lease, value string) (api.Lease, error) {
	var out api.Lease
	err := c.call(ctx, call{method: http.MethodPost, path: path(string(api.Elections), l.Name) + "/proclaim",
		in: api.ProclaimRequest{LeaseID: l.LeaseID, Token: l.Token, Value: value}, out: &out,
		accept: func() string { return leaseProblem(out, l.Name, l.LeaseID, l.Token) }})
	return out, err
}

// RenewMany renews many lock leases in one request (POST /v1/renew); ttl 0
// keeps each one's TTL. The results are in items' order, each with the
// status its own renew would have had; a malformed item fails the whole
// call (ErrBadRequest) and renews nothing.
func (c *Client) RenewMany(ctx context.Context, items []api.RenewItem, ttl time.Duration) ([]api.RenewResult, error) {
	var resp api.RenewManyResponse
	if err := c.do(ctx, http.MethodPost, "/v1/renew", api.RenewManyRequest{Leases: items, TTL: durationPtr(ttl)}, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, &api.APIError{Status: http.StatusOK, Code: "http", Message: "the daemon answered a renew of " + strconv.Itoa(len(items)) + " leases with " + strconv.Itoa(len(resp.Results)) + " results"}
	}
	return resp.Results, nil
}

// Check asks whether seq (as a holder sends it, plain or signed, of any
// kind) is its lock's current holder's. A stale token is an error matching
// fence.ErrStaleToken, and the response comes back either way.
func (c *Client) Check(ctx context.Context, seq string) (api.CheckResponse, error) {
	var res api.CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", api.CheckRequest{Sequencer: seq}, &res)
	return res, err
}

// CheckToken asks whether token is the exclusive lock name's current
// holder's.
func (c *Client) CheckToken(ctx context.Context, name string, token uint64) (api.CheckResponse, error) {
	var res api.CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", api.CheckRequest{Name: name, Token: token}, &res)
	return res, err
}

// Leases lists the live leases of a family held through the daemon (no
// lease ids, unsigned sequencers).
func (c *Client) Leases(ctx context.Context, f api.Family) ([]api.Lease, error) {
	var res api.LeaseList
	err := c.do(ctx, http.MethodGet, "/v1/"+string(f), nil, &res)
	return res.Leases, err
}

// Status reads the lock name's state.
func (c *Client) Status(ctx context.Context, name string) (api.LockStatus, error) {
	var st api.LockStatus
	err := c.do(ctx, http.MethodGet, path(string(api.Locks), name), nil, &st)
	return st, err
}

// WaitStatus is a blocking read of the lock's state: it answers once the
// state's index differs from index, or after wait (0: the daemon's
// default) with the same state.
func (c *Client) WaitStatus(ctx context.Context, name string, index uint64, wait time.Duration) (api.LockStatus, error) {
	var st api.LockStatus
	err := c.call(ctx, call{method: http.MethodGet, path: path(string(api.Locks), name) + blockingQuery(index, wait), out: &st, wait: blockingWait(wait)})
	return st, err
}

// SafeFor is how long the holder of l may still act on it: until its TTL
// passes or the daemon's ZooKeeper session could expire, whichever is
// first; 0 once it has ended. Check it before an action no token can
// fence.
func (c *Client) SafeFor(ctx context.Context, l api.Lease) (time.Duration, error) {
	var st api.LockStatus
	if err := c.do(ctx, http.MethodGet, path(string(api.Locks), l.Name)+"?lease_id="+url.QueryEscape(l.LeaseID), nil, &st); err != nil {
		return 0, err
	}
	if st.SafeForMS == nil {
		return 0, nil
	}
	return time.Duration(*st.SafeForMS) * time.Millisecond, nil
}

// SemaphoreStatus reads the semaphore's holders.
func (c *Client) SemaphoreStatus(ctx context.Context, name string) (api.SemaphoreStatus, error) {
	var st api.SemaphoreStatus
	err := c.do(ctx, http.MethodGet, path(string(api.Semaphores), name), nil, &st)
	return st, err
}

// WaitSemaphore is a blocking read of the semaphore's state, as WaitStatus.
func (c *Client) WaitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (api.SemaphoreStatus, error) {
	var st api.SemaphoreStatus
	err := c.call(ctx, call{method: http.MethodGet, path: path(string(api.Semaphores), name) + blockingQuery(index, wait), out: &st, wait: blockingWait(wait)})
	return st, err
}

// Election reads the election's state: its leader, if any.
func (c *Client) Election(ctx context.Context, name string) (api.ElectionStatus, error) {
	var st api.ElectionStatus
	err := c.do(ctx, http.MethodGet, path(string(api.Elections), name), nil, &st)
	return st, err
}

// WaitElection is a blocking read of the election's state, as WaitStatus.
func (c *Client) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (api.ElectionStatus, error) {
	var st api.ElectionStatus
	err := c.call(ctx, call{method: http.MethodGet, path: path(string(api.Elections), name) + blockingQuery(index, wait), out: &st, wait: blockingWait(wait)})
	return st, err
}

// Break deletes the contender of the holder of family f's name, so that the
// next in its queue is granted (with a higher token), and records reason
// in the daemon's audit log and in the broken lease's answers (a renew of
// it is an error matching ErrBroken and ErrLost). token names the holder
// (required: 0 is refused, ErrBadRequest, so that a replayed break cannot
// break the next holder): it is broken only while it still holds,
// otherwise the error matches ErrNotHeld with the current token. The daemon must run with an
// admin token and c must send it (WithAPIToken with the admin token: it
// is accepted wherever the API token is); otherwise the error matches
// ErrUnauthorized.
func (c *Client) Break(ctx context.Context, f api.Family, name, reason string, token uint64) (api.BreakResponse, error) {
	var res api.BreakResponse
	err := c.do(ctx, http.MethodPost, path(string(f), name)+"/break", api.BreakRequest{Reason: reason, Token: token}, &res)
	return res, err
}

// Overview reads the status of every name of family f that has contenders
// under the daemon's root for it (at most MaxOverview names). With index
// not 0 it is a blocking read, as WaitStatus.
func (c *Client) Overview(ctx context.Context, f api.Family, index uint64, wait time.Duration) (api.Overview, error) {
	var o api.Overview
	q := "?all=1"
	if index != 0 {
		q = blockingQuery(index, wait) + "&all=1"
	}
	var w time.Duration
	if index != 0 {
		w = blockingWait(wait)
	}
	err := c.call(ctx, call{method: http.MethodGet, path: "/v1/" + string(f) + q, out: &o, wait: w})
	return o, err
}

package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/seqd/seqd/api"
)

// MultiOption refines AcquireMulti: a GrantOption (Owner, TTL, Wait,
// LeaseID) or LockDelay.
type MultiOption interface {
	applyMulti(*api.MultiAcquireRequest)
}

func (o GrantOption) applyMulti(r *api.MultiAcquireRequest) {
	o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait)
}

// AcquireMulti asks for every lock of names at once: the lease holds all of
// them or none, and no two acquirers of sets (or of single locks) can
// deadlock, whatever names they ask for. Without options it is tried once,
// for DefaultTTL, owned by the Client's default owner. Not granted within
// the wait is an error matching ErrHeld; the *APIError names the lock it
// waited for and that lock's current token.
func (c *Client) AcquireMulti(ctx context.Context, names []string, opts ...MultiOption) (api.MultiLease, error) {
	req := api.MultiAcquireRequest{Names: names, Owner: c.owner}
	for _, o := range opts {
		o.applyMulti(&req)
	}
	if req.LeaseID == "" {
		req.LeaseID = api.NewLeaseID()
	}
	var w time.Duration
	if req.Wait != nil {
		w = time.Duration(*req.Wait)
	}
	var l api.MultiLease
	err := c.call(ctx, call{method: http.MethodPost, path: "/v1/" + string(api.MultiLocks) + "/acquire", in: req, out: &l, wait: w,
		accept: func() string { return multiLeaseProblem(l, names, req.LeaseID, nil) }})
	return l, err
}

// RenewMulti renews the multi-lock lease l (ttl 0 keeps its TTL), keeping
// every token. A lease that has ended is an error matching ErrLost, or
// fence.ErrStaleToken once one of its locks has a higher token.
func (c *Client) RenewMulti(ctx context.Context, l api.MultiLease, ttl time.Duration) (api.MultiLease, error) {
	var out api.MultiLease
	refs := l.Refs()
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	err := c.call(ctx, call{method: http.MethodPost, path: "/v1/" + string(api.MultiLocks) + "/renew",
		in: api.MultiLeaseRequest{LeaseID: l.LeaseID, Locks: refs, TTL: durationPtr(ttl)}, out: &out,
		accept: func() string { return multiLeaseProblem(out, names, l.LeaseID, refs) }})
	return out, err
}

// ReleaseMulti ends the multi-lock lease l: every lock at once.
func (c *Client) ReleaseMulti(ctx context.Context, l api.MultiLease) error {
	return c.do(ctx, http.MethodPost, "/v1/"+string(api.MultiLocks)+"/release", api.MultiLeaseRequest{LeaseID: l.LeaseID, Locks: l.Refs()}, nil)
}

// MultiLockStatus reads the live multi-lock lease leaseID of the daemon,
// with how long it is safe; one that has ended is an error matching
// ErrLost.
func (c *Client) MultiLockStatus(ctx context.Context, leaseID string) (api.MultiLockStatus, error) {
	var st api.MultiLockStatus
	err := c.do(ctx, http.MethodGet, "/v1/"+string(api.MultiLocks)+"/"+url.PathEscape(leaseID), nil, &st)
	return st, err
}

// WaitMultiLock is a blocking read of the lease: it answers once its index
// differs from index (it was renewed, or it ended: ErrLost), or after wait
// (0: the daemon's default) with the same state.
func (c *Client) WaitMultiLock(ctx context.Context, leaseID string, index uint64, wait time.Duration) (api.MultiLockStatus, error) {
	var st api.MultiLockStatus
	err := c.call(ctx, call{method: http.MethodGet, path: "/v1/" + string(api.MultiLocks) + "/" + url.PathEscape(leaseID) + blockingQuery(index, wait), out: &st, wait: blockingWait(wait)})
	return st, err
}

// MultiLeases lists the live multi-lock leases held through the daemon
// (no lease ids, unsigned sequencers).
func (c *Client) MultiLeases(ctx context.Context) ([]api.MultiLease, error) {
	var res api.MultiLeaseList
	err := c.do(ctx, http.MethodGet, "/v1/"+string(api.MultiLocks), nil, &res)
	return res.MultiLocks, err
}

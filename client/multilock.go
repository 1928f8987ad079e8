package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MultiOption refines AcquireMulti: a GrantOption (Owner, TTL, Wait,
// LeaseID) or LockDelay.
type MultiOption interface{ applyMulti(*MultiAcquireRequest) }

func (o GrantOption) applyMulti(r *MultiAcquireRequest) { o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait) }

// AcquireMulti asks for every lock of names at once: the lease holds all of
// them or none, and no two acquirers of sets (or of single locks) can
// deadlock, whatever names they ask for. Without options it is tried once,
// for DefaultTTL, owned by the Client's default owner. Not granted within
// the wait is an error matching ErrHeld; the *APIError names the lock it
// waited for and that lock's current token.
func (c *Client) AcquireMulti(ctx context.Context, names []string, opts ...MultiOption) (MultiLease, error) {
	req := MultiAcquireRequest{Names: names, Owner: c.owner}
	for _, o := range opts {
		o.applyMulti(&req)
	}
	var l MultiLease
	err := c.do(ctx, http.MethodPost, "/v1/"+string(MultiLocks)+"/acquire", req, &l)
	return l, err
}

// RenewMulti renews the multi-lock lease l (ttl 0 keeps its TTL), keeping
// every token. A lease that has ended is an error matching ErrLost, or
// fence.ErrStaleToken once one of its locks has a higher token.
func (c *Client) RenewMulti(ctx context.Context, l MultiLease, ttl time.Duration) (MultiLease, error) {
	var out MultiLease
	err := c.do(ctx, http.MethodPost, "/v1/"+string(MultiLocks)+"/renew", MultiLeaseRequest{LeaseID: l.LeaseID, Locks: l.Refs(), TTL: durationPtr(ttl)}, &out)
	return out, err
}

// ReleaseMulti ends the multi-lock lease l: every lock at once.
func (c *Client) ReleaseMulti(ctx context.Context, l MultiLease) error {
	return c.do(ctx, http.MethodPost, "/v1/"+string(MultiLocks)+"/release", MultiLeaseRequest{LeaseID: l.LeaseID, Locks: l.Refs()}, nil)
}

// MultiLockStatus reads the live multi-lock lease leaseID of the daemon,
// with how long it is safe; one that has ended is an error matching
// ErrLost.
func (c *Client) MultiLockStatus(ctx context.Context, leaseID string) (MultiLockStatus, error) {
	var st MultiLockStatus
	err := c.do(ctx, http.MethodGet, "/v1/"+string(MultiLocks)+"/"+url.PathEscape(leaseID), nil, &st)
	return st, err
}

// WaitMultiLock is a blocking read of the lease: it answers once its index
// differs from index (it was renewed, or it ended: ErrLost), or after wait
// (0: the daemon's default) with the same state.
func (c *Client) WaitMultiLock(ctx context.Context, leaseID string, index uint64, wait time.Duration) (MultiLockStatus, error) {
	var st MultiLockStatus
	err := c.do(ctx, http.MethodGet, "/v1/"+string(MultiLocks)+"/"+url.PathEscape(leaseID)+blockingQuery(index, wait), nil, &st)
	return st, err
}

// MultiLeases lists the live multi-lock leases held through the daemon
// (no lease ids, unsigned sequencers).
func (c *Client) MultiLeases(ctx context.Context) ([]MultiLease, error) {
	var res MultiLeaseList
	err := c.do(ctx, http.MethodGet, "/v1/"+string(MultiLocks), nil, &res)
	return res.MultiLocks, err
}

// Refs are the lease's locks with their tokens, as a renew or a release
// names them.
func (l MultiLease) Refs() []LockRef {
	refs := make([]LockRef, len(l.Locks))
	for i, lk := range l.Locks {
		refs[i] = LockRef{Name: lk.Name, Token: lk.Token}
	}
	return refs
}

// Sequencers are the lease's sequencers separated by spaces, in its
// order, as `seqd lock A B -- CMD` gives them to CMD in SEQD_SEQUENCERS.
func (l MultiLease) Sequencers() string {
	seqs := make([]string, len(l.Locks))
	for i, lk := range l.Locks {
		seqs[i] = lk.Sequencer
	}
	return strings.Join(seqs, " ")
}

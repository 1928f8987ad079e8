package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Family is the part of the API a lease belongs to: its URL's second
// segment.
type Family string

// The families of leases.
const (
	Locks      Family = "locks"      // exclusive and shared locks
	Semaphores Family = "semaphores" // slots of semaphores
	Elections  Family = "elections"  // leaderships
	MultiLocks Family = "multilocks" // several exclusive locks at once
)

// Family is the family l was granted in: an election's lease has a term, a
// semaphore's a limit.
func (l Lease) Family() Family {
	switch {
	case l.Term != 0:
		return Elections
	case l.Limit != 0:
		return Semaphores
	}
	return Locks
}

// Grant options. Every kind of grant takes a GrantOption; only a lock's
// acquire takes a LockOption, so that an option a kind cannot honour (a
// lock-delay on a semaphore) does not compile.

// AcquireOption refines Acquire.
type AcquireOption interface{ applyAcquire(*AcquireRequest) }

// SemaphoreOption refines AcquireSemaphore.
type SemaphoreOption interface {
	applySemaphore(*SemaphoreAcquireRequest)
}

// CampaignOption refines Campaign.
type CampaignOption interface{ applyCampaign(*CampaignRequest) }

// GrantOption is an option of every kind of grant.
type GrantOption struct {
	set func(owner, leaseID *string, ttl, wait **Duration)
}

func (o GrantOption) applyAcquire(r *AcquireRequest) { o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait) }
func (o GrantOption) applySemaphore(r *SemaphoreAcquireRequest) {
	o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait)
}
func (o GrantOption) applyCampaign(r *CampaignRequest) { o.set(&r.Owner, &r.LeaseID, &r.TTL, &r.Wait) }

// Owner names who holds the grant (default the Client's default owner):
// a label shown by status reads, not a proof.
func Owner(owner string) GrantOption {
	return GrantOption{func(o, _ *string, _, _ **Duration) { *o = owner }}
}

// TTL is how long the lease lives without renewal (MinTTL..MaxTTL; the
// daemon's DefaultTTL if not given).
func TTL(d time.Duration) GrantOption {
	return GrantOption{func(_, _ *string, ttl, _ **Duration) { *ttl = durationPtr(d) }}
}

// Wait is how long to wait for the grant (0..MaxWait); without it, or with
// 0, the daemon tries once.
func Wait(d time.Duration) GrantOption {
	return GrantOption{func(_, _ *string, _, wait **Duration) { *wait = durationPtr(d) }}
}

// LeaseID makes the grant idempotent: id is 32 lowercase hex digits, random
// (NewLeaseID). The first try grants a lease under id; a retry with the
// same id and the same other options returns that lease (same token)
// while it lives.
func LeaseID(id string) GrantOption {
	return GrantOption{func(_, lid *string, _, _ **Duration) { *lid = id }}
}

// LockOption is an option of a lock's acquire only.
type LockOption struct{ set func(*AcquireRequest) }

func (o LockOption) applyAcquire(r *AcquireRequest) { o.set(r) }

// Shared makes the lease shared (a reader): it holds the lock together
// with other shared leases and excludes exclusive ones.
func Shared() LockOption { return LockOption{func(r *AcquireRequest) { r.Mode = ModeShared }} }

// LockDelayOption is a lock-delay, for a lock's acquire or a multi-lock's.
type LockDelayOption struct{ d time.Duration }

func (o LockDelayOption) applyAcquire(r *AcquireRequest) { x := Duration(o.d); r.LockDelay = &x }
func (o LockDelayOption) applyMulti(r *MultiAcquireRequest) {
	x := Duration(o.d)
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
func (c *Client) Acquire(ctx context.Context, name string, opts ...AcquireOption) (Lease, error) {
	req := AcquireRequest{Owner: c.owner}
	for _, o := range opts {
		o.applyAcquire(&req)
	}
	var l Lease
	err := c.do(ctx, http.MethodPost, path(string(Locks), name)+"/acquire", req, &l)
	return l, err
}

// AcquireSemaphore asks for one of limit slots of the semaphore name. Every
// holder names the same limit; another one is an error matching
// ErrLimitMismatch.
func (c *Client) AcquireSemaphore(ctx context.Context, name string, limit int, opts ...SemaphoreOption) (Lease, error) {
	req := SemaphoreAcquireRequest{Owner: c.owner, Limit: limit}
	for _, o := range opts {
		o.applySemaphore(&req)
	}
	var l Lease
	err := c.do(ctx, http.MethodPost, path(string(Semaphores), name)+"/acquire", req, &l)
	return l, err
}

// Campaign stands for the election name with value (what the leader
// publishes; "" publishes the owner) and returns the leadership as a lease
// whose Term is its token.
func (c *Client) Campaign(ctx context.Context, name, value string, opts ...CampaignOption) (Lease, error) {
	req := CampaignRequest{Owner: c.owner, Value: value}
	for _, o := range opts {
		o.applyCampaign(&req)
	}
	var l Lease
	err := c.do(ctx, http.MethodPost, path(string(Elections), name)+"/campaign", req, &l)
	return l, err
}

// Renew renews l (ttl 0 keeps its TTL) and returns it with its new expiry.
// A lease that has ended is an error matching ErrLost, or
// fence.ErrStaleToken once another holder has a higher token.
func (c *Client) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return c.RenewID(ctx, l.Family(), l.Name, l.LeaseID, l.Token, ttl)
}

// RenewID is Renew for a caller that kept the lease's family, name, id and
// token only.
func (c *Client) RenewID(ctx context.Context, f Family, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	var l Lease
	err := c.do(ctx, http.MethodPost, path(string(f), name)+"/renew", LeaseRequest{LeaseID: leaseID, Token: token, TTL: durationPtr(ttl)}, &l)
	return l, err
}

// Release ends l: a lock's or a semaphore's release, an election's resign.
func (c *Client) Release(ctx context.Context, l Lease) error {
	return c.ReleaseID(ctx, l.Family(), l.Name, l.LeaseID, l.Token)
}

// ReleaseID is Release for a caller that kept the lease's family, name, id
// and token only.
func (c *Client) ReleaseID(ctx context.Context, f Family, name, leaseID string, token uint64) error {
	action := "/release"
	if f == Elections {
		action = "/resign"
	}
	return c.do(ctx, http.MethodPost, path(string(f), name)+action, LeaseRequest{LeaseID: leaseID, Token: token}, nil)
}

// Proclaim changes the value a leader publishes, keeping its term.
func (c *Client) Proclaim(ctx context.Context, l Lease, value string) (Lease, error) {
	var out Lease
	err := c.do(ctx, http.MethodPost, path(string(Elections), l.Name)+"/proclaim", ProclaimRequest{LeaseID: l.LeaseID, Token: l.Token, Value: value}, &out)
	return out, err
}

// RenewMany renews many lock leases in one request (POST /v1/renew); ttl 0
// keeps each one's TTL. The results are in items' order, each with the
// status its own renew would have had; a malformed item fails the whole
// call (ErrBadRequest) and renews nothing.
func (c *Client) RenewMany(ctx context.Context, items []RenewItem, ttl time.Duration) ([]RenewResult, error) {
	var resp RenewManyResponse
	if err := c.do(ctx, http.MethodPost, "/v1/renew", RenewManyRequest{Leases: items, TTL: durationPtr(ttl)}, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, &APIError{Status: http.StatusOK, Code: "http", Message: "the daemon answered a renew of " + strconv.Itoa(len(items)) + " leases with " + strconv.Itoa(len(resp.Results)) + " results"}
	}
	return resp.Results, nil
}

// Check asks whether seq (as a holder sends it, plain or signed, of any
// kind) is its lock's current holder's. A stale token is an error matching
// fence.ErrStaleToken, and the response comes back either way.
func (c *Client) Check(ctx context.Context, seq string) (CheckResponse, error) {
	var res CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", CheckRequest{Sequencer: seq}, &res)
	return res, err
}

// CheckToken asks whether token is the exclusive lock name's current
// holder's.
func (c *Client) CheckToken(ctx context.Context, name string, token uint64) (CheckResponse, error) {
	var res CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", CheckRequest{Name: name, Token: token}, &res)
	return res, err
}

// Leases lists the live leases of a family held through the daemon (no
// lease ids, unsigned sequencers).
func (c *Client) Leases(ctx context.Context, f Family) ([]Lease, error) {
	var res LeaseList
	err := c.do(ctx, http.MethodGet, "/v1/"+string(f), nil, &res)
	return res.Leases, err
}

// Status reads the lock name's state.
func (c *Client) Status(ctx context.Context, name string) (LockStatus, error) {
	var st LockStatus
	err := c.do(ctx, http.MethodGet, path(string(Locks), name), nil, &st)
	return st, err
}

// WaitStatus is a blocking read of the lock's state: it answers once the
// state's index differs from index, or after wait (0: the daemon's
// default) with the same state.
func (c *Client) WaitStatus(ctx context.Context, name string, index uint64, wait time.Duration) (LockStatus, error) {
	var st LockStatus
	err := c.do(ctx, http.MethodGet, path(string(Locks), name)+blockingQuery(index, wait), nil, &st)
	return st, err
}

// SafeFor is how long the holder of l may still act on it: until its TTL
// passes or the daemon's ZooKeeper session could expire, whichever is
// first; 0 once it has ended. Check it before an action no token can
// fence.
func (c *Client) SafeFor(ctx context.Context, l Lease) (time.Duration, error) {
	var st LockStatus
	if err := c.do(ctx, http.MethodGet, path(string(Locks), l.Name)+"?lease_id="+url.QueryEscape(l.LeaseID), nil, &st); err != nil {
		return 0, err
	}
	if st.SafeForMS == nil {
		return 0, nil
	}
	return time.Duration(*st.SafeForMS) * time.Millisecond, nil
}

// SemaphoreStatus reads the semaphore's holders.
func (c *Client) SemaphoreStatus(ctx context.Context, name string) (SemaphoreStatus, error) {
	var st SemaphoreStatus
	err := c.do(ctx, http.MethodGet, path(string(Semaphores), name), nil, &st)
	return st, err
}

// WaitSemaphore is a blocking read of the semaphore's state, as WaitStatus.
func (c *Client) WaitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (SemaphoreStatus, error) {
	var st SemaphoreStatus
	err := c.do(ctx, http.MethodGet, path(string(Semaphores), name)+blockingQuery(index, wait), nil, &st)
	return st, err
}

// Election reads the election's state: its leader, if any.
func (c *Client) Election(ctx context.Context, name string) (ElectionStatus, error) {
	var st ElectionStatus
	err := c.do(ctx, http.MethodGet, path(string(Elections), name), nil, &st)
	return st, err
}

// WaitElection is a blocking read of the election's state, as WaitStatus.
func (c *Client) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (ElectionStatus, error) {
	var st ElectionStatus
	err := c.do(ctx, http.MethodGet, path(string(Elections), name)+blockingQuery(index, wait), nil, &st)
	return st, err
}

// NewLeaseID returns a new random lease id, for LeaseID: a grant retried
// with it after a lost answer finds its lease.
func NewLeaseID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Break deletes the contender of the holder of family f's name, so that the
// next in its queue is granted (with a higher token), and records reason
// in the daemon's audit log and in the broken lease's answers (a renew of
// it is an error matching ErrBroken and ErrLost). token, if not 0, names
// the holder: it is broken only while it still holds, otherwise the error
// matches ErrNotHeld with the current token. The daemon must run with an
// admin token and c must send it (WithAPIToken with the admin token: it
// is accepted wherever the API token is); otherwise the error matches
// ErrUnauthorized.
func (c *Client) Break(ctx context.Context, f Family, name, reason string, token uint64) (BreakResponse, error) {
	var res BreakResponse
	err := c.do(ctx, http.MethodPost, path(string(f), name)+"/break", BreakRequest{Reason: reason, Token: token}, &res)
	return res, err
}

// Overview reads the status of every name of family f that has contenders
// under the daemon's root for it (at most MaxOverview names). With index
// not 0 it is a blocking read, as WaitStatus.
func (c *Client) Overview(ctx context.Context, f Family, index uint64, wait time.Duration) (Overview, error) {
	var o Overview
	q := "?all=1"
	if index != 0 {
		q = blockingQuery(index, wait) + "&all=1"
	}
	err := c.do(ctx, http.MethodGet, "/v1/"+string(f)+q, nil, &o)
	return o, err
}

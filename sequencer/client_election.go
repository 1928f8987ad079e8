package sequencer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Campaign stands for election name with value (default the owner). ttl and
// wait of 0 take the daemon's defaults (15s, try once).
func (c *Client) Campaign(ctx context.Context, name, owner, value string, ttl, wait time.Duration) (Lease, error) {
	req := CampaignRequest{Owner: owner, Value: value}
	req.TTL, req.Wait = durationPtr(ttl), durationPtr(wait)
	var l Lease
	err := c.do(ctx, http.MethodPost, electionPath(name)+"/campaign", req, &l)
	return l, err
}

// RenewElection renews a leadership lease (ttl 0 keeps its TTL).
func (c *Client) RenewElection(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.renew(ctx, electionPath(name), leaseID, token, ttl)
}

// Resign ends a leadership lease.
func (c *Client) Resign(ctx context.Context, name, leaseID string, token uint64) error {
	return c.do(ctx, http.MethodPost, electionPath(name)+"/resign", LeaseRequest{LeaseID: leaseID, Token: token}, nil)
}

// Proclaim changes the leader's value, keeping its term.
func (c *Client) Proclaim(ctx context.Context, name, leaseID string, token uint64, value string) (Lease, error) {
	var l Lease
	err := c.do(ctx, http.MethodPost, electionPath(name)+"/proclaim", ProclaimRequest{LeaseID: leaseID, Token: token, Value: value}, &l)
	return l, err
}

// Election reads an election's state.
func (c *Client) Election(ctx context.Context, name string) (ElectionStatus, error) {
	var st ElectionStatus
	err := c.do(ctx, http.MethodGet, electionPath(name), nil, &st)
	return st, err
}

// WaitElection is a blocking read: it answers once the election's index
// differs from index, or after wait with the same state.
func (c *Client) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (ElectionStatus, error) {
	var st ElectionStatus
	err := c.do(ctx, http.MethodGet, electionPath(name)+blockingSuffix(index, wait), nil, &st)
	return st, err
}

// WaitStatus is a blocking read of a lock's state, as WaitElection.
func (c *Client) WaitStatus(ctx context.Context, name string, index uint64, wait time.Duration) (LockStatus, error) {
	var st LockStatus
	err := c.do(ctx, http.MethodGet, lockPath(name)+blockingSuffix(index, wait), nil, &st)
	return st, err
}

func blockingSuffix(index uint64, wait time.Duration) string {
	return fmt.Sprintf("?index=%d&wait=%s", index, url.QueryEscape(wait.String()))
}

func electionPath(name string) string {
	return "/v1/elections/" + strings.TrimPrefix(lockPath(name), "/v1/locks/")
}

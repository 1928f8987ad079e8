package sequencer

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Renewing many leases in one request: a client (or a sidecar) holding
// many locks renews them all in one round trip. Each lease is renewed as
// POST /v1/locks/{name}/renew would renew it, with its own answer.

// MaxRenewBatch is the most leases one POST /v1/renew names.
const MaxRenewBatch = 500

// renewParallel is how many renewals of one batch run at once.
const renewParallel = 16

// RenewManyRequest is the body of POST /v1/renew.
type RenewManyRequest struct {
	// Leases ("leases", required, 1 to MaxRenewBatch) are the leases to
	// renew, each a lock's name with its lease_id and token.
	Leases []RenewItem `json:"leases"`
	// TTL ("ttl", optional) is every lease's new TTL; without it each
	// keeps its own.
	TTL *Duration `json:"ttl,omitempty"`
}

// RenewItem is one lease of a RenewManyRequest.
type RenewItem struct {
	Name    string `json:"name"`
	LeaseID string `json:"lease_id"`
	Token   uint64 `json:"token"`
}

// RenewManyResponse answers POST /v1/renew: one result per lease, in the
// request's order.
type RenewManyResponse struct {
	Results []RenewResult `json:"results"`
}

// RenewResult is the answer for one lease: Status is the HTTP status its
// own renew would have had (200 with the lease, or 409, 503 … with the
// error's sentence, code and, for a stale token, the current one).
type RenewResult struct {
	Name         string  `json:"name"`
	Status       int     `json:"status"`
	Lease        *Lease  `json:"lease,omitempty"`
	Error        string  `json:"error,omitempty"`
	Code         string  `json:"code,omitempty"`
	CurrentToken *uint64 `json:"current_token,omitempty"`
}

// validateRenewMany checks every lease before any is renewed: a bad one
// makes the whole request a 400 that changes nothing.
func validateRenewMany(req *RenewManyRequest) error {
	switch n := len(req.Leases); {
	case n == 0:
		return fmt.Errorf("%w: leases is required: the leases to renew, each {\"name\",\"lease_id\",\"token\"}", ErrBadRequest)
	case n > MaxRenewBatch:
		return fmt.Errorf("%w: %d leases in one renew, more than %d", ErrBadRequest, n, MaxRenewBatch)
	}
	if req.TTL != nil {
		if err := validateTTL(time.Duration(*req.TTL)); err != nil {
			return err
		}
	}
	for i, it := range req.Leases {
		if err := validateName(it.Name); err != nil {
			return fmt.Errorf("leases[%d]: %w", i, err)
		}
		if !validLeaseID(it.LeaseID) {
			return fmt.Errorf("%w: leases[%d]: lease_id %.40q must be 32 lowercase hex digits", ErrBadRequest, i, it.LeaseID)
		}
		if it.Token == 0 {
			return fmt.Errorf("%w: leases[%d]: token is required (at least 1)", ErrBadRequest, i)
		}
	}
	return nil
}

// RenewMany renews each of items (a lock's lease each) with ttl (0: each
// keeps its own), at most renewParallel at a time, and returns each one's
// lease or error, in order. It refuses the whole batch (ErrBadRequest) if
// any item is malformed, before renewing any.
func (s *Service) RenewMany(ctx context.Context, items []RenewItem, ttl time.Duration) ([]Lease, []error, error) {
	req := RenewManyRequest{Leases: items}
	if ttl != 0 {
		d := Duration(ttl)
		req.TTL = &d
	}
	if err := validateRenewMany(&req); err != nil {
		return nil, nil, err
	}
	leases, errs := make([]Lease, len(items)), make([]error, len(items))
	var wg sync.WaitGroup
	slots := make(chan struct{}, renewParallel)
	for i, it := range items {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			leases[i], errs[i] = s.Renew(ctx, it.Name, it.LeaseID, it.Token, ttl)
		}()
	}
	wg.Wait()
	return leases, errs, nil
}

func (h *handler) renewMany(w http.ResponseWriter, r *http.Request) {
	var req RenewManyRequest
	if !decode(w, r, &req) {
		return
	}
	var ttl time.Duration
	if req.TTL != nil {
		ttl = time.Duration(*req.TTL)
	}
	leases, errs, err := h.s.RenewMany(r.Context(), req.Leases, ttl)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	resp := RenewManyResponse{Results: make([]RenewResult, len(leases))}
	for i := range leases {
		res := RenewResult{Name: req.Leases[i].Name, Status: http.StatusOK}
		if errs[i] != nil {
			var body ErrorBody
			res.Status, body = h.failure(r, errs[i])
			res.Error, res.Code, res.CurrentToken = body.Error, body.Code, body.CurrentToken
		} else {
			res.Lease = &leases[i]
		}
		resp.Results[i] = res
	}
	writeJSON(w, http.StatusOK, resp)
}

// RenewMany renews many lock leases in one request (POST /v1/renew); ttl
// 0 keeps each one's TTL. The results are in items' order; a malformed
// item fails the whole call (400) and renews nothing.
func (c *Client) RenewMany(ctx context.Context, items []RenewItem, ttl time.Duration) ([]RenewResult, error) {
	var resp RenewManyResponse
	if err := c.do(ctx, http.MethodPost, "/v1/renew", RenewManyRequest{Leases: items, TTL: durationPtr(ttl)}, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, fmt.Errorf("sequencer: renew of %d leases answered %d results", len(items), len(resp.Results))
	}
	return resp.Results, nil
}

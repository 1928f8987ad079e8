package sequencer

import (
	"context"
	"sync"

	"github.com/seqd/seqd/api"
)

// Renewing many leases in one request: a client (or a sidecar) holding
// many locks renews them all in one round trip. Each lease is renewed as
// POST /v1/locks/{name}/renew would renew it, with its own answer.

// renewParallel is how many renewals of one batch run at once.
const renewParallel = 16

// validateRenewMany checks every lease before any is renewed: a bad one
// makes the whole request a 400 that changes nothing.
func validateRenewMany(req *api.RenewManyRequest) error {
	switch n := len(req.Leases); {
	case n == 0:
		return badRequest(`leases is required: the leases to renew, each {"name","lease_id","token"}`)
	case n > api.MaxRenewBatch:
		return badRequest("%d leases in one renew, more than %d", n, api.MaxRenewBatch)
	}
	if _, err := optionalTTL(req.TTL); err != nil {
		return err
	}
	for i, it := range req.Leases {
		if err := validateName(api.Locks, it.Name); err != nil {
			return badRequest("leases[%d]: %v", i, err)
		}
		if !api.ValidLeaseID(it.LeaseID) {
			return badRequest("leases[%d]: lease_id %.40q must be 32 lowercase hex digits", i, it.LeaseID)
		}
		if it.Token == 0 {
			return badRequest("leases[%d]: token is required (at least 1)", i)
		}
	}
	return nil
}

// renewMany renews each lock lease of req (with req.TTL, or each its own),
// at most renewParallel at a time, and returns each one's lease or error,
// in order. It refuses the whole batch (a *RequestError) if any item is
// malformed, before renewing any.
func (s *Service) renewMany(ctx context.Context, req api.RenewManyRequest) ([]api.Lease, []error, error) {
	if err := validateRenewMany(&req); err != nil {
		return nil, nil, err
	}
	items := req.Leases
	leases, errs := make([]api.Lease, len(items)), make([]error, len(items))
	var wg sync.WaitGroup
	slots := make(chan struct{}, renewParallel)
	for i, it := range items {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			leases[i], errs[i] = s.renew(ctx, api.Locks, it.Name, api.LeaseRequest{LeaseID: it.LeaseID, Token: it.Token, TTL: req.TTL})
		}()
	}
	wg.Wait()
	return leases, errs, nil
}

package sequencer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Semaphores: leases on one of limit slots, with the lock leases' lifecycle
// (TTL, renew, release, loss with the session). Their ZooKeeper layout is
// Curator's InterProcessSemaphoreV2's, under the root's sibling for
// semaphores.

// MaxSemaphoreLimit bounds a semaphore's limit.
const MaxSemaphoreLimit = zklock.MaxSemaphoreLimit

// semaphoreRoot is where the daemon's semaphores live, beside its locks.
func (s *Service) semaphoreRoot() string { return zklock.SemaphoreRoot(s.cfg.Root) }

// AcquireSemaphore grants owner one of limit slots of name for ttl, waiting
// up to wait (0 tries once). Every holder must name the same limit. The
// lease's token is above every earlier grant's on the semaphore. It takes
// WithLeaseID; a lock-delay is refused.
func (s *Service) AcquireSemaphore(ctx context.Context, name, owner string, limit int, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := validateAcquire(name, owner, ttl, wait); err != nil {
		return Lease{}, err
	}
	switch {
	case limit < 1 || limit > MaxSemaphoreLimit:
		return Lease{}, fmt.Errorf("%w: limit %d is out of range: it must be between 1 and %d", ErrBadRequest, limit, MaxSemaphoreLimit)
	case o.lockDelay != nil && *o.lockDelay != 0:
		return Lease{}, fmt.Errorf("%w: a semaphore has no lock_delay", ErrBadRequest)
	case o.leaseID != "" && !validLeaseID(o.leaseID):
		return Lease{}, fmt.Errorf("%w: lease_id %.40q must be 32 lowercase hex digits", ErrBadRequest, o.leaseID)
	}
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	if o.leaseID != "" {
		out, ok, err := s.extendOwn(lockLease, name, owner, o.leaseID, ttl, limit)
		if ok || err != nil {
			return out, err
		}
	}
	data := marshalContender(contenderData{Owner: owner, Daemon: s.cfg.Identity})
	sem, err := zklock.NewSemaphore(sess, name, limit, zklock.WithRoot(s.semaphoreRoot()), zklock.WithData(data))
	if err != nil {
		return Lease{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	var g *zklock.Grant
	if wait == 0 {
		g, err = sem.TryAcquire(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		g, err = sem.Acquire(wctx)
		cancel()
	}
	if err != nil {
		return Lease{}, s.semaphoreError(ctx, sess, name, err)
	}
	return s.admit(ctx, &lease{kind: lockLease, grant: g}, name, owner, o.leaseID, ttl, limit)
}

// semaphoreError maps a failed acquire of a semaphore: full when the wait
// ended is a *ConflictError (held).
func (s *Service) semaphoreError(ctx context.Context, sess *zklock.Session, name string, err error) error {
	switch {
	case errors.Is(err, zklock.ErrHeld), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && sess.Connected():
		return &ConflictError{Err: ErrHeld, Name: name}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// semaphoreLease finds the live semaphore lease for a renew or release; a
// lease that has ended is 409 lost (a semaphore has no single current
// token to call it stale against).
func (s *Service) semaphoreLease(name, leaseID string, token uint64) (*lease, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if leaseID == "" || token == 0 {
		return nil, fmt.Errorf("%w: lease_id and token are required", ErrBadRequest)
	}
	s.mu.Lock()
	l := s.lookupLocked(leaseID)
	s.mu.Unlock()
	switch {
	case l != nil && (l.name != name || l.limit == 0):
		return nil, fmt.Errorf("%w: lease %s is not for semaphore %q", ErrBadRequest, leaseID, name)
	case l != nil && token > l.grant.Token:
		return nil, fmt.Errorf("%w: token %d was never issued to lease %s", ErrBadRequest, token, leaseID)
	case l != nil && l.grant.Err() == nil && token == l.grant.Token:
		return l, nil
	}
	return nil, &ConflictError{Err: ErrLost, Name: name, Token: token}
}

// RenewSemaphore extends a live semaphore lease, as Renew does a lock's.
func (s *Service) RenewSemaphore(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	if ttl != 0 {
		if err := validateTTL(ttl); err != nil {
			return Lease{}, err
		}
	}
	l, err := s.semaphoreLease(name, leaseID, token)
	if err != nil {
		return Lease{}, err
	}
	return s.renewLease(ctx, lockLease, l, leaseID, token, ttl, false)
}

// ReleaseSemaphore ends a live semaphore lease and frees its slot.
func (s *Service) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	l, err := s.semaphoreLease(name, leaseID, token)
	if err != nil {
		return err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	return nil
}

// SemaphoreStatus counts the semaphore's holders, read from ZooKeeper.
func (s *Service) SemaphoreStatus(ctx context.Context, name string) (SemaphoreStatus, error) {
	if err := validateName(name); err != nil {
		return SemaphoreStatus{}, err
	}
	sess, err := s.session()
	if err != nil {
		return SemaphoreStatus{}, err
	}
	sem, err := zklock.NewSemaphore(sess, name, 1, zklock.WithRoot(s.semaphoreRoot()))
	if err != nil {
		return SemaphoreStatus{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	n, err := sem.Holders(ctx)
	if err != nil {
		return SemaphoreStatus{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return SemaphoreStatus{Name: name, Holders: n}, nil
}

// semaphores serves /v1/semaphores/{name}[/acquire|/renew|/release].
func (h *handler) semaphores(w http.ResponseWriter, r *http.Request, rest string) {
	if r.Method != http.MethodPost {
		if !allow(w, r, http.MethodGet) {
			return
		}
		st, err := h.s.SemaphoreStatus(r.Context(), rest)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
		return
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		writeError(w, http.StatusNotFound, CodeNotFound, "POST needs an action: /v1/semaphores/{name}/acquire, /renew or /release", nil)
		return
	}
	name, action := rest[:i], rest[i+1:]
	switch action {
	case "acquire":
		var req SemaphoreAcquireRequest
		if !decode(w, r, &req) {
			return
		}
		ttl, wait := DefaultTTL, time.Duration(0)
		if req.TTL != nil {
			ttl = time.Duration(*req.TTL)
		}
		if req.Wait != nil {
			wait = time.Duration(*req.Wait)
		}
		var opts []AcquireOption
		if req.LeaseID != "" {
			opts = append(opts, WithLeaseID(req.LeaseID))
		}
		l, err := h.s.AcquireSemaphore(r.Context(), name, req.Owner, req.Limit, ttl, wait, opts...)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
	case "renew", "release":
		var req LeaseRequest
		if !decode(w, r, &req) {
			return
		}
		if action == "release" {
			if req.TTL != nil {
				writeError(w, http.StatusBadRequest, CodeBadRequest, "release takes no ttl", nil)
				return
			}
			if err := h.s.ReleaseSemaphore(r.Context(), name, req.LeaseID, req.Token); err != nil {
				h.fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, ReleaseResponse{Released: true})
			return
		}
		var ttl time.Duration
		if req.TTL != nil {
			ttl = time.Duration(*req.TTL)
		}
		l, err := h.s.RenewSemaphore(r.Context(), name, req.LeaseID, req.Token, ttl)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
	default:
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("unknown action %q: use acquire, renew or release", action), nil)
	}
}

package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seqd/seqd/api"
)

// Held is a lease that renews itself every third of its TTL until it is
// released or lost. Lost closes, and Context ends, as soon as the lease
// can no longer be trusted: the daemon answered that it ended (lost, stale,
// broken), or no renewal succeeded before its deadline (the time the last
// successful grant or renewal was sent, plus the TTL). It is never reported
// live past that deadline, whatever the daemon or the network do.
//
// Holding is never guaranteed: send Lease().Sequencer (or Token) with
// every write, and let the resource refuse a stale one.
type Held struct {
	c *Client

	mu       sync.Mutex
	lease    api.Lease
	deadline time.Time // monotonic: sent + TTL of the last confirmed grant or renewal
	err      error     // why it ended; nil while held

	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{} // Release asks the renewer to stop
	done   chan struct{} // the renewer has stopped
	once   sync.Once
}

// ErrReleased is the cause of a Held's Context once it was released.
var ErrReleased = errors.New("seqd: lease released")

// Hold acquires the lock name (as Acquire, with the same options) and keeps
// the lease renewed until Release or its loss.
func (c *Client) Hold(ctx context.Context, name string, opts ...AcquireOption) (*Held, error) {
	return c.hold(func() (api.Lease, error) { return c.Acquire(ctx, name, opts...) })
}

// HoldSemaphore is Hold for a slot of the semaphore name.
func (c *Client) HoldSemaphore(ctx context.Context, name string, limit int, opts ...SemaphoreOption) (*Held, error) {
	return c.hold(func() (api.Lease, error) { return c.AcquireSemaphore(ctx, name, limit, opts...) })
}

// HoldLeadership is Hold for the leadership of the election name (as
// AcquireLeadership).
func (c *Client) HoldLeadership(ctx context.Context, name, value string, opts ...CampaignOption) (*Held, error) {
	return c.hold(func() (api.Lease, error) { return c.AcquireLeadership(ctx, name, value, opts...) })
}

func (c *Client) hold(grant func() (api.Lease, error)) (*Held, error) {
	sent := time.Now()
	l, err := grant()
	if err != nil {
		return nil, err
	}
	h := &Held{c: c, lease: l, deadline: sent.Add(time.Duration(l.TTL)), stop: make(chan struct{}), done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	go h.renew()
	return h, nil
}

// Lease is the lease as last granted or renewed.
func (h *Held) Lease() api.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Lost closes when the lease is lost or released: stop acting on it.
func (h *Held) Lost() <-chan struct{} { return h.ctx.Done() }

// Context ends when the lease is lost or released; its cause (Err) says
// why. Run the work that needs the lease under it.
func (h *Held) Context() context.Context { return h.ctx }

// Err is why the lease ended (ErrReleased after Release); nil while held.
func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// SafeFor is how long the lease is certain to be held, as far as this
// client knows: until its deadline; 0 once lost or released.
func (h *Held) SafeFor() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return 0
	}
	return max(0, time.Until(h.deadline))
}

// Release stops renewing and releases the lease (an election's: resigns).
// A lease already lost is not released (the daemon would refuse it): its
// loss is returned.
func (h *Held) Release(ctx context.Context) error {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	h.mu.Lock()
	lost, l := h.err, h.lease
	if lost == nil {
		h.err = ErrReleased
	}
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	h.cancel(ErrReleased)
	return h.c.Release(ctx, l)
}

// end marks the lease lost with err, once.
func (h *Held) end(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
	h.cancel(err)
}

// renew renews every api.RenewInterval (TTL/3), retries every
// api.RetryInterval (TTL/12) after a failure that is not an answer of the
// daemon, and ends the lease on the daemon's refusal or at its deadline.
func (h *Held) renew() {
	defer close(h.done)
	l := h.Lease()
	interval := api.RenewInterval(time.Duration(l.TTL))
	next := interval
	var last error // the last failed renewal's
	for {
		h.mu.Lock()
		deadline := h.deadline
		h.mu.Unlock()
		t := time.NewTimer(max(0, min(next, time.Until(deadline))))
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-t.C:
		}
		if !time.Now().Before(deadline) {
			if last != nil {
				h.end(fmt.Errorf("%w: no renewal succeeded before the lease's deadline (the last: %w)", ErrLost, last))
			} else {
				h.end(fmt.Errorf("%w: no renewal succeeded before the lease's deadline", ErrLost))
			}
			return
		}
		if next, last = h.renewOnce(l, interval, deadline); next < 0 {
			return
		}
	}
}

// renewOnce renews once, bounded by the deadline, and returns how long to
// wait before the next renewal: interval after a success,
// interval/api.RetryDivisor after a failure to reach the daemon (with that
// failure), -1 when the lease has ended.
func (h *Held) renewOnce(l api.Lease, interval time.Duration, deadline time.Time) (time.Duration, error) {
	ctx, cancel := context.WithDeadline(h.ctx, deadline) // never past the deadline
	defer cancel()
	sent := time.Now()
	renewed, err := h.c.Renew(ctx, l, 0)
	var ae *api.APIError
	switch {
	case err == nil:
		h.mu.Lock()
		h.lease, h.deadline = renewed, sent.Add(time.Duration(renewed.TTL))
		h.mu.Unlock()
		return interval, nil
	case errors.Is(err, ErrProtocol):
		// An answer that cannot be trusted: nothing says the lease still holds.
		h.end(fmt.Errorf("%w: its renewal's answer broke the protocol: %w", ErrLost, err))
		return -1, nil
	case errors.As(err, &ae) && ae.Status/100 == 4:
		// The daemon's answer: the lease has ended (409 lost, stale_token,
		// broken), or this renewal can never succeed.
		h.end(err)
		return -1, nil
	}
	return max(interval/api.RetryDivisor, 10*time.Millisecond), err
}

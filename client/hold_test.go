package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
)

func newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(daemon.addr, append([]client.Option{client.WithoutEnv()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// valid asks the daemon whether seq is its lock's current holder's.
func valid(t *testing.T, c *client.Client, seq string) bool {
	t.Helper()
	r, err := c.Check(ctxT(t, 10*time.Second), seq)
	if err != nil && !errors.Is(err, client.ErrNotHeld) && r.Code == "" {
		t.Fatalf("check %s: %v", seq, err)
	}
	return r.Valid
}

// TestHoldOutlivesItsTTL: a held lease renews itself past three TTLs and is
// released at the end. The daemon's own expiry tells the TTLs: three
// control leases, the same lease acquired without Hold, one after the
// other's expiry, each expire while the held lease, acquired first, stays
// valid.
func TestHoldOutlivesItsTTL(t *testing.T) {
	c := newClient(t)
	ctx := ctxT(t, time.Minute)
	const ttl = 1500 * time.Millisecond
	h, err := c.Hold(ctx, "hold/outlives", client.TTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		bare, err := c.Acquire(ctx, fmt.Sprintf("hold/control-%d", i), client.TTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		for valid(t, c, bare.Sequencer) {
			if ctx.Err() != nil {
				t.Fatalf("control lease %d, never renewed, is still valid: the daemon does not expire a lease, the test proves nothing", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-h.Lost():
			t.Fatalf("the held lease was lost before control lease %d expired: %v", i, h.Err())
		default:
		}
		if !valid(t, c, h.Lease().Sequencer) {
			t.Fatalf("the daemon no longer holds the held lease when control lease %d has expired", i)
		}
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(h.Err(), client.ErrReleased) || h.SafeFor() != 0 {
		t.Fatalf("after Release: Err %v, SafeFor %v", h.Err(), h.SafeFor())
	}
	if valid(t, c, h.Lease().Sequencer) {
		t.Fatal("the released lease is still valid")
	}
}

// TestHoldSignalsLoss: the contender deleted in ZooKeeper, as an operator
// or another client could: the daemon answers the next renewal 409, and
// Lost closes within one renew interval (TTL/3). Release then returns the
// loss and sends nothing.
func TestHoldSignalsLoss(t *testing.T) {
	c := newClient(t)
	ctx := ctxT(t, time.Minute)
	const ttl = 1500 * time.Millisecond
	h, err := c.Hold(ctx, "hold/broken", client.TTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect(daemon.zk.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kids, _, err := conn.Children("/seqd/locks/hold/broken")
	if err != nil || len(kids) != 1 {
		t.Fatalf("contenders %v, %v", kids, err)
	}
	broken := time.Now()
	if err := conn.Delete("/seqd/locks/hold/broken/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-time.After(5 * ttl):
		t.Fatal("the loss was not signalled")
	}
	took := time.Since(broken)
	t.Logf("loss signalled %v after the break: %.2f of the renew interval", took.Round(time.Millisecond), took.Seconds()/(ttl/3).Seconds())
	if took > ttl/3+time.Second {
		t.Errorf("loss signalled %v after the break, more than one renew interval (%v) and a margin", took, ttl/3)
	}
	if !errors.Is(h.Err(), client.ErrLost) && !strings.Contains(h.Err().Error(), "stale") {
		t.Errorf("Err = %v, want the daemon's lost or stale answer", h.Err())
	}
	if err := h.Release(ctx); err == nil || errors.Is(err, client.ErrReleased) {
		t.Errorf("Release of a lost lease = %v, want its loss", err)
	}
}

// TestHoldNeverLivePastItsDeadline: with the daemon out of reach (a proxy
// in between, cut), no renewal succeeds, and the lease is reported lost at
// its deadline (sent + TTL of the last renewal), not later.
func TestHoldNeverLivePastItsDeadline(t *testing.T) {
	p := testenv.NewProxy("daemon")
	t.Cleanup(p.Close)
	addr, err := p.Forward(strings.TrimPrefix(daemon.addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New("http://"+addr, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, time.Minute)
	const ttl = 2 * time.Second
	h, err := c.Hold(ctx, "hold/unreachable", client.TTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	p.Cut()
	select {
	case <-h.Lost():
	case <-time.After(3 * ttl):
		t.Fatal("the lease was still reported held long after its TTL")
	}
	took := time.Since(cut)
	t.Logf("lost %v after the cut (TTL %v): %.2f of the TTL", took.Round(time.Millisecond), ttl, took.Seconds()/ttl.Seconds())
	if took > ttl+500*time.Millisecond {
		t.Errorf("lost %v after the cut: later than the deadline (at most one TTL after the last renewal was sent)", took)
	}
	if !errors.Is(h.Err(), client.ErrLost) {
		t.Errorf("Err = %v, want ErrLost", h.Err())
	}
}

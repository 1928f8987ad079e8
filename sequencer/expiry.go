package sequencer

import (
	"time"

	"github.com/seqd/seqd/zklock"
)

// The daemon's schedule of lease expiries: every live lease sits in one heap
// by its absolute expiry, and one timer of the Service's clock is armed, with
// TimerAt, for the earliest. A renewal moves the lease in the heap; one
// goroutine (runExpiries) ends the leases whose expiry has passed. A clock
// that jumps fires the timer, and exactly the leases whose expiry is not
// after the new time end.

// expiries is guarded by the lease table's lock, like the leases' expires
// it orders.
type expiries struct {
	h     leaseHeap
	c     <-chan time.Time // the armed timer's channel; nil when none
	t     zklock.Timer
	armed time.Time     // the armed timer's deadline
	kick  chan struct{} // the timer was re-armed: runExpiries takes the new c
}

// leaseHeap orders leases by expires; each lease knows its index (at).
type leaseHeap []*lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = int32(i), int32(j)
}
func (h *leaseHeap) Push(x any) {
	l := x.(*lease)
	l.at = int32(len(*h))
	*h = append(*h, l)
}
func (h *leaseHeap) Pop() any {
	old := *h
	n := len(old) - 1
	l := old[n]
	old[n] = nil
	*h = old[:n]
	l.at = -1
	if n == 0 || cap(*h) > 64 && n < cap(*h)/4 {
		*h = append(leaseHeap(nil), (*h)...) // give back the memory of a crowd gone
	}
	return l
}

// clear empties the schedule (the timer stays armed).
func (e *expiries) clear() {
	for _, l := range e.h {
		l.at = -1
	}
	e.h = nil
}

// arm arms the timer for the earliest expiry if none is armed or the
// armed one is later. The timer is armed before it returns, so that a
// clock moved right after an acquire or a renewal still fires it.
func (e *expiries) arm(clock zklock.Clock) {
	if len(e.h) == 0 {
		return
	}
	next := e.h[0].expires
	if e.c != nil && !next.Before(e.armed) {
		return
	}
	if e.t != nil {
		e.t.Stop()
	}
	e.c, e.t = clock.TimerAt(next)
	e.armed = next
	poke(e.kick)
}

// poke wakes the goroutine that waits on ch, unless it is woken already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

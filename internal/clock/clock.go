// Package clock holds Fake, a manual zklock.Clock: seqd's time-dependent
// logic (lease TTLs, lock-loss deadlines, kill deadlines) takes a clock as a
// parameter, so that tests can replay a pause deterministically with Fake
// instead of sleeping.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Timer is a pending call; Stop reports whether it stopped it before it ran.
// It is the same type as zklock.Timer, so that Fake is a zklock.Clock.
type Timer = interface{ Stop() bool }

// Fake is a manual clock: time moves only when Advance or Set is called, and
// then every timer that has come due fires, in deadline order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*fakeTimer
	added  chan struct{} // closed and replaced whenever a timer is added
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  int
	fire func(now time.Time)
}

// NewFake returns a fake clock that starts at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t, added: make(chan struct{})} }

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f (run in its own goroutine, as time.AfterFunc does).
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	return c.add(d, func(time.Time) { go f() })
}

// NewTimer returns a channel that receives the fake time when d has passed.
func (c *Fake) NewTimer(d time.Duration) (<-chan time.Time, Timer) {
	ch := make(chan time.Time, 1)
	t := c.add(d, func(now time.Time) { ch <- now })
	return ch, t
}

// TimerAt returns a channel that receives the fake time at deadline.
func (c *Fake) TimerAt(deadline time.Time) (<-chan time.Time, Timer) {
	ch := make(chan time.Time, 1)
	t := c.addAt(deadline, func(now time.Time) { ch <- now })
	return ch, t
}

func (c *Fake) add(d time.Duration, fire func(time.Time)) *fakeTimer {
	c.mu.Lock()
	at := c.now.Add(d)
	c.mu.Unlock()
	return c.addAt(at, fire)
}

func (c *Fake) addAt(at time.Time, fire func(time.Time)) *fakeTimer {
	c.mu.Lock()
	c.seq++
	t := &fakeTimer{c: c, at: at, seq: c.seq, fire: fire}
	if !at.After(c.now) {
		now := c.now
		c.mu.Unlock()
		fire(now)
		return t
	}
	c.timers = append(c.timers, t)
	close(c.added)
	c.added = make(chan struct{})
	c.mu.Unlock()
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock forward by d, firing the timers that come due.
func (c *Fake) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards), firing the timers that come due
// in deadline order, each seeing its own deadline as the time.
func (c *Fake) Set(t time.Time) {
	for {
		c.mu.Lock()
		sort.Slice(c.timers, func(i, j int) bool {
			if c.timers[i].at.Equal(c.timers[j].at) {
				return c.timers[i].seq < c.timers[j].seq
			}
			return c.timers[i].at.Before(c.timers[j].at)
		})
		if len(c.timers) == 0 || c.timers[0].at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := c.timers[0]
		c.timers = c.timers[1:]
		if next.at.After(c.now) {
			c.now = next.at
		}
		now := c.now
		c.mu.Unlock()
		next.fire(now)
	}
}

// Pending returns the number of timers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitPending blocks until at least n timers are pending or done closes; it
// lets a test wait for the code under test to arm its timers instead of
// sleeping. It reports whether n were reached.
func (c *Fake) WaitPending(n int, done <-chan struct{}) bool {
	for {
		c.mu.Lock()
		got, added := len(c.timers), c.added
		c.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-added:
		case <-done:
			return false
		}
	}
}

// WaitTimerAt blocks until a timer due at at is pending or done closes,
// and reports whether one was. Where Pending counts every timer, it
// singles out the one a test is waiting for by its deadline.
func (c *Fake) WaitTimerAt(at time.Time, done <-chan struct{}) bool {
	for {
		c.mu.Lock()
		found, added := false, c.added
		for _, t := range c.timers {
			if t.at.Equal(at) {
				found = true
				break
			}
		}
		c.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-added:
		case <-done:
			return false
		}
	}
}

package zklock

import "time"

// Clock is the time source of loss deadlines and waits. Options.Clock takes
// one so that a test can replay a pause deterministically; the default is the
// wall clock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer returns a timer whose channel receives once d has passed.
	NewTimer(d time.Duration) (<-chan time.Time, Timer)
	// TimerAt returns a timer whose channel receives at deadline. Logic
	// that waits for an absolute moment (a lease's expiry) uses it rather
	// than NewTimer(deadline.Sub(Now())): a clock that moves between the
	// two calls would postpone the timer by the move.
	TimerAt(deadline time.Time) (<-chan time.Time, Timer)
}

// Timer is a pending call; Stop reports whether it stopped it before it ran.
// It is an alias of the interface literal so that another package's clock
// satisfies Clock without importing zklock.
type Timer = interface{ Stop() bool }

// WallClock is the real time, the default Clock.
func WallClock() Clock { return wallClock{} }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (wallClock) NewTimer(d time.Duration) (<-chan time.Time, Timer) {
	t := time.NewTimer(d)
	return t.C, t
}

func (wallClock) TimerAt(deadline time.Time) (<-chan time.Time, Timer) {
	t := time.NewTimer(time.Until(deadline))
	return t.C, t
}

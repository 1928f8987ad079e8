package zklock

import "time"

// Observer is told what a Session and its locks do, for metrics or tracing.
// zklock names no metrics itself: a program gives Options.Observer an
// implementation that records these events under its own names.
//
// Methods are called synchronously from the session's and the locks'
// goroutines, some of them from go-zookeeper's event goroutine: they must be
// safe for concurrent use, quick, and must not block or call back into
// zklock.
type Observer interface {
	// Waiting is called with +1 when Acquire starts waiting for lock and
	// with -1 when it stops waiting (granted or not). TryAcquire does not
	// wait and is not reported.
	Waiting(lock string, delta int)
	// Granted is called when a grant of lock is declared; wait is how long
	// its Acquire or TryAcquire took.
	Granted(lock string, wait time.Duration)
	// GrantEnded is called once for every grant reported by Granted, when
	// it ends: err is ErrReleased after a release, otherwise it wraps
	// ErrLockLost and says why.
	GrantEnded(lock string, err error)
	// TokenRegression is called when ZooKeeper produced a token for lock
	// that was not above one already issued: the grant was refused.
	TokenRegression(lock string)
	// Connected is called with true when the connection to ZooKeeper is
	// (re)established and with false when it is lost or the session ends.
	Connected(up bool)
	// SessionExpired is called when ZooKeeper expired the session.
	SessionExpired()
	// Overtaken is called when a grant of lock is declared lost because a
	// contender that sorts below it appeared (planted by another client);
	// GrantEnded follows.
	Overtaken(lock string)
	// Blocked is called, once per node, when lock is found blocked by a
	// contender-shaped node that no session owns (it is not ephemeral).
	Blocked(lock string)
}

// HoldObserver is an Observer that is also told how long each grant was
// held: Held is called right before GrantEnded, with the time from the
// grant to its end (release or loss). An Observer without it is not told.
type HoldObserver interface {
	Observer
	Held(lock string, held time.Duration)
}

// nopObserver is the default Observer: it records nothing.
type nopObserver struct{}

func (nopObserver) Waiting(string, int)           {}
func (nopObserver) Granted(string, time.Duration) {}
func (nopObserver) GrantEnded(string, error)      {}
func (nopObserver) TokenRegression(string)        {}
func (nopObserver) Connected(bool)                {}
func (nopObserver) SessionExpired()               {}
func (nopObserver) Overtaken(string)              {}
func (nopObserver) Blocked(string)                {}

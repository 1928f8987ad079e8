package zklock

import (
	"errors"
	"fmt"
	"sync"
)

// ErrTokenRegression: ZooKeeper produced a token not above one already
// issued for the lock (for example after a restore from an old snapshot, or
// when the lock node was deleted and re-created in version mode). The grant
// is refused, never handed out.
var ErrTokenRegression = errors.New("zklock: token regression")

// RegressionError gives the figures of a refused token.
type RegressionError struct {
	Name  string
	Token uint64 // what ZooKeeper produced
	Last  uint64 // the highest issued before
}

func (e *RegressionError) Error() string {
	return fmt.Sprintf("zklock: token regression on %q: got %d, already issued %d", e.Name, e.Token, e.Last)
}

// Is makes errors.Is(err, ErrTokenRegression) true.
func (e *RegressionError) Is(target error) bool { return target == ErrTokenRegression }

// DefaultGuardNames is how many lock names a Guard remembers by default.
const DefaultGuardNames = 10000

// Guard remembers the highest token issued per lock in this process, for the
// locks granted most recently: its memory is bounded, so that a process that
// locks ever new names (order/<id>) does not grow without end. A lock not
// granted here for a long while may be forgotten; the check then starts
// again from its next grant. Share one Guard across the sessions of a
// process.
type Guard struct {
	mu    sync.Mutex
	max   int               // names kept in both generations together
	cur   map[string]uint64 // names issued since the last turn
	older map[string]uint64 // the generation before; dropped at the next turn
}

// NewGuard returns an empty guard that remembers up to DefaultGuardNames
// lock names.
func NewGuard() *Guard { return NewGuardSize(DefaultGuardNames) }

// NewGuardSize returns an empty guard that remembers at least the last
// names/2 and at most names lock names it issued tokens for.
func NewGuardSize(names int) *Guard {
	return &Guard{max: max(names, 2), cur: map[string]uint64{}}
}

// Issue records token as issued for name, or refuses it with a
// *RegressionError if it is not above the highest issued before.
func (g *Guard) Issue(name string, token uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.lastLocked(name); ok && token <= last {
		return &RegressionError{Name: name, Token: token, Last: last}
	}
	if _, ok := g.cur[name]; !ok && len(g.cur) >= g.max/2 {
		// Turn: the names not issued during a whole generation go.
		g.older, g.cur = g.cur, make(map[string]uint64, g.max/2)
	}
	g.cur[name] = token
	delete(g.older, name)
	return nil
}

// Last returns the highest token issued for name (0 if none, or forgotten).
func (g *Guard) Last(name string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	last, _ := g.lastLocked(name)
	return last
}

func (g *Guard) lastLocked(name string) (uint64, bool) {
	if t, ok := g.cur[name]; ok {
		return t, true
	}
	t, ok := g.older[name]
	return t, ok
}

// Len is how many lock names the guard remembers now.
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.cur) + len(g.older)
}

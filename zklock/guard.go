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

// Guard remembers the highest token issued per lock in this process. Share
// one Guard across the sessions of a process.
type Guard struct {
	mu   sync.Mutex
	last map[string]uint64
}

// NewGuard returns an empty guard.
func NewGuard() *Guard { return &Guard{last: map[string]uint64{}} }

// Issue records token as issued for name, or refuses it with a
// *RegressionError if it is not above the highest issued before.
func (g *Guard) Issue(name string, token uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if last, ok := g.last[name]; ok && token <= last {
		return &RegressionError{Name: name, Token: token, Last: last}
	}
	g.last[name] = token
	return nil
}

// Last returns the highest token issued for name (0 if none).
func (g *Guard) Last(name string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last[name]
}

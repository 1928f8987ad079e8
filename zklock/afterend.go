package zklock

import "sync"

// Hooks run when a grant ends, so that a holder of many grants needs no
// goroutine per grant waiting on Lost.

// afterEnds holds the hooks of the grants that have not ended yet, beside
// the Grant rather than in it: an entry lives from the first AfterEnd to the
// grant's end. A grant's hooks are one func, composed in the order given.
var afterEnds struct {
	mu sync.Mutex
	m  map[*Grant]func(error)
}

// AfterEnd arranges for f to be called once with the grant's error
// (ErrReleased, or one wrapping ErrLockLost) when the grant ends, for any
// reason; if it has already ended, f is called at once.
//
// f runs in a goroutine of its own, started when the grant ends: never in
// the goroutine that ends the grant and never while the grant's mutex is
// held, so it may call any method of the grant (Release included, which
// waits for the grant's monitor). The hooks registered on one grant before
// its end share that goroutine and run one after another, in the order
// registered, so a hook should not block for long.
//
// Elections' leaderships, semaphore slots and read grants are Grants too.
func (g *Grant) AfterEnd(f func(error)) {
	afterEnds.mu.Lock()
	if err := g.Err(); err != nil {
		afterEnds.mu.Unlock()
		go f(err)
		return
	}
	if afterEnds.m == nil {
		afterEnds.m = map[*Grant]func(error){}
	}
	if prev := afterEnds.m[g]; prev != nil {
		afterEnds.m[g] = func(err error) { prev(err); f(err) }
	} else {
		afterEnds.m[g] = f
	}
	afterEnds.mu.Unlock()
}

// runAfterEnd starts the hooks of g if it has ended; end calls it after
// unlocking g.mu, whether or not that call ended the grant (a second call
// finds no hooks left).
func (g *Grant) runAfterEnd() {
	err := g.Err()
	if err == nil {
		return
	}
	afterEnds.mu.Lock()
	f := afterEnds.m[g]
	delete(afterEnds.m, g)
	afterEnds.mu.Unlock()
	if f != nil {
		go f(err)
	}
}

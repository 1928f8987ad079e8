package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// MultiGrant is one holding of every lock of a MultiMutex's set: granted at
// once, and lost at once. Holding is never guaranteed (see Grant): Lost
// closes as soon as any lock of the set can no longer be trusted, and the
// others are then given up too, without a clean release, so that their
// lock-delays apply. A holder sends each lock's token with the writes that
// lock protects.
type MultiGrant struct {
	// Locks are the set's locks, in the order NewMultiMutex was given
	// them, each with its token: in zxid mode the czxid of the multi that
	// created the contenders, the same for every lock; in version mode each
	// lock's own counter.
	Locks []HeldLock

	s      *Session
	grants []*Grant // one per lock, as Locks
	lost   chan struct{}

	mu    sync.Mutex
	err   error
	hooks []func(error)
}

// HeldLock is one lock of a MultiGrant.
type HeldLock struct {
	Name  string // lock name
	Path  string // our contender node
	Token uint64 // the lock's fencing token
}

// Sequencer is the lock's sequencer string, name@token: an exclusive
// lock's, which fences that lock's resource.
func (h HeldLock) Sequencer() string { return fmt.Sprintf("%s@%d", h.Name, h.Token) }

// Lost closes when the grant ends: lost (any lock of the set), or released.
func (mg *MultiGrant) Lost() <-chan struct{} { return mg.lost }

// Err is nil while the grant holds; after Lost closes it says why:
// ErrReleased, or an error wrapping ErrLockLost that names the lock lost.
func (mg *MultiGrant) Err() error {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	return mg.err
}

// SafeFor is how long, from now, no lock of the set is guaranteed to be
// granted elsewhere (see Grant.SafeFor); 0 once the grant has ended.
func (mg *MultiGrant) SafeFor() time.Duration {
	if mg.Err() != nil {
		return 0
	}
	safe := mg.grants[0].SafeFor()
	for _, g := range mg.grants[1:] {
		safe = min(safe, g.SafeFor())
	}
	return safe
}

// AfterEnd arranges for f to be called once, in a goroutine of its own,
// with the grant's error when it ends; at once if it has ended.
func (mg *MultiGrant) AfterEnd(f func(error)) {
	mg.mu.Lock()
	if err := mg.err; err != nil {
		mg.mu.Unlock()
		go f(err)
		return
	}
	mg.hooks = append(mg.hooks, f)
	mg.mu.Unlock()
}

// end records why the grant ended (the first reason wins), closes Lost and
// starts the hooks. It reports whether this call ended it.
func (mg *MultiGrant) end(err error) bool {
	mg.mu.Lock()
	if mg.err != nil {
		mg.mu.Unlock()
		return false
	}
	mg.err = err
	hooks := mg.hooks
	mg.hooks = nil
	close(mg.lost)
	mg.mu.Unlock()
	if len(hooks) > 0 {
		go func() {
			for _, f := range hooks {
				f(err)
			}
		}()
	}
	return true
}

// lose ends the grant because its lock g was lost with err, and gives up
// the other locks: their holder has been told it holds none of them.
func (mg *MultiGrant) lose(g *Grant, err error) {
	if !mg.end(fmt.Errorf("%w (the lock %s of the set)", err, g.Name)) {
		return
	}
	mg.s.log.Warn("multi-lock lost: giving up the other locks of the set", "lock", g.Name, "token", g.Token, "err", err)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	mg.each(func(_ int, h *Grant) {
		if h != g {
			h.Abandon(ctx) // the janitor deletes what it cannot
		}
	})
}

// each runs f on every lock's grant at once, and waits.
func (mg *MultiGrant) each(f func(i int, g *Grant)) {
	var wg sync.WaitGroup
	for i, g := range mg.grants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, g)
		}()
	}
	wg.Wait()
}

// lossOf is the error of the first lock found lost, or nil.
func (mg *MultiGrant) lossOf() error {
	for _, g := range mg.grants {
		if err := g.Err(); err != nil && !errors.Is(err, ErrReleased) {
			return fmt.Errorf("%w (the lock %s of the set)", err, g.Name)
		}
	}
	return nil
}

// Verify reads every lock's contenders (see Grant.Verify) and ends the
// grant if any lock is lost. It returns the grant's error afterwards (nil
// while it holds), or a read's error when ZooKeeper cannot answer.
func (mg *MultiGrant) Verify(ctx context.Context) error {
	if err := mg.Err(); err != nil {
		return err
	}
	errs := make([]error, len(mg.grants))
	mg.each(func(i int, g *Grant) { errs[i] = g.Verify(ctx) })
	var unanswered error
	for i, g := range mg.grants {
		switch {
		case errs[i] == nil:
		case g.Err() != nil:
			mg.lose(g, g.Err())
		case unanswered == nil:
			unanswered = errs[i]
		}
	}
	if err := mg.Err(); err != nil {
		return err
	}
	return unanswered
}

// Release releases every lock of the set with one multi that deletes the
// contenders (and marks the lock-delay markers released). Releasing a lost
// grant releases what is left and returns the loss; releasing twice
// returns nil. What ZooKeeper cannot delete before ctx ends, the session's
// janitor deletes later, and Release returns the error.
func (mg *MultiGrant) Release(ctx context.Context) error { return mg.release(ctx, true) }

// Abandon ends the grant as if it had been lost: the contenders are
// deleted without recording a clean release, so that each lock's
// lock-delay applies before its next grant.
func (mg *MultiGrant) Abandon(ctx context.Context) error { return mg.release(ctx, false) }

func (mg *MultiGrant) release(ctx context.Context, clean bool) error {
	if !mg.end(ErrReleased) {
		if err := mg.Err(); !errors.Is(err, ErrReleased) {
			return err
		}
		return nil
	}
	var ops []any
	var live []*Grant
	for _, g := range mg.grants {
		if g.halt() == nil {
			live = append(live, g)
			ops = append(ops, g.releaseOps(clean)...)
		}
	}
	if len(ops) > 0 {
		s := mg.s
		err := s.do(ctx, func() error { _, err := s.conn.Multi(ops...); return err })
		switch {
		case err == nil:
			for _, g := range live {
				g.released(nil)
			}
		case errors.Is(err, zk.ErrNoNode):
			// A node or a marker gone: each lock on its own, as a Grant
			// releases.
			for _, g := range live {
				g.released(g.deleteOwn(ctx, clean))
			}
		default:
			for _, g := range live {
				g.released(err) // left to the janitor
			}
			return err
		}
	}
	return mg.lossOf()
}

// ReleaseOnClose is Release for a holder about to Close the session (see
// Grant.ReleaseOnClose): the contenders are left to the session's close,
// unless a lock has a lock-delay, whose marker must record the clean end.
func (mg *MultiGrant) ReleaseOnClose(ctx context.Context) error {
	for _, g := range mg.grants {
		if g.m.delay > 0 {
			return mg.Release(ctx)
		}
	}
	if !mg.end(ErrReleased) {
		if err := mg.Err(); !errors.Is(err, ErrReleased) {
			return err
		}
		return nil
	}
	for _, g := range mg.grants {
		g.ReleaseOnClose(ctx)
	}
	return mg.lossOf()
}

// releaseOps are the requests of a release of g in a multi: the delete of
// its contender and, for a clean release of a lock with a lock-delay, the
// marker marked released (see Grant.deleteOwn).
func (g *Grant) releaseOps(clean bool) []any {
	m := g.m
	ops := []any{&zk.DeleteRequest{Path: g.Path, Version: -1}}
	if clean && m.delay > 0 {
		data := delayMarker{state: "released", node: path.Base(g.Path)}.bytes()
		ops = append(ops, &zk.SetDataRequest{Path: m.delayPath(), Data: data, Version: -1})
	}
	return ops
}

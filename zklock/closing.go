package zklock

import (
	"context"
	"errors"
)

// ReleaseOnClose is Release for a holder about to Close the session, which
// deletes every ephemeral node of the session at once: it ends the grant as
// released (ErrReleased) without a request of its own, leaving the contender
// to the session's close, so that a holder of many grants closes in one
// round trip rather than one per grant. Until the session closes the lock
// stays held in ZooKeeper. It does not wait for the grant's monitor to
// return (nothing is deleted that it could mistake for a loss); the
// session's Close does. A grant with a lock-delay is released as by
// Release, since its marker must record the clean end. Like Release, it
// returns the loss error of a grant already lost, and nil for one released.
func (g *Grant) ReleaseOnClose(ctx context.Context) error {
	if g.m.delay > 0 {
		return g.Release(ctx)
	}
	g.stopOnce.Do(func() { close(g.stop) })
	if !g.end(ErrReleased) {
		if err := g.Err(); !errors.Is(err, ErrReleased) {
			return err
		}
		return nil
	}
	g.m.s.log.Debug("released, its node left to the session's close", "lock", g.Name, "token", g.Token)
	return nil
}

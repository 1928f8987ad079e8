package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Nodes that other ZooKeeper clients plant under a lock node (possible
// wherever the ACL lets them): a contender-shaped node that is not
// ephemeral blocks the lock but is no holder; a contender that appears
// below a live holder takes the lock from it, so the holder's grant is
// declared lost as soon as the holder looks (within lookEvery; at once on
// Verify), and renew, check and status keep one answer.

// ErrOvertaken: a contender with a lower sequence appeared under the held
// lock (wrapped in ErrLockLost).
var ErrOvertaken = errors.New("zklock: a lower contender appeared under the held lock")

// liveGrants are the session's grants that have not ended, by lock node.
type liveGrants struct {
	mu sync.Mutex
	m  map[string]*Grant
}

func (l *liveGrants) add(g *Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*Grant{}
	}
	l.m[g.m.path] = g
}

func (l *liveGrants) remove(g *Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m[g.m.path] == g {
		delete(l.m, g.m.path)
	}
}

func (l *liveGrants) get(lockPath string) *Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[lockPath]
}

// Verify reads the lock's contenders and ends the grant (ErrLockLost) if
// its contender is gone or another contender sorts below it (a
// semaphore's lease: if its node is gone, or not as it was created). It
// returns the
// grant's error afterwards (nil while it holds), or the read's error when
// ZooKeeper cannot answer (the grant is then left as it is: its loss
// deadline decides). A daemon calls it before it vouches for a grant, on a
// renewal.
func (g *Grant) Verify(ctx context.Context) error {
	if err := g.Err(); err != nil {
		return err
	}
	s := g.m.s
	if g.m.leaseSet {
		return g.verifyOwnNode(ctx)
	}
	var children []string
	err := s.read(ctx, func() (err error) { children, _, err = s.conn.Children(g.m.path); return err })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	cs := sortContenders(children)
	switch lower, ok := g.below(cs); {
	case ok && lower == "":
		return nil
	case ok:
		g.overtaken(ctx, lower)
	default:
		g.lose(contenderDeleted())
	}
	return g.Err()
}

// verifyOwnNode checks a semaphore lease's own node, whose place among the
// others does not matter: it must be there, ours, and as we wrote it. A
// node deleted by another client frees a slot that someone else may take
// at once; the grant ends here, before its holder is told it still holds.
func (g *Grant) verifyOwnNode(ctx context.Context) error {
	s := g.m.s
	var (
		exists bool
		st     *zk.Stat
	)
	if err := s.read(ctx, func() (err error) { exists, st, err = s.conn.Exists(g.Path); return err }); err != nil {
		return err
	}
	switch {
	case !exists:
		g.lose(contenderDeleted())
	default:
		if l := g.notOwn(st); l != nil {
			g.lose(l)
		}
	}
	return g.Err()
}

// notOwn is the loss of a semaphore lease whose node, as st shows it, is
// not as the grant created it: another session's, or rewritten. nil when
// it is.
func (g *Grant) notOwn(st *zk.Stat) *loss {
	if st.EphemeralOwner == g.m.s.ID() && st.Version == 0 {
		return nil
	}
	reason := fmt.Sprintf("lease node %s was replaced or rewritten (owner session 0x%x, data version %d)", g.Path, st.EphemeralOwner, st.Version)
	return &loss{err: fmt.Errorf("%w: %s", ErrLockLost, reason), reason: reason}
}

// below looks for the grant's contender in cs (sorted) and returns, with ok,
// the first contender below it that it must not have: any, for an
// exclusive grant; a writer, for a reader's (readers hold side by side).
// ok is false when the contender is not there.
func (g *Grant) below(cs []contender) (lower string, ok bool) {
	own := path.Base(g.Path)
	for _, c := range cs {
		if c.node == own {
			return lower, true
		}
		if lower == "" && (!g.m.shared || !c.reader) {
			lower = c.node
		}
	}
	return "", false
}

// overtaken ends the grant because node sorts below its contender, and
// reports it with node's owner session.
func (g *Grant) overtaken(ctx context.Context, node string) {
	s := g.m.s
	var owner int64
	var st *zk.Stat
	if err := s.read(ctx, func() (err error) { _, st, err = s.conn.Get(g.m.path + "/" + node); return err }); err == nil {
		owner = st.EphemeralOwner
	}
	reason := fmt.Sprintf("lower contender %s/%s (owner session 0x%x) appeared", g.m.path, node, owner)
	if g.lose(&loss{err: fmt.Errorf("%w: %w: %s", ErrLockLost, ErrOvertaken, reason), reason: reason, orphan: true}, func() { s.obs.Overtaken(g.Name) }) {
		s.log.Error("a lower contender appeared under a held lock: grant lost", "lock", g.Name, "token", g.Token,
			"node", g.m.path+"/"+node, "owner_session", fmt.Sprintf("0x%x", owner))
	}
}

// lose ends the grant with l from outside its monitor (which then stops),
// and deletes the contender when l says it may remain; report runs before
// Lost closes.
func (g *Grant) lose(l *loss, report ...func()) bool {
	if !g.end(l.err, report...) {
		return false
	}
	s := g.m.s
	s.log.Warn("lock lost", "lock", g.Name, "token", g.Token, "reason", l.reason)
	if l.orphan {
		s.deleteLater(g.m.path, g.guid)
	}
	return true
}

// reportBlocked logs and reports, once per node, a contender-shaped node
// that no session owns at the head of lock's queue.
func (s *Session) reportBlocked(lock, node string, czxid int64) {
	key := fmt.Sprintf("%s@%d", node, czxid)
	if s.blocked.has(key) {
		return
	}
	s.blocked.add(key)
	s.obs.Blocked(lock)
	s.log.Error("lock blocked by a contender-shaped node that no session owns (not ephemeral): it stays until someone deletes it",
		"lock", lock, "node", node)
}

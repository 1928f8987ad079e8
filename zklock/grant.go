package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Grant is one holding of a lock. Holding is never guaranteed: Lost closes
// when the grant can no longer be trusted — the session expired, the
// contender node disappeared, or ZooKeeper has been silent for long enough
// that it may have expired the session (Session.Deadline), which comes
// before ZooKeeper could let anyone else in. A holder must stop acting on
// the lock when Lost closes, and must send Token with every write so that
// the resource can refuse it if it acts late anyway.
type Grant struct {
	Name  string // lock name
	Path  string // our contender node
	Token uint64 // fencing token: higher than every earlier grant of this lock

	m    *Mutex
	guid string
	at   time.Time // when it was granted
	// quit is closed when a look must end: by Release, or when the grant
	// ends for any reason. lost, made only once Lost is asked for (a holder
	// of many grants waits with AfterEnd), is closed when the grant ends.
	quit chan struct{}
	lost chan struct{}
	// after is what AfterEnd registered, run once the grant has ended.
	after func(error)
	// looked is when what the grant watches was last read (by its look:
	// one at a time), as a reading of sinceStart; mon is where the
	// session's monitor has it.
	looked time.Duration
	mon    monState

	mu  sync.Mutex
	err error
}

// processStart is when the process began; sinceStart reads the monotonic
// clock against it, so that a grant keeps a time in 8 bytes rather than 24.
var processStart = time.Now()

func sinceStart() time.Duration { return time.Since(processStart) }

// Sequencer is the grant's sequencer string, name@token.
func (g *Grant) Sequencer() string { return fmt.Sprintf("%s@%d", g.Name, g.Token) }

// SafeFor is how long, from now, the lock is guaranteed not to be granted
// elsewhere: the time left before the session's deadline (after which
// ZooKeeper could expire the session and let the next contender in), and 0
// once the grant has ended. Check it before an action that no token can
// fence (an email, a payment): it only shrinks while ZooKeeper is silent.
func (g *Grant) SafeFor() time.Duration {
	if g.Err() != nil {
		return 0
	}
	s := g.m.s
	if !s.Live() {
		return 0
	}
	return max(0, s.Deadline().Sub(s.clock.Now()))
}

// Lost closes when the grant ends: lost, or released.
func (g *Grant) Lost() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lost == nil {
		if g.err != nil {
			return closedChan
		}
		g.lost = make(chan struct{})
	}
	return g.lost
}

// stopLooks closes quit, once; g.mu is held.
func (g *Grant) stopLooks() {
	select {
	case <-g.quit:
	default:
		close(g.quit)
	}
}

// Err is nil while the grant holds; after Lost closes it says why:
// ErrReleased, or an error wrapping ErrLockLost.
func (g *Grant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// end records why the grant ended; the first reason wins. It reports
// whether this call ended it.
// Whoever waits on Lost finds the end already reported to the observer
// (with what report adds).
func (g *Grant) end(err error, report ...func()) bool {
	defer g.runAfterEnd() // deferred first, so it runs after the unlock
	defer g.forget()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return false
	}
	g.err = err
	g.m.s.grants.remove(g)
	obs := g.m.observer()
	if ho, ok := obs.(HoldObserver); ok {
		ho.Held(g.Name, g.m.s.clock.Now().Sub(g.at))
	}
	obs.GrantEnded(g.Name, err)
	for _, r := range report {
		r()
	}
	g.stopLooks()
	if g.lost != nil {
		close(g.lost)
	}
	return true
}

// loss says why a grant was lost.
type loss struct {
	err    error  // for Grant.Err; wraps ErrLockLost
	reason string // for the log
	orphan bool   // the contender may still exist: the janitor deletes it
}

// Release deletes the contender and ends the grant. Releasing a lost grant
// returns its loss error (the holder learns it had lost); releasing twice
// returns nil. If ZooKeeper cannot be reached before ctx ends, the session's
// janitor deletes the node later and Release returns the error.
func (g *Grant) Release(ctx context.Context) error { return g.release(ctx, true) }

// release ends the grant; clean says whether a lock-delay is waived.
func (g *Grant) release(ctx context.Context, clean bool) error {
	if err := g.halt(); err != nil {
		if errors.Is(err, ErrReleased) {
			return nil
		}
		return err
	}
	return g.released(g.deleteOwn(ctx, clean))
}

// halt stops watching the grant, waiting for a look under way; it returns
// the grant's error (nil while it holds).
func (g *Grant) halt() error {
	g.mu.Lock()
	g.stopLooks()
	g.mu.Unlock()
	g.stopWatching()
	return g.Err()
}

// released ends a halted grant as released once the delete of its
// contender answered err; a delete that failed leaves the contender to the
// janitor, and err is returned.
func (g *Grant) released(err error) error {
	s := g.m.s
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	if err != nil && s.Err() == nil {
		s.deleteLater(g.m.path, g.guid)
	}
	g.end(ErrReleased)
	// LogAttrs: nothing is allocated when debug is off (once per cycle).
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "released", slog.String("lock", g.Name), slog.Uint64("token", g.Token))
	return err
}

// deleteNode deletes p (any version). Like callCtx, it stops waiting when
// ctx ends; the delete may still happen.
func (s *Session) deleteNode(ctx context.Context, p string) error {
	return s.do(ctx, func() error { return s.conn.Delete(p, -1) })
}

// Hooks run when a grant ends, so that a holder of many grants needs no
// goroutine per grant waiting on Lost.

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
	g.mu.Lock()
	if err := g.err; err != nil {
		g.mu.Unlock()
		go f(err)
		return
	}
	if prev := g.after; prev != nil {
		g.after = func(err error) { prev(err); f(err) }
	} else {
		g.after = f
	}
	g.mu.Unlock()
}

// runAfterEnd starts the hooks of g if it has ended; end calls it after
// unlocking g.mu, whether or not that call ended the grant (a second call
// finds no hooks left).
func (g *Grant) runAfterEnd() {
	g.mu.Lock()
	err, f := g.err, g.after
	if err != nil {
		g.after = nil
	}
	g.mu.Unlock()
	if err != nil && f != nil {
		go f(err)
	}
}

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
	g.mu.Lock()
	g.stopLooks()
	g.mu.Unlock()
	if !g.end(ErrReleased) {
		if err := g.Err(); !errors.Is(err, ErrReleased) {
			return err
		}
		return nil
	}
	g.m.s.log.Debug("released, its node left to the session's close", "lock", g.Name, "token", g.Token)
	return nil
}

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
	l, err := read(ctx, s, s.childrenOp(g.m.path))
	children = l.names
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
	e, err := read(ctx, s, s.existsOp(g.Path))
	exists, st := e.ok, e.stat
	if err != nil {
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
	n, err := read(ctx, s, s.getOp(g.m.path+"/"+node))
	st = n.stat
	if err == nil {
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

// deleteOwn deletes the grant's contender. A clean release of a grant with
// a lock-delay is one multi that also marks the marker released, so that
// the next holder is not delayed; an unclean one leaves the marker saying
// held, so that it is.
func (g *Grant) deleteOwn(ctx context.Context, clean bool) error {
	m := g.m
	s := m.s
	if !clean || m.delay <= 0 {
		return s.deleteNode(ctx, g.Path)
	}
	data := delayMarker{state: "released", node: path.Base(g.Path)}.bytes()
	err := s.do(ctx, func() error {
		_, err := s.conn.Multi(
			&zk.DeleteRequest{Path: g.Path, Version: -1},
			&zk.SetDataRequest{Path: m.delayPath(), Data: data, Version: -1},
		)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		// Our node is gone (the grant was lost: its end stays unclean), or
		// someone removed the marker (then nothing delays anyone).
		err = s.do(ctx, func() error { return s.conn.Delete(g.Path, -1) })
	}
	return err
}

// Abandon ends the grant as if it had been lost: it deletes the contender
// without recording a clean release, so that a lock-delay applies before
// the next grant (a lease whose TTL passed ends this way).
func (g *Grant) Abandon(ctx context.Context) error { return g.release(ctx, false) }

// newGrant declares the grant of own and hands it to the session's monitor
// with kids,
// the watch set on the lock's children (or the semaphore's leases) while
// acquiring, if any.
func (m *Mutex) newGrant(own, guid string, token uint64, waited time.Duration, kids <-chan zk.Event) (*Grant, error) {
	s := m.s
	g := &Grant{
		Name:   m.name,
		Path:   own,
		Token:  token,
		m:      m,
		quit:   make(chan struct{}),
		guid:   guid,
		at:     s.clock.Now(),
		looked: sinceStart(),
	}
	m.mu.Lock()
	m.grant = g
	m.mu.Unlock()
	if !m.shared {
		// A reader need not be the lowest contender: neither the
		// hand-over shortcut nor the check for a lower one applies.
		s.granted.add(own)
		s.grants.add(g)
	}
	m.observer().Granted(m.name, waited)
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "granted", slog.String("lock", m.name), slog.Uint64("token", token), slog.String("path", own))
	if !s.admit(g, kids) {
		g.end(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
		return nil, ErrClosed
	}
	return g, nil
}

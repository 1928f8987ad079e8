package zklock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Errors of a Mutex and its grants.
var (
	// ErrHeld: TryAcquire found the lock held by another contender.
	ErrHeld = errors.New("zklock: lock held")
	// ErrLockLost: the grant can no longer be trusted (wrapped with why).
	ErrLockLost = errors.New("zklock: lock lost")
	// ErrReleased: the grant was released by its holder.
	ErrReleased = errors.New("zklock: lock released")
	// ErrAlreadyAcquired: the Mutex already holds a grant; release it first.
	ErrAlreadyAcquired = errors.New("zklock: mutex already acquired")
	// ErrBusy: another acquire (or campaign) on the same Mutex, MultiMutex
	// or Election is under way. The second is refused before it writes
	// anything: a lock object acquires once at a time, so concurrent
	// callers each use one of their own.
	ErrBusy = errors.New("zklock: another acquire on this lock object is under way")
)

// DefaultRoot is the znode under which lock nodes live.
const DefaultRoot = "/seqd/locks"

// cleanupTimeout bounds a withdrawal's delete, run on a context that
// outlives the cancelled one.
const cleanupTimeout = 5 * time.Second

// Mutex is one contender for one lock. It holds at most one grant at a
// time and acquires once at a time: a second Acquire while one is under
// way fails at once with ErrBusy. NewMutex does no I/O.
type Mutex struct {
	s     *Session
	name  string
	root  string
	path  string // root + "/" + name
	mode  TokenMode
	data  []byte
	delay time.Duration // lock-delay after an unclean end of our grants
	quiet bool          // an election's or a semaphore's inner mutex: its waits and grants are no lock events
	// shared: the grants are a ReadLock's, which need not be the lowest
	// contender, so they do not go in the session's granted set.
	shared bool
	// leaseSet: the grants are a semaphore's leases, unordered among
	// themselves: each watches its own node only.
	leaseSet bool
	// stamp: nobody reads the lock node's data, so a create may rewrite
	// it to learn its zxid (stampNode).
	stamp bool

	tokenOf tokenSource // the mode's, unless a test or an election replaced it

	mu        sync.Mutex
	acquiring bool // an acquire or campaign is under way (begin)
	grant     *Grant
	// unguarded lets a test start a second acquire while one is under
	// way, to show what begin refuses.
	unguarded bool
}

// NewMutex names a lock on s. It validates the name and touches nothing.
func NewMutex(s *Session, name string, opts ...MutexOption) (*Mutex, error) {
	m := &Mutex{s: s, name: name, root: DefaultRoot, mode: TokenZxid, stamp: true}
	for _, o := range opts {
		o.applyMutex(m)
	}
	return m, m.init()
}

// init validates what the options set and derives the rest; every recipe's
// constructor calls it on its Mutex.
func (m *Mutex) init() error {
	if err := ValidateName(m.name); err != nil {
		return err
	}
	if m.root == "" || m.root[0] != '/' || (len(m.root) > 1 && strings.HasSuffix(m.root, "/")) {
		return fmt.Errorf("zklock: root %q must be an absolute znode path", m.root)
	}
	if m.tokenOf == nil {
		m.tokenOf = m.mode.source()
	}
	if m.tokenOf == nil {
		return fmt.Errorf("zklock: unknown token mode %v", m.mode)
	}
	if m.delay < 0 || m.delay > MaxLockDelay {
		return fmt.Errorf("zklock: lock-delay %v is out of range: it must be between 0s and %v", m.delay, MaxLockDelay)
	}
	m.path = strings.TrimSuffix(m.root, "/") + "/" + m.name
	return nil
}

// observer is the session's Observer, or nobody for an election: its
// campaigns are not lock waits and grants.
func (m *Mutex) observer() Observer {
	if m.quiet {
		return nopObserver{}
	}
	return m.s.obs
}

// Name is the lock name.
func (m *Mutex) Name() string { return m.name }

// Path is the lock node's path.
func (m *Mutex) Path() string { return m.path }

// Acquire waits until the lock is granted, ctx ends (its deadline is the
// wait timeout) or the session ends. On any failure the contender node is
// deleted, with a context that outlives ctx.
func (m *Mutex) Acquire(ctx context.Context) (*Grant, error) { return m.acquire(ctx, true) }

// TryAcquire makes one attempt: it returns ErrHeld if another contender is
// ahead, and leaves no node behind.
func (m *Mutex) TryAcquire(ctx context.Context) (*Grant, error) { return m.acquire(ctx, false) }

// Release releases the current grant (see Grant.Release).
func (m *Mutex) Release(ctx context.Context) error {
	m.mu.Lock()
	g := m.grant
	m.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.Release(ctx)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) (*Grant, error) {
	if err := m.begin(); err != nil {
		return nil, err
	}
	defer m.end()
	return m.lock(ctx, m.data, wait)
}

// lock is one acquire of m as an exclusive contender with data, once begin
// has let it start.
func (m *Mutex) lock(ctx context.Context, data []byte, wait bool) (*Grant, error) {
	create := func(ctx context.Context, guid string) (created, error) { return m.create(ctx, guid, data) }
	return m.contend(ctx, wait, "", create, func(c created, stat *zk.Stat, guid string) (uint64, <-chan zk.Event, error) {
		kids, err := m.awaitGrant(ctx, c, stat, guid, wait)
		if err != nil {
			return 0, nil, err
		}
		if err := m.markHeld(ctx, c.path); err != nil {
			return 0, nil, err
		}
		token, err := m.takeToken(ctx, c.path, stat)
		return token, kids, err
	})
}

// contend is one acquire on m, a Mutex's or a ReadLock's: it claims the
// root's token mode, counts the wait, creates our node with create and
// checks it is ours, then lets turn wait for our turn and take the token
// (with the watch the grant's monitor goes on from). On any failure the node is withdrawn; what names the
// kind of acquire in the error of one cancelled or timed out.
func (m *Mutex) contend(ctx context.Context, wait bool, what string,
	create func(ctx context.Context, guid string) (created, error),
	turn func(c created, stat *zk.Stat, guid string) (uint64, <-chan zk.Event, error),
) (g *Grant, err error) {
	s := m.s
	if err := s.ClaimTokenMode(ctx, m.root, m.mode); err != nil {
		return nil, err
	}
	start := s.clock.Now()
	if wait {
		m.observer().Waiting(m.name, 1)
		defer m.observer().Waiting(m.name, -1)
	}
	guid := newGUID()
	defer func() {
		if err != nil {
			m.withdraw(ctx, guid)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				err = fmt.Errorf("zklock: %s not acquired%s: %w", m.name, what, err)
			}
		}
	}()
	c, err := create(ctx, guid)
	if err != nil {
		return nil, err
	}
	stat, err := s.statOf(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := s.ownedBy("contender", c.path, stat); err != nil {
		return nil, err
	}
	token, kids, err := turn(c, stat, guid)
	if err != nil {
		return nil, err
	}
	return m.newGrant(c.path, guid, token, s.clock.Now().Sub(start), kids)
}

// awaitGrant returns once our contender c is the lowest and no lock-delay
// holds it back, with a watch on the lock's children that has not fired
// since that was last seen: the grant's monitor goes on from it. The
// children read after the create (and the marker read after them)
// serve the first look. When a predecessor granted on this session has
// gone, we are the lowest without a look (see awaitGone): the grant is
// declared at once, with no watch, and its monitor reads the children and
// sets the watch right after, off the path of the hand-over (a contender
// planted below ours meanwhile is seen then).
func (m *Mutex) awaitGrant(ctx context.Context, c created, stat *zk.Stat, guid string, wait bool) (<-chan zk.Event, error) {
	children, kids, marker := c.children, c.kids, c.marker
	for {
		handedOver, err := m.waitForTurn(ctx, c.path, guid, wait, children)
		if err != nil {
			return nil, err
		}
		if children == nil || !m.wasLowest(c.path, children) {
			// Read behind a look that did not show us at the head: read
			// it again, unless the root has no markers (known now, after
			// what showed us at the head).
			marker = nil
			if proof := m.markerAbsence(ctx); proof.confirm(m.s) {
				marker = &readResult{err: zk.ErrNoNode}
			}
		}
		if err := m.awaitLockDelay(ctx, ownNode{c.path, stat, c.at}, marker, wait); err != nil {
			return nil, err
		}
		if kids != nil && !fired(kids) {
			return kids, nil
		}
		if handedOver {
			return nil, nil
		}
		// The children changed since they were read (or were not read
		// with a watch): read them again, watching, before the grant.
		if children, kids, err = m.readChildren(ctx, true); err != nil {
			return nil, err
		}
		if m.wasLowest(c.path, children) {
			return kids, nil
		}
		marker = nil
	}
}

// fired reports whether the watch ch has fired.
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// wasLowest reports whether own was the lowest of children.
func (m *Mutex) wasLowest(own string, children []string) bool {
	cs := sortContenders(children)
	return len(cs) > 0 && cs[0].node == path.Base(own)
}

// begin starts an acquire, before anything is written: it refuses while
// another acquire on m is under way (ErrBusy) or m holds a live grant
// (ErrAlreadyAcquired), and forgets an ended grant. end closes it.
func (m *Mutex) begin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.acquiring && !m.unguarded:
		return fmt.Errorf("%w: %s", ErrBusy, m.name)
	case m.grant != nil && m.grant.Err() == nil:
		return ErrAlreadyAcquired
	}
	m.acquiring = true
	m.grant = nil
	return nil
}

// end closes the acquire that begin started.
func (m *Mutex) end() {
	m.mu.Lock()
	m.acquiring = false
	m.mu.Unlock()
}

// waitForTurn returns once our contender own is the lowest. It watches only
// the immediate predecessor, so that nobody else wakes when it goes (no
// herd), and serves waiters in FIFO order. Without wait it looks once and
// returns ErrHeld if anyone is ahead. children, when not nil, are the
// lock's children just read.
// It reports whether it knows we are the lowest from a hand-over inside
// this session (awaitGone), without a look at the children.
func (m *Mutex) waitForTurn(ctx context.Context, own, guid string, wait bool, children []string) (handedOver bool, err error) {
	for {
		pred, err := m.predecessor(ctx, own, guid, children)
		children = nil // read again after a wait
		if err != nil || pred == "" {
			return false, err
		}
		if !wait {
			return false, fmt.Errorf("%w: %s", ErrHeld, m.name)
		}
		lowest, err := m.awaitGone(ctx, pred)
		if err != nil || lowest && !m.s.without.handOver {
			return lowest, err
		}
	}
}

// predecessor returns the path of the contender just ahead of own among
// the lock's children (read now unless given), or "" when own is the
// lowest. A twin of ours
// (our GUID, from a create that committed after all) would block us
// forever: it is deleted.
func (m *Mutex) predecessor(ctx context.Context, own, guid string, children []string) (string, error) {
	s := m.s
	if children == nil {
		var err error
		if children, _, err = m.readChildren(ctx, false); err != nil {
			return "", err
		}
	}
	cs := sortContenders(children)
	ownNode, idx := path.Base(own), -1
	for i, c := range cs {
		if c.node == ownNode {
			idx = i
		} else if c.guid == guid {
			twin := m.path + "/" + c.node
			s.log.Warn("deleting a twin contender", "path", twin)
			if err := s.do(ctx, func() error { return s.conn.Delete(twin, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return "", err
			}
		}
	}
	switch idx {
	case -1:
		return "", fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
	case 0:
		return "", nil
	}
	return m.path + "/" + cs[idx-1].node, nil
}

// readChildren reads the lock's children, with a watch on them if watch.
func (m *Mutex) readChildren(ctx context.Context, watch bool) ([]string, <-chan zk.Event, error) {
	s := m.s
	op := s.childrenOp(m.path)
	if watch {
		op = s.childrenWOp(m.path)
	}
	l, err := callCtx(ctx, s, op)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, fmt.Errorf("%w: lock node %s vanished while acquiring", ErrLockLost, m.path)
	case err != nil:
		return nil, nil, err
	}
	return l.names, l.ch, nil
}

// awaitGone waits until the contender pred is gone, and reports whether we
// are then known to be the lowest without reading the children again: a
// predecessor granted on this session was the lowest contender once, and
// nothing lower can appear later (a hand-over inside one process costs one
// request less).
func (m *Mutex) awaitGone(ctx context.Context, pred string) (lowest bool, err error) {
	s := m.s
	e, err := callCtx(ctx, s, s.existsWOp(pred))
	exists, st, ch := e.ok, e.stat, e.ch
	if err != nil {
		return false, err
	}
	if !exists {
		return false, nil
	}
	if st.EphemeralOwner == 0 {
		s.reportBlocked(m.name, pred, st.Czxid)
	}
	select {
	case ev := <-ch:
		return ev.Type == zk.EventNodeDeleted && s.granted.has(pred), nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-s.done:
		return false, s.Err()
	}
}

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

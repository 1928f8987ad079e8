package zklock

import (
	"context"
	"errors"
	"fmt"
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

// lock is one acquire of m as an exclusive contender with data, once begin
// has let it start: it claims the root's token mode, creates our contender,
// waits for our turn, records our lock-delay marker, takes the token and
// declares the grant. On any failure the contender is withdrawn.
func (m *Mutex) lock(ctx context.Context, data []byte, wait bool) (g *Grant, err error) {
	s := m.s
	if _, err := s.claim(ctx, m.root, m.mode); err != nil {
		return nil, err
	}
	start := s.clock.Now()
	defer m.waiting(wait)()
	guid := newGUID()
	defer func() { err = m.abandon(ctx, guid, "", err) }()
	c, err := m.create(ctx, guid, data)
	if err != nil {
		return nil, err
	}
	kids, err := m.awaitTurn(ctx, c, guid, wait)
	if err != nil {
		return nil, err
	}
	if err := m.markHeld(ctx, c.path); err != nil {
		return nil, err
	}
	// The mark again: while we waited, a grant refused for the root's
	// floor may have made the session forget it (it is read again then).
	k, err := s.claim(ctx, m.root, m.mode)
	if err != nil {
		return nil, err
	}
	token, err := m.takeToken(ctx, k, c.path, c.stat)
	if err != nil {
		return nil, err
	}
	return m.newGrant(c.path, guid, token, s.clock.Now().Sub(start), kids)
}

// waiting counts an acquire that waits among the lock's waiters, until the
// function it returns is called.
func (m *Mutex) waiting(wait bool) func() {
	if !wait {
		return func() {}
	}
	m.observer().Waiting(m.name, 1)
	return func() { m.observer().Waiting(m.name, -1) }
}

// readChildren reads the lock's children, with a watch on them if watch.
func (m *Mutex) readChildren(ctx context.Context, watch bool) ([]string, <-chan zk.Event, error) {
	l, err := callCtx(ctx, m.s, func() (listing, error) {
		names, ch, err := m.children(watch)
		return listing{names: names, ch: ch}, err
	})
	return l.names, l.ch, err
}

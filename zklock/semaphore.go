package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// DefaultSemaphoreRoot is the znode under which semaphore nodes live.
const DefaultSemaphoreRoot = "/seqd/semaphores"

// SemaphoreRoot is where the semaphores of a client whose locks live under
// lockRoot go: DefaultSemaphoreRoot beside DefaultRoot, lockRoot +
// ".semaphores" beside another root, so that a daemon and `seqd lock -n`
// given the same root find the same semaphores.
func SemaphoreRoot(lockRoot string) string {
	if lockRoot == DefaultRoot {
		return DefaultSemaphoreRoot
	}
	if lockRoot == "/" {
		return "/.semaphores"
	}
	return lockRoot + ".semaphores"
}

// MaxSemaphoreLimit bounds a semaphore's limit.
const MaxSemaphoreLimit = 1 << 16

// A semaphore uses the layout of Curator's InterProcessSemaphoreV2, so that
// both take part in one semaphore:
//
//	<root>/<name>/locks/_c_<uuid>-lock-NNNNNNNNNN    a mutex that orders acquirers
//	<root>/<name>/leases/_c_<uuid>-lease-NNNNNNNNNN  one ephemeral node per holder
//
// An acquirer takes the mutex, creates its lease node, and counts the
// children of leases (its own included, and anything else there, as Curator
// does): at most limit, and it holds a slot; more, and it waits, still
// holding the mutex, for the children to change. Then it releases the
// mutex. Only the mutex's holder watches leases and the others queue on the
// mutex, each watching its predecessor: FIFO, no herd. A holder that dies
// frees its slot when ZooKeeper removes its ephemeral node.
//
// The count is safe without the mutex: of any limit+1 holders, the last to
// create its node would have counted all of them. The token of a grant is
// its lease node's czxid; lease nodes are created one at a time under the
// mutex and granted in that order, so every grant's token is above every
// earlier one's.

// Semaphore admits at most Limit holders at once. NewSemaphore does no I/O.
type Semaphore struct {
	s      *Session
	name   string
	limit  int
	path   string // root + "/" + name
	lock   *Mutex // <path>/locks
	leases *Mutex // the grants' owner; its path is <path>/leases
	data   []byte
}

// NewSemaphore names a semaphore of limit holders on s. It takes WithRoot
// (default DefaultSemaphoreRoot) and WithData; the token mode is always
// zxid, and a lock-delay is refused.
func NewSemaphore(s *Session, name string, limit int, opts ...MutexOption) (*Semaphore, error) {
	if limit < 1 || limit > MaxSemaphoreLimit {
		return nil, fmt.Errorf("zklock: semaphore limit %d is out of range: it must be between 1 and %d", limit, MaxSemaphoreLimit)
	}
	opts = append([]MutexOption{WithRoot(DefaultSemaphoreRoot)}, opts...)
	leases, err := NewMutex(s, name, opts...)
	if err != nil {
		return nil, err
	}
	if leases.mode != TokenZxid || leases.delay != 0 {
		return nil, errors.New("zklock: a semaphore takes only zxid tokens and no lock-delay")
	}
	// The mutex's name includes the semaphore's, so that the semaphore's
	// node is a container like the mutex's.
	lock, err := NewMutex(s, name+"/locks", WithRoot(leases.root))
	if err != nil {
		return nil, err
	}
	lock.quiet = true // its grants are not the semaphore's
	sem := &Semaphore{s: s, name: name, limit: limit, path: leases.path, lock: lock, leases: leases, data: leases.data}
	leases.path = sem.path + "/leases"
	leases.leaseSet = true
	return sem, nil
}

// Name is the semaphore's name.
func (sem *Semaphore) Name() string { return sem.name }

// Path is the semaphore's node.
func (sem *Semaphore) Path() string { return sem.path }

// Limit is how many holders it admits at once.
func (sem *Semaphore) Limit() int { return sem.limit }

// Acquire waits for a slot until ctx ends or the session ends. Each call
// returns a grant of its own (one slot); Release it when done.
func (sem *Semaphore) Acquire(ctx context.Context) (*Grant, error) { return sem.acquire(ctx, true) }

// TryAcquire returns ErrHeld if no slot is free now, or if another
// acquirer is taking one at this moment.
func (sem *Semaphore) TryAcquire(ctx context.Context) (*Grant, error) {
	return sem.acquire(ctx, false)
}

func (sem *Semaphore) acquire(ctx context.Context, wait bool) (g *Grant, err error) {
	s := sem.s
	start := s.clock.Now()
	lg, err := sem.takeLock(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		lg.Release(cctx)
	}()
	guid := newGUID()
	defer func() {
		if err != nil {
			sem.leases.withdraw(ctx, guid)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				err = fmt.Errorf("zklock: semaphore %s not acquired: %w", sem.name, err)
			}
		}
	}()
	c, err := sem.create(ctx, guid)
	if err != nil {
		return nil, err
	}
	stat, err := s.statOf(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := s.ownedBy("lease", c.path, stat); err != nil {
		return nil, err
	}
	kids, err := sem.awaitSlot(ctx, c, wait)
	if err != nil {
		return nil, err
	}
	token, err := sem.leases.takeToken(ctx, c.path, stat)
	if err != nil {
		return nil, err
	}
	return sem.leases.newGrant(c.path, guid, token, s.clock.Now().Sub(start), kids)
}

// takeLock takes the mutex that orders acquirers. Without wait it tries
// once, as Curator's acquire with a zero timeout does: a mutex held means
// an acquirer waiting for a slot (none is free) or, briefly, one taking a
// free slot; either way the answer is ErrHeld, at once.
func (sem *Semaphore) takeLock(ctx context.Context, wait bool) (*Grant, error) {
	if wait {
		return sem.lock.Acquire(ctx)
	}
	g, err := sem.lock.TryAcquire(ctx)
	if errors.Is(err, ErrHeld) {
		return nil, fmt.Errorf("%w: semaphore %s", ErrHeld, sem.name)
	}
	return g, err
}

// awaitSlot returns once at most limit children are under leases, own
// among them, with the watch set on them by the last look. The children
// read right behind the create serve the first look. Without wait it looks
// once.
func (sem *Semaphore) awaitSlot(ctx context.Context, c created, wait bool) (<-chan zk.Event, error) {
	s := sem.s
	node := c.path[strings.LastIndexByte(c.path, '/')+1:]
	children, ch := c.children, c.kids
	for {
		if children == nil {
			if err := s.callCtx(ctx, func() (err error) { children, _, ch, err = s.conn.ChildrenW(sem.leases.path); return err }); err != nil {
				return nil, err
			}
		}
		found := false
		for _, c := range children {
			found = found || c == node
		}
		switch {
		case !found:
			return nil, fmt.Errorf("%w: lease %s vanished while acquiring", ErrLockLost, c.path)
		case len(children) <= sem.limit:
			return ch, nil
		case !wait:
			return nil, fmt.Errorf("%w: semaphore %s has %d holders, its limit is %d", ErrHeld, sem.name, len(children)-1, sem.limit)
		}
		select {
		case <-ch:
			children = nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, s.Err()
		}
	}
}

// create makes our ephemeral-sequential lease node, creating the
// semaphore's nodes (containers) when missing; a create whose reply is lost
// is recovered by finding our GUID among the children.
func (sem *Semaphore) create(ctx context.Context, guid string) (created, error) {
	s := sem.s
	return s.createProtected(ctx, sem.leases.path, sem.leases.path+"/"+protectedPrefix+guid+"-lease-", guid, sem.data, func(ctx context.Context) error {
		// The mutex created the semaphore's node; leases is a container
		// beside it.
		err := s.callCtx(ctx, func() error {
			_, err := s.conn.CreateContainer(sem.leases.path, nil, zk.FlagContainer, s.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", sem.leases.path, err)
		}
		return nil
	}, "")
}

// Holders counts the semaphore's lease nodes now (Curator counts every
// child of leases).
func (sem *Semaphore) Holders(ctx context.Context) (int, error) {
	s := sem.s
	var children []string
	err := s.read(ctx, func() (err error) { children, _, err = s.conn.Children(sem.leases.path); return err })
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	return len(children), err
}

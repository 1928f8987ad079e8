package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	lock   *Mutex // <path>/locks, for readers of the queue; acquires take newLock's
	leases *Mutex // the grants' owner; its path is <path>/leases
	data   []byte
}

// NewSemaphore names a semaphore of limit holders on s. It takes WithRoot
// (default DefaultSemaphoreRoot) and WithData; its tokens are czxids and it
// has no lock-delay. A name with a segment "leases" or "locks" is refused:
// those are a semaphore's own nodes, and a semaphore named "pool/leases"
// would put its nodes among the holders of "pool".
func NewSemaphore(s *Session, name string, limit int, opts ...SemaphoreOption) (*Semaphore, error) {
	if limit < 1 || limit > MaxSemaphoreLimit {
		return nil, fmt.Errorf("zklock: semaphore limit %d is out of range: it must be between 1 and %d", limit, MaxSemaphoreLimit)
	}
	leases := &Mutex{s: s, name: name, root: DefaultSemaphoreRoot, mode: TokenZxid}
	for _, o := range opts {
		o.applySemaphore(leases)
	}
	if err := leases.init(); err != nil {
		return nil, err
	}
	if err := ValidateSemaphoreName(name); err != nil {
		return nil, err
	}
	sem := &Semaphore{s: s, name: name, limit: limit, path: leases.path, leases: leases, data: leases.data}
	lock, err := sem.newLock()
	if err != nil {
		return nil, err
	}
	sem.lock = lock
	leases.path = sem.path + "/" + semLeases
	leases.leaseSet = true
	return sem, nil
}

// newLock is a Mutex on the semaphore's ordering mutex. Each acquire takes
// it through one of its own, so that acquires of one Semaphore may run at
// once (a Mutex acquires once at a time).
func (sem *Semaphore) newLock() (*Mutex, error) {
	// The mutex's name includes the semaphore's, so that the semaphore's
	// node is a container like the mutex's.
	lock, err := NewMutex(sem.s, sem.name+"/"+semLocks, WithRoot(sem.leases.root))
	if err != nil {
		return nil, err
	}
	lock.quiet = true    // its grants are not the semaphore's
	lock.data = sem.data // so that a queue read names who waits
	return lock, nil
}

// The children of a semaphore's node.
const (
	semLocks  = "locks"
	semLeases = "leases"
)

// ValidateSemaphoreName checks a semaphore name: a lock name (ValidateName)
// with no segment named "leases" or "locks", the semaphore's own nodes.
func ValidateSemaphoreName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == semLocks || seg == semLeases {
			return &NameError{Name: name, Reason: fmt.Sprintf("%q has a segment %q: a semaphore's nodes %q and %q are its own, and no semaphore name may reach them", name, seg, semLeases, semLocks)}
		}
	}
	return nil
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
	if err := sem.claimLimit(ctx); err != nil {
		return nil, err
	}
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
	if _, err := sem.awaitSlot(ctx, c, wait); err != nil {
		return nil, err
	}
	k, err := s.claim(ctx, sem.leases.root, sem.leases.mode)
	if err != nil {
		return nil, err
	}
	token, err := sem.leases.takeToken(ctx, k, c.path, c.stat)
	if err != nil {
		return nil, err
	}
	// The grant watches its own node, armed by its monitor (no watch given
	// here), not the others': its place among them does not matter, while
	// its node deleted or rewritten by another client ends it at once.
	return sem.leases.newGrant(c.path, guid, token, s.clock.Now().Sub(start), nil)
}

// takeLock takes the mutex that orders acquirers. Without wait it tries
// once, as Curator's acquire with a zero timeout does: a mutex held means
// an acquirer waiting for a slot (none is free) or, briefly, one taking a
// free slot; either way the answer is ErrHeld, at once.
func (sem *Semaphore) takeLock(ctx context.Context, wait bool) (*Grant, error) {
	lock, err := sem.newLock()
	if err != nil {
		return nil, err
	}
	if wait {
		return lock.Acquire(ctx)
	}
	g, err := lock.TryAcquire(ctx)
	if errors.Is(err, ErrHeld) {
		return nil, fmt.Errorf("%w: semaphore %s", ErrHeld, sem.name)
	}
	return g, err
}

// awaitSlot returns once at most limit children are under leases, own
// among them, with the watch set on them by the last look. The children
// read after the create serve the first look. Without wait it looks
// once.
func (sem *Semaphore) awaitSlot(ctx context.Context, c created, wait bool) (<-chan zk.Event, error) {
	s := sem.s
	node := c.path[strings.LastIndexByte(c.path, '/')+1:]
	children, ch := c.children, c.kids
	for {
		if children == nil {
			l, err := callCtx(ctx, s, s.childrenWOp(sem.leases.path))
			children, ch = l.names, l.ch
			if err != nil {
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
		err := s.do(ctx, func() error {
			_, err := s.conn.CreateContainer(sem.leases.path, nil, zk.FlagContainer, s.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", sem.leases.path, err)
		}
		return nil
	}, "", "")
}

// ErrLimitMismatch: the semaphore records another limit than the one
// asked for (a *LimitError says which).
var ErrLimitMismatch = errors.New("zklock: semaphore limit mismatch")

// LimitError is an acquire refused because its limit is not the one the
// semaphore records: holders that disagree on the limit would admit more
// holders than the smaller one allows.
type LimitError struct {
	Name     string
	Recorded int // 0 when the semaphore's node holds data that is no limit
	Wanted   int
	Data     string // the node's data, when it is no limit
}

func (e *LimitError) Error() string {
	if e.Recorded == 0 {
		return fmt.Sprintf("zklock: semaphore %s: its node holds %.60q, not a limit seqd recorded", e.Name, e.Data)
	}
	return fmt.Sprintf("zklock: semaphore %s has limit %d, not %d: every holder must name the same limit", e.Name, e.Recorded, e.Wanted)
}

// Is makes errors.Is(err, ErrLimitMismatch) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimitMismatch }

// limitPrefix starts the semaphore node's data, which records its limit.
const limitPrefix = "seqd-semaphore-limit="

// claimLimit records the semaphore's limit in its node's data if none is
// recorded, and otherwise checks it (a *LimitError). It runs while the
// semaphore's mutex is held, so that seqd's acquirers record and check one
// at a time. The record lives as long as the node: ZooKeeper removes the
// node (a container) once nobody holds or waits, and the next acquirer
// records its own limit. Curator's semaphores record no limit and read
// none: one that joins with another limit admits as its own limit says.
func (sem *Semaphore) claimLimit(ctx context.Context) error {
	s := sem.s
	for attempt := 0; attempt < 10; attempt++ {
		n, err := callCtx(ctx, s, s.getOp(sem.path))
		data, st := n.data, n.stat
		if err != nil {
			return fmt.Errorf("zklock: read the limit of semaphore %s: %w", sem.name, err)
		}
		if len(data) == 0 {
			want := []byte(limitPrefix + strconv.Itoa(sem.limit))
			err := s.do(ctx, func() error { _, err := s.conn.Set(sem.path, want, st.Version); return err })
			if err == nil {
				return nil
			}
			if !errors.Is(err, zk.ErrBadVersion) {
				return fmt.Errorf("zklock: record the limit of semaphore %s: %w", sem.name, err)
			}
			continue // written meanwhile: check what is there
		}
		recorded, ok := parseLimit(data)
		switch {
		case !ok:
			return &LimitError{Name: sem.name, Wanted: sem.limit, Data: string(data)}
		case recorded != sem.limit:
			return &LimitError{Name: sem.name, Recorded: recorded, Wanted: sem.limit}
		}
		return nil
	}
	return fmt.Errorf("zklock: the limit of semaphore %s keeps changing", sem.name)
}

// parseLimit reads a recorded limit.
func parseLimit(data []byte) (int, bool) {
	v, ok := strings.CutPrefix(string(data), limitPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxSemaphoreLimit || strconv.Itoa(n) != v {
		return 0, false
	}
	return n, true
}

// SemaphoreState is a semaphore's state as ZooKeeper has it.
type SemaphoreState struct {
	// Holders counts the holders: the lease nodes, of which at most the
	// recorded limit hold (one more is an acquirer that waits for a slot
	// while holding the semaphore's mutex).
	Holders int
	// Limit is the limit recorded in the semaphore's node; 0 when nobody
	// holds or waits (or only clients that record none, such as Curator's).
	Limit int
	// Index is the zxid of the latest change the state shows.
	Index uint64
}

// State reads the semaphore's holders and recorded limit.
func (sem *Semaphore) State(ctx context.Context) (SemaphoreState, error) {
	s := sem.s
	l, err := read(ctx, s, s.childrenOp(sem.leases.path))
	children, cstat := l.names, l.stat
	if errors.Is(err, zk.ErrNoNode) {
		return SemaphoreState{}, nil
	}
	if err != nil {
		return SemaphoreState{}, err
	}
	limit, idx, err := sem.readLimit(ctx)
	if err != nil {
		return SemaphoreState{}, err
	}
	return semaphoreState(len(children), limit, max(uint64(cstat.Pzxid), idx)), nil
}

func semaphoreState(leases, limit int, index uint64) SemaphoreState {
	st := SemaphoreState{Holders: leases, Limit: limit, Index: index}
	if limit > 0 {
		st.Holders = min(leases, limit)
	}
	return st
}

// readLimit reads the recorded limit (0 if none) and the zxid of its record.
func (sem *Semaphore) readLimit(ctx context.Context) (int, uint64, error) {
	s := sem.s
	r, err := read(ctx, s, s.getOp(sem.path))
	data, st := r.data, r.stat
	if errors.Is(err, zk.ErrNoNode) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	n, _ := parseLimit(data)
	return n, uint64(st.Mzxid), nil
}

// Holders counts the semaphore's holders now (see SemaphoreState).
func (sem *Semaphore) Holders(ctx context.Context) (int, error) {
	st, err := sem.State(ctx)
	return st.Holders, err
}

// Observe reports the semaphore's state now and after every change, until
// ctx ends or the session ends; then the channel closes. It watches the
// lease nodes (one children watch at a time); the limit is read with each
// state, since it changes only with them. A reader that falls behind finds
// the latest state.
func (sem *Semaphore) Observe(ctx context.Context) <-chan SemaphoreState {
	s := sem.s
	out := newLatest[SemaphoreState]()
	if !s.spawn(func() {
		defer close(out.ch)
		var last *SemaphoreState
		s.observe(ctx, sem.leases, sem.leases.path, func(st nodeState) {
			limit, idx, err := sem.readLimit(ctx)
			if err != nil {
				return // the next change, or the session's end, reads again
			}
			state := semaphoreState(st.children, limit, max(st.index(), idx))
			if last != nil && last.Holders == state.Holders && last.Limit == state.Limit {
				return
			}
			last = &state
			out.put(state)
		})
	}) {
		close(out.ch)
	}
	return out.ch
}

// HoldsToken reports whether a holder of the semaphore has token: one of
// its first limit lease nodes (in creation order; the limit recorded, or
// every node when none is) was created with that zxid. It reads the lease
// nodes' stats one by one, so it costs a request per holder.
func (sem *Semaphore) HoldsToken(ctx context.Context, token uint64) (bool, error) {
	s := sem.s
	k, err := s.markOf(ctx, sem.leases.root, sem.leases.mode)
	if err != nil {
		return false, err
	}
	var children []string
	var l listing
	l, err = read(ctx, s, s.childrenOp(sem.leases.path))
	children = l.names
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	limit, _, err := sem.readLimit(ctx)
	if err != nil {
		return false, err
	}
	slices.SortFunc(children, func(a, b string) int { return strings.Compare(seqSuffix(a), seqSuffix(b)) })
	if limit > 0 && len(children) > limit {
		children = children[:limit]
	}
	for _, ch := range children {
		e, err := read(ctx, s, s.existsOp(sem.leases.path+"/"+ch))
		ok, st := e.ok, e.stat
		if err != nil {
			return false, err
		}
		if ok && k.token(uint64(st.Czxid)) == token {
			return true, nil
		}
	}
	return false, nil
}

// seqSuffix is a sequential node's 10-digit suffix ("" if it has none), in
// creation order as text.
func seqSuffix(name string) string {
	if len(name) < seqDigits {
		return ""
	}
	return name[len(name)-seqDigits:]
}

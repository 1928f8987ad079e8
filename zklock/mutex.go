package zklock

import (
	"context"
	"errors"
	"fmt"
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
)

// DefaultRoot is the znode under which lock nodes live.
const DefaultRoot = "/seqd/locks"

// cleanupTimeout bounds a withdrawal's delete, run on a context that
// outlives the cancelled one (STYLE 6).
const cleanupTimeout = 5 * time.Second

// TokenMode chooses where tokens come from (DESIGN §2).
type TokenMode int

const (
	// TokenZxid (default): the czxid of the holder's contender znode; rises
	// across holders, across locks and across leader failover.
	TokenZxid TokenMode = iota
	// TokenVersion: a dense per-lock counter 1, 2, 3 …, the data version of
	// the lock node, bumped at grant by a multi of check(own contender) +
	// setData(lock node).
	TokenVersion
	// tokenSequence is the contender's sequence suffix + 1. It is NOT safe
	// (it restarts when the lock node is re-created) and exists only for the
	// negative control that shows the regression guard catching it.
	tokenSequence
)

func (m TokenMode) String() string {
	switch m {
	case TokenZxid:
		return "zxid"
	case TokenVersion:
		return "version"
	case tokenSequence:
		return "sequence"
	}
	return fmt.Sprintf("TokenMode(%d)", int(m))
}

// ParseTokenMode parses "zxid" or "version".
func ParseTokenMode(s string) (TokenMode, error) {
	switch s {
	case "zxid", "":
		return TokenZxid, nil
	case "version":
		return TokenVersion, nil
	}
	return 0, fmt.Errorf("zklock: token mode %q: want zxid or version", s)
}

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// WithRoot sets the znode under which the lock node lives (default
// DefaultRoot).
func WithRoot(root string) MutexOption { return func(m *Mutex) { m.root = root } }

// WithTokenMode sets the token mode (default TokenZxid).
func WithTokenMode(mode TokenMode) MutexOption { return func(m *Mutex) { m.mode = mode } }

// WithData sets the data stored in the contender node (seqd stores the
// owner, so that other daemons can show who holds a lock).
func WithData(data []byte) MutexOption { return func(m *Mutex) { m.data = data } }

// Mutex is one contender for one lock. It holds at most one grant at a
// time. NewMutex does no I/O.
type Mutex struct {
	s    *Session
	name string
	root string
	path string // root + "/" + name
	mode TokenMode
	data []byte

	mu    sync.Mutex
	grant *Grant
}

// NewMutex names a lock on s. It validates the name and touches nothing.
func NewMutex(s *Session, name string, opts ...MutexOption) (*Mutex, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	m := &Mutex{s: s, name: name, root: DefaultRoot, mode: TokenZxid}
	for _, o := range opts {
		o(m)
	}
	if m.root == "" || m.root[0] != '/' || (len(m.root) > 1 && strings.HasSuffix(m.root, "/")) {
		return nil, fmt.Errorf("zklock: root %q must be an absolute znode path", m.root)
	}
	m.path = strings.TrimSuffix(m.root, "/") + "/" + name
	return m, nil
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

func (m *Mutex) acquire(ctx context.Context, wait bool) (g *Grant, err error) {
	m.mu.Lock()
	if m.grant != nil && m.grant.Err() == nil {
		m.mu.Unlock()
		return nil, ErrAlreadyAcquired
	}
	m.grant = nil
	m.mu.Unlock()

	s := m.s
	start := s.clock.Now()
	if wait {
		s.obs.Waiting(m.name, 1)
		defer s.obs.Waiting(m.name, -1)
	}
	guid := newGUID()
	defer func() {
		if err != nil {
			m.withdraw(ctx, guid)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				err = fmt.Errorf("zklock: %s not acquired: %w", m.name, err)
			}
		}
	}()
	own, err := m.create(ctx, guid)
	if err != nil {
		return nil, err
	}
	ownNode := path.Base(own)

	// The first round reads the children and sets the watch on our own node
	// (it also gives its czxid and ephemeralOwner) in one pipelined round
	// trip: two requests in flight on one connection.
	var (
		ownStat  *zk.Stat
		ownWatch <-chan zk.Event
		ownErr   error
		ownDone  = make(chan struct{})
	)
	if !s.spawn(func() {
		defer close(ownDone)
		ownErr = s.call(func() (err error) {
			var ok bool
			ok, ownStat, ownWatch, err = s.conn.ExistsW(own)
			if err == nil && !ok {
				err = fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
			}
			return err
		})
	}) {
		return nil, ErrClosed
	}
	waitOwn := func() error {
		select {
		case <-ownDone:
			return ownErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	for {
		var children []string
		if err := s.callCtx(ctx, func() (err error) { children, _, err = s.conn.Children(m.path); return err }); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				err = fmt.Errorf("%w: lock node %s vanished while acquiring", ErrLockLost, m.path)
			}
			return nil, err
		}
		cs := sortContenders(children)
		idx := -1
		for i, c := range cs {
			if c.node == ownNode {
				idx = i
			} else if c.guid == guid {
				// A twin of ours from a create that committed after all:
				// it would block us forever. Remove it.
				twin := m.path + "/" + c.node
				s.log.Warn("deleting a twin contender", "path", twin)
				if err := s.callCtx(ctx, func() error { return s.conn.Delete(twin, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return nil, err
				}
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
		}
		if idx == 0 {
			break
		}
		if !wait {
			return nil, fmt.Errorf("%w: %s", ErrHeld, m.name)
		}
		// Watch only the immediate predecessor: no herd when it goes.
		pred := m.path + "/" + cs[idx-1].node
		var (
			exists bool
			ch     <-chan zk.Event
		)
		if err := s.callCtx(ctx, func() (err error) { exists, _, ch, err = s.conn.ExistsW(pred); return err }); err != nil {
			return nil, err
		}
		if !exists {
			continue
		}
		select {
		case ev := <-ch:
			// A predecessor granted on this session was the lowest
			// contender once, and nothing lower can appear later: when it
			// goes, we are the lowest without reading the children again
			// (a hand-over inside one daemon costs one request less).
			if ev.Type == zk.EventNodeDeleted && s.granted.has(pred) {
				goto lowest
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, s.Err()
		}
	}
lowest:
	if err := waitOwn(); err != nil {
		return nil, err
	}
	if ownStat.EphemeralOwner != s.ID() {
		return nil, fmt.Errorf("zklock: contender %s is owned by session 0x%x, not ours (0x%x)", own, ownStat.EphemeralOwner, s.ID())
	}

	var token uint64
	switch m.mode {
	case TokenZxid:
		token = uint64(ownStat.Czxid)
	case TokenVersion:
		// check(own contender) + setData(lock node) in one multi: a holder
		// that already lost its node cannot bump the counter.
		var res []zk.MultiResponse
		err := s.callCtx(ctx, func() (err error) {
			res, err = s.conn.Multi(
				&zk.CheckVersionRequest{Path: own, Version: -1},
				&zk.SetDataRequest{Path: m.path, Data: []byte(ownNode), Version: -1},
			)
			return err
		})
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				err = fmt.Errorf("%w: contender %s vanished before the counter was bumped", ErrLockLost, own)
			}
			return nil, err
		}
		token = uint64(res[1].Stat.Version)
	case tokenSequence:
		c, _ := parseContender(ownNode)
		token = uint64(c.seq) + 1
	}
	// Declare nothing the session cannot vouch for: past its deadline
	// ZooKeeper may already have expired it and granted someone else.
	if !s.Live() {
		if err := s.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: not heard from since %s; cannot declare a grant", ErrUnavailable, s.LastHeard().Format("15:04:05.000"))
	}
	if err := s.guard.Issue(m.path, token); err != nil {
		s.obs.TokenRegression(m.name)
		s.log.Error("token regression: grant refused", "lock", m.name, "token", token, "last", s.guard.Last(m.path), "mode", m.mode)
		return nil, err
	}

	g = &Grant{
		Name:  m.name,
		Path:  own,
		Token: token,
		m:     m,
		lost:  make(chan struct{}),
		stop:  make(chan struct{}),
		ended: make(chan struct{}),
		guid:  guid,
	}
	m.mu.Lock()
	m.grant = g
	m.mu.Unlock()
	s.granted.add(own)
	s.obs.Granted(m.name, s.clock.Now().Sub(start))
	s.log.Debug("granted", "lock", m.name, "token", token, "path", own)
	if !s.spawn(func() { g.monitor(ownWatch) }) {
		g.end(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
		close(g.ended)
		return nil, ErrClosed
	}
	return g, nil
}

// create makes our ephemeral-sequential contender, creating the lock node
// (and its parents) when missing. A create whose reply is lost is recovered
// by finding our GUID among the children before trying again.
func (m *Mutex) create(ctx context.Context, guid string) (string, error) {
	s := m.s
	prefix := m.path + "/" + contenderPrefix(guid)
	for attempt := 0; ; attempt++ {
		var own string
		// Not abandoned when ctx ends (call, not callCtx): a create still in
		// flight could commit after the withdrawal looked for it, and leave
		// an orphan. go-zookeeper answers or fails every request in time.
		err := s.call(func() (err error) {
			own, err = s.conn.Create(prefix, m.data, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
			return err
		})
		if err == nil && ctx.Err() != nil {
			return "", ctx.Err() // the caller withdraws the node by its GUID
		}
		switch {
		case err == nil:
			return own, nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 10:
			if err := m.ensureLockNode(ctx); err != nil {
				return "", err
			}
			continue
		case errors.Is(err, ErrUnavailable) && attempt < 10:
			// The create may have happened. Look for it before creating
			// again, or we would leave a twin behind.
			found, ferr := m.findOwn(ctx, guid)
			if ferr != nil {
				return "", ferr
			}
			if found != "" {
				return found, nil
			}
			continue
		}
		return "", err
	}
}

// findOwn looks for our GUID among the lock's children, retrying while
// ZooKeeper is unreachable and ctx allows.
func (m *Mutex) findOwn(ctx context.Context, guid string) (string, error) {
	s := m.s
	for {
		var children []string
		err := s.callCtx(ctx, func() (err error) {
			// Sync first: on another server than the one that took the
			// lost create, the read must not run ahead of its commit, or we
			// would create a twin.
			if _, err := s.conn.Sync(m.path); err != nil {
				return err
			}
			children, _, err = s.conn.Children(m.path)
			return err
		})
		switch {
		case err == nil:
			for _, ch := range children {
				if c, ok := parseContender(ch); ok && c.guid == guid {
					return m.path + "/" + ch, nil
				}
			}
			return "", nil
		case errors.Is(err, zk.ErrNoNode):
			return "", nil
		case errors.Is(err, ErrUnavailable):
			if !s.Live() {
				return "", err // past the deadline: the janitor finds the node if it exists
			}
			tc, t := s.clock.NewTimer(100 * time.Millisecond)
			select {
			case <-tc:
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			}
		default:
			return "", err
		}
	}
}

// ensureLockNode creates the root's ancestors as persistent nodes and the
// lock node: a container in zxid mode (ZooKeeper removes it once empty), a
// persistent node in version mode (its data version is the counter).
func (m *Mutex) ensureLockNode(ctx context.Context) error {
	s := m.s
	parts := strings.Split(strings.TrimPrefix(m.path, "/"), "/")
	rootDepth := len(strings.Split(strings.Trim(m.root, "/"), "/"))
	if m.root == "/" {
		rootDepth = 0
	}
	p := ""
	for i, part := range parts {
		p += "/" + part
		container := m.mode != TokenVersion && i >= rootDepth
		node := p
		err := s.callCtx(ctx, func() error {
			var err error
			if container {
				_, err = s.conn.CreateContainer(node, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
			} else {
				_, err = s.conn.Create(node, nil, 0, zk.WorldACL(zk.PermAll))
			}
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", node, err)
		}
	}
	return nil
}

// withdraw deletes our contender after a failed or abandoned acquire, on a
// context that outlives the caller's; if ZooKeeper cannot be reached now,
// the session's janitor deletes it later.
func (m *Mutex) withdraw(ctx context.Context, guid string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	done := make(chan error, 1)
	if !m.s.spawn(func() { done <- m.s.deleteGUID(m.path, guid) }) {
		return // closing: the session's end removes the node
	}
	select {
	case err := <-done:
		if err == nil {
			return
		}
	case <-cctx.Done():
	}
	if m.s.Err() == nil {
		m.s.deleteLater(m.path, guid)
	}
}

// Holder describes a lock's current state as ZooKeeper has it.
type Holder struct {
	Held    bool
	Node    string // the holder's contender (child name)
	Token   uint64 // its token (version mode: the last issued, even if its holder has gone)
	Data    []byte // the holder's contender data
	Waiters int    // contenders behind the holder
}

// Holder reads the lock's current holder from ZooKeeper, so that it answers
// for holders on any session or daemon (Chubby's CheckSequencer).
func (m *Mutex) Holder(ctx context.Context) (Holder, error) {
	s := m.s
	var (
		children []string
		lockData []byte
		lockStat *zk.Stat
		lockErr  error
		lockDone = make(chan struct{})
	)
	if m.mode == TokenVersion {
		// Pipelined with the children read: the counter and who bumped it.
		if !s.spawn(func() {
			defer close(lockDone)
			lockErr = s.call(func() (err error) { lockData, lockStat, err = s.conn.Get(m.path); return err })
		}) {
			return Holder{}, ErrClosed
		}
	} else {
		close(lockDone)
	}
	err := s.callCtx(ctx, func() (err error) { children, _, err = s.conn.Children(m.path); return err })
	<-lockDone
	if errors.Is(err, zk.ErrNoNode) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, err
	}
	if lockErr != nil && !errors.Is(lockErr, zk.ErrNoNode) {
		return Holder{}, lockErr
	}
	cs := sortContenders(children)
	var h Holder
	if lockStat != nil {
		h.Token = uint64(lockStat.Version)
	}
	for len(cs) > 0 {
		var (
			data []byte
			st   *zk.Stat
		)
		err := s.callCtx(ctx, func() (err error) { data, st, err = s.conn.Get(m.path + "/" + cs[0].node); return err })
		if errors.Is(err, zk.ErrNoNode) {
			cs = cs[1:] // it left between the two reads
			continue
		}
		if err != nil {
			return Holder{}, err
		}
		h.Node, h.Data, h.Waiters = cs[0].node, data, len(cs)-1
		switch m.mode {
		case TokenZxid:
			h.Held, h.Token = true, uint64(st.Czxid)
		case TokenVersion:
			h.Held = string(lockData) == cs[0].node
		case tokenSequence:
			h.Held, h.Token = true, uint64(cs[0].seq)+1
		}
		break
	}
	return h, nil
}

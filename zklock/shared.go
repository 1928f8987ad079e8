package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
)

// ReadLock is a shared holder of a lock: readers hold it together, a writer
// (a Mutex, or another recipe's exclusive contender) alone, in FIFO order
// between them: a reader waits for every writer queued before it, so that a
// stream of readers cannot starve a writer. Its contender is named as
// Curator's InterProcessReadWriteLock names its readers,
// _c_<uuid>-__READ__<10 digits>; kazoo's ReadLock readers (__rlock__) are
// readers too.
//
// A reader's token is its node's czxid: above the token of every writer
// granted before it, and below that of every writer granted after it.
// Readers granted at the same time are not ordered among themselves (they
// do not exclude each other): a resource fences a reader's reads with it as
// it would a writer's, and refuses writes under it.
type ReadLock struct {
	m *Mutex
}

// NewReadLock names a lock to share on s. It takes WithRoot and WithData;
// its tokens are czxids and it has no lock-delay.
func NewReadLock(s *Session, name string, opts ...ReadLockOption) (*ReadLock, error) {
	m := &Mutex{s: s, name: name, root: DefaultRoot, mode: TokenZxid, shared: true, stamp: true}
	for _, o := range opts {
		o.applyReadLock(m)
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	return &ReadLock{m: m}, nil
}

// Path is the lock node's path.
func (r *ReadLock) Path() string { return r.m.path }

// Acquire waits until no writer is ahead, ctx ends or the session ends.
// Each call returns a grant of its own.
func (r *ReadLock) Acquire(ctx context.Context) (*Grant, error) { return r.acquire(ctx, true) }

// TryAcquire returns ErrHeld if a writer holds the lock or is queued.
func (r *ReadLock) TryAcquire(ctx context.Context) (*Grant, error) { return r.acquire(ctx, false) }

func (r *ReadLock) acquire(ctx context.Context, wait bool) (g *Grant, err error) {
	m := r.m
	s := m.s
	// The root's token mode is claimed as a writer's: readers' tokens are
	// czxids, and a root whose locks count versions refuses them.
	if _, err := s.claim(ctx, m.root, m.mode); err != nil {
		return nil, err
	}
	start := s.clock.Now()
	defer m.waiting(wait)()
	guid := newGUID()
	defer func() { err = m.abandon(ctx, guid, " for reading", err) }()
	c, err := r.create(ctx, guid)
	if err != nil {
		return nil, err
	}
	if err := r.awaitWriters(ctx, c, wait); err != nil {
		return nil, err
	}
	k, err := s.claim(ctx, m.root, m.mode)
	if err != nil {
		return nil, err
	}
	token, err := m.takeToken(ctx, k, c.path, c.stat)
	if err != nil {
		return nil, err
	}
	// The watch set by the read after the create goes to the grant: if the
	// children changed while a writer was waited for, the grant's monitor
	// looks at them again at once.
	return m.newGrant(c.path, guid, token, s.clock.Now().Sub(start), c.kids)
}

// awaitWriters returns once no writer is queued ahead of our reader c, each
// time watching the nearest one. Without wait it returns ErrHeld if one is.
func (r *ReadLock) awaitWriters(ctx context.Context, c created, wait bool) error {
	m := r.m
	s := m.s
	children := c.children
	for {
		w, err := r.writerAhead(ctx, c.path, children)
		switch {
		case err != nil:
			return err
		case w == "":
			return nil
		case !wait:
			return fmt.Errorf("%w: %s has a writer", ErrHeld, m.name)
		}
		children = nil
		e, err := callCtx(ctx, s, s.existsWOp(w))
		if err != nil {
			return err
		}
		if !e.ok {
			continue
		}
		if e.stat.EphemeralOwner == 0 {
			s.reportBlocked(m.name, w, e.stat.Czxid)
		}
		select {
		case <-e.ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return s.Err()
		}
	}
}

// writerAhead returns the path of the nearest writer queued before own
// among the lock's children (read now unless given), or "" when there is
// none.
func (r *ReadLock) writerAhead(ctx context.Context, own string, children []string) (string, error) {
	m := r.m
	if children == nil {
		var err error
		if children, _, err = m.readChildren(ctx, false); err != nil {
			return "", err
		}
	}
	writer, found := "", false
	for _, c := range sortContenders(children) {
		if c.node == path.Base(own) {
			found = true
			break
		}
		if !c.reader {
			writer = m.path + "/" + c.node
		}
	}
	if !found {
		return "", fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
	}
	return writer, nil
}

// create makes our reader node, creating the lock node when missing; a
// create whose reply is lost is recovered by finding our GUID.
func (r *ReadLock) create(ctx context.Context, guid string) (created, error) {
	m := r.m
	return m.s.createProtected(ctx, m.path, m.path+"/"+protectedPrefix+guid+"-"+readMarker, guid, m.data, m.ensureLockNode, "", m.stampNode())
}

// HoldsToken reports whether a reader that holds the lock now has token:
// a reader's contender created with that zxid with no writer ahead of it.
// It reads the readers' stats one by one.
func (r *ReadLock) HoldsToken(ctx context.Context, token uint64) (bool, error) {
	m := r.m
	s := m.s
	k, err := s.markOf(ctx, m.root, m.mode)
	if err != nil {
		return false, err
	}
	children, _, err := m.readChildren(ctx, false)
	if errors.Is(err, ErrLockLost) { // no lock node
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, c := range sortContenders(children) {
		if !c.reader {
			return false, nil // readers behind a writer hold nothing yet
		}
		e, err := read(ctx, s, s.existsOp(m.path+"/"+c.node))
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

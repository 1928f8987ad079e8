package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// create makes our ephemeral-sequential contender, creating the lock node
// (and its parents) when missing. A create whose reply is lost is recovered
// by finding our GUID among the children before trying again.
func (m *Mutex) create(ctx context.Context, guid string) (string, error) {
	return m.s.createProtected(ctx, m.path, m.path+"/"+contenderPrefix(guid), guid, m.data, m.ensureLockNode)
}

// findOwn looks for our GUID among the lock's children.
func (m *Mutex) findOwn(ctx context.Context, guid string) (string, error) {
	return m.s.findGUID(ctx, m.path, guid)
}

// createProtected creates an ephemeral-sequential node named prefix<seq>
// under parent, where prefix carries our GUID; ensure creates what is
// missing above it. A create whose reply was lost is recovered by finding
// the GUID among parent's children before trying again, so that no twin is
// left behind.
func (s *Session) createProtected(ctx context.Context, parent, prefix, guid string, data []byte, ensure func(context.Context) error) (string, error) {
	for attempt := 0; ; attempt++ {
		var own string
		// Not abandoned when ctx ends (call, not callCtx): a create still in
		// flight could commit after the withdrawal looked for it, and leave
		// an orphan. go-zookeeper answers or fails every request in time.
		err := s.call(func() (err error) {
			own, err = s.conn.Create(prefix, data, zk.FlagEphemeral|zk.FlagSequence, s.acl)
			return err
		})
		if err == nil && ctx.Err() != nil {
			return "", ctx.Err() // the caller withdraws the node by its GUID
		}
		switch {
		case err == nil:
			return own, nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 10:
			if err := ensure(ctx); err != nil {
				return "", err
			}
			continue
		case errors.Is(err, ErrUnavailable) && attempt < 10:
			// The create may have happened. Look for it before creating
			// again, or we would leave a twin behind.
			found, ferr := s.findGUID(ctx, parent, guid)
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

// findGUID looks for a child of parent named with our GUID, retrying while
// ZooKeeper is unreachable and ctx allows.
func (s *Session) findGUID(ctx context.Context, parent, guid string) (string, error) {
	for {
		var children []string
		err := s.callCtx(ctx, func() (err error) {
			// Sync first: on another server than the one that took the
			// lost create, the read must not run ahead of its commit, or we
			// would create a twin.
			if _, err := s.conn.Sync(parent); err != nil {
				return err
			}
			children, _, err = s.conn.Children(parent)
			return err
		})
		switch {
		case err == nil:
			for _, ch := range children {
				if strings.HasPrefix(ch, protectedPrefix+guid+"-") {
					return parent + "/" + ch, nil
				}
			}
			return "", nil
		case errors.Is(err, zk.ErrNoNode):
			return "", nil
		case errors.Is(err, ErrUnavailable) && s.Live():
			tc, t := s.clock.NewTimer(100 * time.Millisecond)
			select {
			case <-tc:
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			}
		default:
			return "", err // past the deadline: the janitor finds the node if it exists
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
				_, err = s.conn.CreateContainer(node, nil, zk.FlagContainer, s.acl)
			} else {
				_, err = s.conn.Create(node, nil, 0, s.acl)
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

// ownWatch is the watch being set on our own contender while acquiring.
type ownWatch struct {
	done  chan struct{}
	stat  *zk.Stat
	watch <-chan zk.Event
	err   error
}

// watchOwn starts setting a watch on own; result waits for it.
func (m *Mutex) watchOwn(own string) (*ownWatch, error) {
	s := m.s
	w := &ownWatch{done: make(chan struct{})}
	if !s.spawn(func() {
		defer close(w.done)
		w.err = s.call(func() (err error) {
			var ok bool
			ok, w.stat, w.watch, err = s.conn.ExistsW(own)
			if err == nil && !ok {
				err = fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
			}
			return err
		})
	}) {
		return nil, ErrClosed
	}
	return w, nil
}

// result is own's stat and watch, once set.
func (w *ownWatch) result(ctx context.Context) (*zk.Stat, <-chan zk.Event, error) {
	select {
	case <-w.done:
		return w.stat, w.watch, w.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

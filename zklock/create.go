package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// create makes our ephemeral-sequential contender with data, creating the
// lock node (and its parents) when missing, and reads the lock's children
// and the lock-delay marker once it is answered. A create whose reply is
// lost is recovered by finding our GUID among the children before trying
// again. The contender comes back with its stat, ours.
func (m *Mutex) create(ctx context.Context, guid string, data []byte) (created, error) {
	proof := m.markerAbsence()
	marker := m.delayPath()
	if proof != nil {
		marker = "" // no marker can exist: not read
	}
	c, err := m.s.createProtected(ctx, m.path, m.path+"/"+contenderPrefix(guid), guid, data, m.ensureLockNode, marker, m.stampNode())
	if err == nil && proof != nil && c.children != nil && proof.confirm(m.s) {
		// Still absent as of the children's answer: what a read behind
		// them would have found.
		c.marker = &readResult{err: zk.ErrNoNode}
	}
	return c, err
}

// stampNode is the node a create of ours may stamp (see createStamped):
// the lock node, whose data nobody reads in zxid mode; "" where it has a
// meaning (version mode's counter, an election's term).
func (m *Mutex) stampNode() string {
	if !m.stamp || m.mode != TokenZxid {
		return ""
	}
	return m.path
}

// findOwn looks for our GUID among the lock's children.
func (m *Mutex) findOwn(ctx context.Context, guid string) (string, error) {
	p, _, err := m.s.findGUID(ctx, m.path, guid)
	return p, err
}

// created is a node made by createProtected, with what was read right
// after its create answered.
type created struct {
	path string
	// stat is the node's, from a stamped create's answer or read right
	// after a plain create or with the node found again; createProtected
	// returns it always, a multi-lock's creates leave it nil.
	stat *zk.Stat
	at   time.Time // when the create was answered, on the local clock
	// children are the parent's children, read after the create, with a
	// watch (kids) set on them; nil when that read failed.
	children []string
	kids     <-chan zk.Event
	// marker is the node read after the children (a lock-delay marker);
	// nil when not read.
	marker *readResult
}

// readResult is one Get.
type readResult struct {
	data []byte
	stat *zk.Stat
	err  error
}

// createProtected creates an ephemeral-sequential node named prefix<seq>
// under parent, where prefix carries our GUID; ensure creates what is
// missing above it. It reads the node's stat and parent's children
// (setting a watch on them) and, when marker is not "", marker's data after
// the children. With a stamp node (see createStamped) the stat comes with
// the create and the children read goes right behind it; otherwise both
// reads go side by side once the create is answered. A create whose reply
// was lost, or whose stat could not be read, is recovered by finding the
// GUID among parent's children (with the node's stat) before trying again,
// so that no twin is left behind. The node it returns has its stat and is
// this session's.
func (s *Session) createProtected(ctx context.Context, parent, prefix, guid string, data []byte, ensure func(context.Context) error, marker, stamp string) (created, error) {
	for attempt := 0; ; attempt++ {
		// Not abandoned when ctx ends: a create still in flight could
		// commit after the withdrawal looked for it, and leave an orphan.
		// go-zookeeper answers or fails every request in time.
		var (
			c   created
			err error
		)
		if stamp != "" {
			c, err = s.createStamped(parent, prefix, guid, data, marker, stamp)
			if errors.Is(err, errStampRefused) {
				c, err = s.createOnce(parent, prefix, data, marker)
			}
		} else {
			c, err = s.createOnce(parent, prefix, data, marker)
		}
		if err == nil && ctx.Err() != nil {
			return created{}, ctx.Err() // the caller withdraws the node by its GUID
		}
		switch {
		case err == nil && c.stat != nil:
			return c, s.ownedBy("node", c.path, c.stat)
		case errors.Is(err, zk.ErrNoNode) && attempt < 10:
			if err := ensure(ctx); err != nil {
				return created{}, err
			}
			continue
		case err == nil, errors.Is(err, ErrUnavailable) && attempt < 10:
			// The create may have happened. Look for it (and its stat)
			// before creating again, or we would leave a twin behind.
			found, st, ferr := s.findGUID(ctx, parent, guid)
			switch {
			case ferr != nil:
				return created{}, ferr
			case found != "" && err == nil:
				c.stat = st
				return c, nil
			case found != "":
				return created{path: found, stat: st, at: s.clock.Now()}, nil
			case err == nil:
				return created{}, fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, c.path)
			}
			continue
		}
		return created{}, err
	}
}

// createOnce makes one attempt at a plain create, and then the reads that
// follow it.
//
// go-zookeeper (v1.0.4) has no create2, whose answer would carry the
// node's stat, and no asynchronous call that would let a read be queued
// right behind the create in the same round trip: the reads go once the
// create is answered. The token (czxid) and the owner come from a read of
// our own node; the parent's stat in the children read cannot stand in for
// it (docs/design.md, "Requests per grant").
func (s *Session) createOnce(parent, prefix string, data []byte, marker string) (created, error) {
	var c created
	err := s.call(func() (err error) {
		c.path, err = s.conn.Create(prefix, data, zk.FlagEphemeral|zk.FlagSequence, s.acl)
		return err
	})
	if err != nil {
		return created{}, err
	}
	c.at = s.clock.Now()
	s.readBehind(&c, parent, marker, true)
	return c, nil
}

// errStampRefused: ZooKeeper refused a stamped create for what it stamps
// (the stamp node's ACL), not for the create: create without it.
var errStampRefused = errors.New("zklock: stamp refused")

// createStamped creates our node in one multi with a setData of stamp (a
// node whose data nobody reads: the lock node of a lock in zxid mode), and
// sends the children read of parent right behind it.
//
// Every operation of a multi carries the multi's zxid and time, so the
// stamp node's mzxid and mtime in the setData's answer are our node's czxid
// and ctime; its owner is the session that sent the create. The node's stat
// therefore comes with the create's answer, where a plain create answers
// with the path only (go-zookeeper has no create2) and needs one more
// request and round trip to read it. ZooKeeper runs a session's requests in
// the order they were sent and answers a read only after the session's
// writes before it, so a children read sent behind the multi shows our
// node: create and first look take one round trip. The two requests go from
// two goroutines, and go-zookeeper gives no way to order them on the wire;
// should the read have gone first (our GUID is not among its children), it
// is sent again.
func (s *Session) createStamped(parent, prefix, guid string, data []byte, marker, stamp string) (created, error) {
	var (
		children []string
		kids     <-chan zk.Event
		kerr     error
		read     = make(chan struct{})
	)
	session := s.ID()
	if !s.spawn(func() {
		defer close(read)
		kerr = s.call(func() (err error) { children, _, kids, err = s.conn.ChildrenW(parent); return err })
	}) {
		return created{}, ErrClosed
	}
	var res []zk.MultiResponse
	err := s.call(func() (err error) {
		res, err = s.conn.Multi(
			&zk.CreateRequest{Path: prefix, Data: data, Acl: s.acl, Flags: zk.FlagEphemeral | zk.FlagSequence},
			&zk.SetDataRequest{Path: stamp, Version: -1},
		)
		return err
	})
	at := s.clock.Now()
	<-read
	switch {
	case err == nil && len(res) == 2 && res[1].Stat != nil:
	case err == nil:
		return created{}, fmt.Errorf("%w: a multi of 2 requests answered %d results", ErrUnavailable, len(res))
	case errors.Is(err, zk.ErrNoNode): // the lock node is missing: ensure creates it
		return created{}, err
	case isServerAnswer(err):
		return created{}, errStampRefused
	default:
		return created{}, err
	}
	c := created{path: res[0].String, at: at}
	if st := res[1].Stat; s.ID() == session {
		c.stat = &zk.Stat{Czxid: st.Mzxid, Mzxid: st.Mzxid, Pzxid: st.Mzxid, Ctime: st.Mtime, Mtime: st.Mtime,
			EphemeralOwner: session, DataLength: int32(len(data))}
	}
	if kerr == nil && slices.Contains(children, path.Base(c.path)) {
		c.children, c.kids = children, kids
	} else {
		s.call(func() (err error) { c.children, _, c.kids, err = s.conn.ChildrenW(parent); return err })
	}
	if c.children != nil && marker != "" {
		mk := &readResult{}
		s.call(func() error {
			mk.data, mk.stat, mk.err = s.conn.Get(marker)
			if mk.err != nil && !isServerAnswer(mk.err) {
				return mk.err
			}
			c.marker = mk
			return nil
		})
	}
	return c, nil
}

// readBehind reads, once the create of c was answered, what the acquire
// looks at first: c's own stat (when own: not when its batch or its multi
// reads it) side by side with parent's children, and then marker (a
// lock-delay marker must be read after the children that showed us at the
// head). c keeps nil for what could not be read.
func (s *Session) readBehind(c *created, parent, marker string, own bool) {
	var st *zk.Stat
	statRead := make(chan struct{})
	if own {
		node := c.path
		go func() { // waited for below; go-zookeeper answers or fails it in time
			defer close(statRead)
			s.call(func() error {
				ok, stat, err := s.conn.Exists(node)
				if ok {
					st = stat
				}
				return err
			})
		}()
	} else {
		close(statRead)
	}
	s.call(func() error {
		children, _, kids, err := s.conn.ChildrenW(parent)
		if err != nil {
			return err
		}
		var mk *readResult
		if marker != "" {
			mk = &readResult{}
			mk.data, mk.stat, mk.err = s.conn.Get(marker)
			if mk.err != nil && !isServerAnswer(mk.err) {
				return mk.err
			}
		}
		c.children, c.kids, c.marker = children, kids, mk
		return nil
	})
	<-statRead
	if st != nil {
		c.stat = st
	}
}

// statOf is c's stat: read right after the create, or now when that read
// failed or the node was found again after a lost answer.
func (s *Session) statOf(ctx context.Context, c created) (*zk.Stat, error) {
	if c.stat != nil {
		return c.stat, nil
	}
	e, err := callCtx(ctx, s, s.existsOp(c.path))
	ok, st := e.ok, e.stat
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, c.path)
	}
	return st, nil
}

// ownedBy refuses a node that another session owns: ours is ephemeral and
// ours; anything else was planted or is not the node we made.
func (s *Session) ownedBy(what, node string, st *zk.Stat) error {
	if st.EphemeralOwner != s.ID() {
		return fmt.Errorf("zklock: %s %s is owned by session 0x%x, not ours (0x%x)", what, node, st.EphemeralOwner, s.ID())
	}
	return nil
}

// findGUID looks for a child of parent named with our GUID, and reads its
// stat, retrying while ZooKeeper is unreachable and ctx allows. A child of
// another session's is refused.
func (s *Session) findGUID(ctx context.Context, parent, guid string) (string, *zk.Stat, error) {
	for {
		f, err := callCtx(ctx, s, func() (found, error) { return s.lookForGUID(parent, guid) })
		switch {
		case err == nil:
			return f.path, f.stat, nil
		case errors.Is(err, ErrUnavailable) && s.Live():
			tc, t := s.clock.NewTimer(100 * time.Millisecond)
			select {
			case <-tc:
			case <-ctx.Done():
				t.Stop()
				return "", nil, ctx.Err()
			}
		default:
			return "", nil, err // past the deadline: the janitor finds the node if it exists
		}
	}
}

// found is a child found by its GUID, with its stat.
type found struct {
	path string
	stat *zk.Stat
}

// lookForGUID is one look of findGUID: parent's children (after a sync:
// on another server than the one that took a lost create, the read must
// not run ahead of its commit, or we would create a twin), and the stat of
// the one named with guid. A missing parent or child is found{}.
func (s *Session) lookForGUID(parent, guid string) (found, error) {
	var children []string
	err := s.call(func() (err error) {
		if _, err = s.conn.Sync(parent); err != nil {
			return err
		}
		children, _, err = s.conn.Children(parent)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return found{}, nil
	}
	if err != nil {
		return found{}, err
	}
	for _, ch := range children {
		if !strings.HasPrefix(ch, protectedPrefix+guid+"-") {
			continue
		}
		f := found{path: parent + "/" + ch}
		var ok bool
		if err := s.call(func() (err error) { ok, f.stat, err = s.conn.Exists(f.path); return err }); err != nil || !ok {
			return found{}, err // gone since: not found
		}
		return f, s.ownedBy("node", f.path, f.stat)
	}
	return found{}, nil
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
		err := s.do(ctx, func() error {
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

// abandon withdraws our contender after a failed acquire (err not nil),
// and names the lock, and what kind of acquire failed, in the error of one
// cancelled or timed out.
func (m *Mutex) abandon(ctx context.Context, guid, what string, err error) error {
	if err == nil {
		return nil
	}
	m.withdraw(ctx, guid)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("zklock: %s not acquired%s: %w", m.name, what, err)
	}
	return err
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

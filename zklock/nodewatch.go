package zklock

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// A lock or election node's state, read with or without watches. One
// nodeWatch keeps at most one watch of each kind armed (children, the node's
// data, the first contender's data) and sets a watch again only once it has
// fired, so that go-zookeeper's watcher lists do not grow with every read.

// nodeState is one read of a lock or election node.
type nodeState struct {
	exists     bool
	cs         []contender // recognised children, lowest first
	children   int         // every child, recognised or not
	first      string      // the lowest contender's child name; "" if none
	firstData  []byte
	firstStat  *zk.Stat
	data       []byte   // the lock or election node's own data
	stat       *zk.Stat // its stat; nil when it does not exist
	childStamp int64    // pzxid: the last change to its children
	mark       rootMark // the root's, for the tokens the state shows
}

// index is the zxid of the latest change the state shows: a child created
// or deleted, the node's data or the first contender's data set.
func (st nodeState) index() uint64 {
	idx := st.childStamp
	if st.stat != nil {
		idx = max(idx, st.stat.Mzxid)
	}
	if st.firstStat != nil {
		idx = max(idx, st.firstStat.Mzxid)
	}
	return uint64(max(idx, 0))
}

// nodeWatch reads one node's state; with watch set it arms the watches
// that wait reports.
type nodeWatch struct {
	s     *Session
	path  string
	watch bool
	// root and mode name the mark whose floor the state's tokens take.
	root string
	mode TokenMode

	children  <-chan zk.Event // children (or, while the node is missing, its creation)
	data      <-chan zk.Event // the node's data
	first     <-chan zk.Event // the first contender's data or deletion
	firstPath string          // whose data first watches
}

// errReread: what was read changed under the read; read again.
var errReread = errors.New("zklock: state changed while read")

// read reads the node's state, retrying a few times when it changes
// halfway. Every request is bounded like Session.read.
func (w *nodeWatch) read(ctx context.Context) (nodeState, error) {
	for attempt := 0; ; attempt++ {
		st, err := w.readOnce(ctx)
		if !errors.Is(err, errReread) || attempt == 10 {
			return st, err
		}
	}
}

func (w *nodeWatch) readOnce(ctx context.Context) (nodeState, error) {
	s := w.s
	// The requests run on goroutines that a timed-out read abandons: they
	// write only their own variables, and w changes after they answered.
	var (
		st       nodeState
		children []string
		cstat    *zk.Stat
		ch       <-chan zk.Event
	)
	mark, err := s.markOf(ctx, w.root, w.mode)
	if err != nil {
		w.disarm()
		return nodeState{}, err
	}
	st.mark = mark
	arm := w.watch && w.children == nil
	listOp := s.childrenOp(w.path)
	if arm {
		listOp = s.childrenWOp(w.path)
	}
	l, err := read(ctx, s, listOp)
	children, cstat, ch = l.names, l.stat, l.ch
	if errors.Is(err, zk.ErrNoNode) {
		return w.missing(ctx)
	}
	if err != nil {
		w.disarm()
		return nodeState{}, err
	}
	if arm {
		w.children = ch
	}
	st.exists, st.childStamp, st.cs, st.children = true, cstat.Pzxid, sortContenders(children), len(children)
	var (
		data []byte
		stat *zk.Stat
	)
	arm = w.watch && w.data == nil
	getOp := s.getOp(w.path)
	if arm {
		getOp = s.getWOp(w.path)
	}
	n, err := read(ctx, s, getOp)
	data, stat, ch = n.data, n.stat, n.ch
	if err != nil {
		return nodeState{}, w.failed(err)
	}
	if arm {
		w.data = ch
	}
	st.data, st.stat = data, stat
	if len(st.cs) == 0 {
		return st, nil
	}
	st.first = st.cs[0].node
	p := w.path + "/" + st.first
	arm = w.watch && (w.first == nil || w.firstPath != p)
	getOp = s.getOp(p)
	if arm {
		getOp = s.getWOp(p)
	}
	n, err = read(ctx, s, getOp)
	data, stat, ch = n.data, n.stat, n.ch
	if err != nil {
		return nodeState{}, w.failed(err)
	}
	if arm {
		w.first, w.firstPath = ch, p
	}
	st.firstData, st.firstStat = data, stat
	return st, nil
}

// missing handles a node that does not exist: with watch, it waits for its
// creation.
func (w *nodeWatch) missing(ctx context.Context) (nodeState, error) {
	s := w.s
	w.children, w.data = nil, nil
	if !w.watch {
		return nodeState{}, nil
	}
	e, err := read(ctx, s, s.existsWOp(w.path))
	ok, ch := e.ok, e.ch
	if err != nil {
		return nodeState{}, err
	}
	if ok {
		w.children = nil // created meanwhile: its creation watch fires anyway
		return nodeState{}, errReread
	}
	w.children = ch
	return nodeState{}, nil
}

// failed maps a read that lost a race (a node deleted between two reads) to
// errReread, and forgets the watches after any other failure: whether they
// were set is unknown.
func (w *nodeWatch) failed(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		return errReread
	}
	w.disarm()
	return err
}

func (w *nodeWatch) disarm() { w.children, w.data, w.first, w.firstPath = nil, nil, nil, "" }

// wait returns when an armed watch fires (that watch is then disarmed), ctx
// ends or the session ends.
func (w *nodeWatch) wait(ctx context.Context) error {
	s := w.s
	select {
	case <-w.children:
		w.children = nil
	case <-w.data:
		w.data = nil
	case <-w.first:
		w.first = nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return s.Err()
	}
	return nil
}

// observe reads the node's state whenever it changes and hands it to emit,
// until ctx ends or the session ends. While ZooKeeper cannot be read it
// retries, backing off up to a second.
func (s *Session) observe(ctx context.Context, m *Mutex, nodePath string, emit func(nodeState)) {
	w := &nodeWatch{s: s, path: nodePath, watch: true, root: m.root, mode: m.mode}
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil && s.Err() == nil {
		st, err := w.read(ctx)
		if err != nil {
			s.log.Debug("observe: read failed", "path", nodePath, "err", err, "retry_in", backoff)
			tc, t := s.clock.NewTimer(backoff)
			select {
			case <-tc:
			case <-ctx.Done():
			case <-s.done:
			}
			t.Stop()
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		emit(st)
		if w.wait(ctx) != nil {
			return
		}
	}
}

// latest is a channel of one value that a slow reader finds replaced by the
// newest one rather than queued behind the old.
type latest[T any] struct{ ch chan T }

func newLatest[T any]() latest[T] { return latest[T]{ch: make(chan T, 1)} }

// put replaces any unread value with v. Only one goroutine may put.
func (l latest[T]) put(v T) {
	select {
	case <-l.ch:
	default:
	}
	l.ch <- v
}

// Observe reports the lock's holder now and after every change (a grant, a
// release, a contender queueing or leaving), until ctx ends or the session
// ends; then the channel closes. One watch of each kind is armed at a time,
// whatever the number of changes. A reader that falls behind finds the
// latest state, not every one in between.
func (m *Mutex) Observe(ctx context.Context) <-chan Holder {
	out := newLatest[Holder]()
	if !m.s.spawn(func() {
		defer close(out.ch)
		var last *Holder
		m.s.observe(ctx, m, m.path, func(st nodeState) {
			h := holderOf(st, m.mode)
			if last != nil && sameHolder(*last, h) {
				return
			}
			last = &h
			out.put(h)
		})
	}) {
		close(out.ch)
	}
	return out.ch
}

func sameHolder(a, b Holder) bool {
	return a.Held == b.Held && a.Node == b.Node && a.Token == b.Token && string(a.Data) == string(b.Data) && a.Waiters == b.Waiters
}

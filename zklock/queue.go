package zklock

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Queues: who holds a lock, a semaphore or an election and who waits, in
// order, as far as the contender nodes tell (their names say which recipe
// made them, their data what it wrote, their ctime since when they wait).

// MaxQueueRead bounds the contenders one queue read reads: past it, the
// rest are counted in Queue.Unread, not read.
const MaxQueueRead = 1000

// queueReads is how many of a queue read's requests are in flight at once:
// go-zookeeper pipelines them on the session's one connection.
const queueReads = 16

// QueuedNode is one contender as ZooKeeper has it.
type QueuedNode struct {
	Node string // child name
	// Marker is the part of the name that says which recipe made it:
	// "-lock-" (seqd, Curator's InterProcessMutex, go-zookeeper's zk.Lock),
	// "__lock__" (kazoo), "__WRIT__" (Curator's write lock), "__READ__"
	// (Curator's and seqd's read lock), "__rlock__" (kazoo's read lock),
	// "-lease-" (a semaphore's lease: seqd or Curator).
	Marker string
	Shared bool // a reader: it holds together with other readers
	// Data is the node's data as created; nil when it was rewritten since
	// (DataRewritten) or the node went away before it was read (Gone).
	Data          []byte
	DataRewritten bool
	Created       time.Time // its ctime: when it queued
	Czxid         uint64    // its create zxid
	// Token is its token while it holds (0 for a waiter): the root's floor
	// plus its czxid, or in TokenVersion mode the lock's counter.
	Token   uint64
	Session int64 // the session that owns it; 0: not ephemeral (planted by hand)
	Gone    bool  // deleted between the children read and its own
	// SetWaiting: a multi-lock's contender whose set is not granted yet
	// (it waits for another lock of the set): it holds nothing here.
	SetWaiting bool
}

// Queue is a lock's, a semaphore's or an election's contenders in order:
// the holders first, then the waiters.
type Queue struct {
	Nodes []QueuedNode
	// Holding is how many of Nodes hold: a lock's first contender (or its
	// leading readers), an election's leader, a semaphore's lease nodes up
	// to its limit. 0 when nobody holds (a planted node blocks the head, or
	// in TokenVersion mode the head has not taken its token yet).
	Holding int
	// Token is the current token of a lock or an election in TokenVersion
	// mode (from the node's data version), 0 otherwise: in TokenZxid mode
	// each holder has its own (QueuedNode.Token).
	Token uint64
	// Limit is a semaphore's recorded limit (0 if none).
	Limit int
	// Unread counts contenders beyond MaxQueueRead, not read.
	Unread int
	// Index is the zxid of the latest change the reads saw.
	Index uint64
}

// markerOf is the recipe marker of a contender's name.
func markerOf(name string) string {
	head := name[:len(name)-seqDigits]
	for _, m := range []string{lockMarker, kazooMarker, curatorWriter, readMarker, kazooReader, leaseMarker} {
		if strings.HasSuffix(head, m) {
			return m
		}
	}
	return ""
}

// leaseMarker ends a semaphore's lease node names (before the sequence).
const leaseMarker = "-lease-"

// Queue reads the lock's contenders in order: one children read, then each
// contender's node, pipelined, at most MaxQueueRead of them.
func (m *Mutex) Queue(ctx context.Context) (Queue, error) {
	k, err := m.s.markOf(ctx, m.root, m.mode)
	if err != nil {
		return Queue{}, err
	}
	var (
		lock = make(chan lockRead, 1)
		q    Queue
	)
	go func() {
		var r lockRead
		n, err := read(ctx, m.s, m.s.getOp(m.path))
		r.data, r.stat, r.err = n.data, n.stat, err
		lock <- r
	}()
	children, pzxid, err := m.s.readChildren(ctx, m.path)
	lr := <-lock
	if err != nil || children == nil {
		return Queue{}, err
	}
	if lr.err != nil && !errors.Is(lr.err, zk.ErrNoNode) {
		return Queue{}, lr.err
	}
	q.Index = pzxid
	if lr.stat != nil {
		q.Index = max(q.Index, uint64(lr.stat.Mzxid))
		if m.mode == TokenVersion && lr.stat.Version > 0 {
			q.Token = k.token(uint64(lr.stat.Version))
		}
	}
	cs := sortContenders(children)
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.node
	}
	if q.Nodes, q.Unread, err = m.s.readNodes(ctx, m.path, names); err != nil {
		return Queue{}, err
	}
	for _, n := range q.Nodes {
		q.Index = max(q.Index, n.Czxid)
	}
	q.Nodes = present(q.Nodes)
	q.Holding = lockHolding(q.Nodes, m.mode, lr.data)
	for i := range q.Nodes[:q.Holding] {
		n := &q.Nodes[i]
		n.Token = k.token(n.Czxid)
		if m.mode == TokenVersion && !n.Shared {
			n.Token = q.Token
		}
	}
	return q, nil
}

// present drops the nodes that went away between the reads.
func present(nodes []QueuedNode) []QueuedNode {
	out := nodes[:0]
	for _, n := range nodes {
		if !n.Gone {
			out = append(out, n)
		}
	}
	return out
}

// lockHolding is how many of nodes hold the lock: the head, if it is
// ephemeral (and not a multi-lock's contender still waiting for its set) (and, in TokenVersion mode, has taken its token, as the lock
// node's data says), with the readers right behind a reader at the head.
func lockHolding(nodes []QueuedNode, mode TokenMode, lockData []byte) int {
	if len(nodes) == 0 || nodes[0].Session == 0 || nodes[0].SetWaiting {
		return 0
	}
	if mode == TokenVersion && string(lockData) != nodes[0].Node && !nodes[0].Shared {
		return 0
	}
	if !nodes[0].Shared {
		return 1
	}
	n := 0
	for n < len(nodes) && nodes[n].Shared && nodes[n].Session != 0 {
		n++
	}
	return n
}

// Queue reads the election's candidates in order, the leader first (as a
// Mutex's queue; Holding is 1 while someone leads).
func (e *Election) Queue(ctx context.Context) (Queue, error) { return e.m.Queue(ctx) }

// Queue reads the semaphore's holders (its lease nodes up to the recorded
// limit, oldest first) and its waiters: an acquirer whose lease node is
// beyond the limit (it waits for a slot holding the semaphore's mutex), then
// the acquirers queued on the mutex. Each acquirer's node in the mutex is
// not tied to its lease node by name, so the mutex's head is left out
// when a lease node waits: it is that acquirer.
func (sem *Semaphore) Queue(ctx context.Context) (Queue, error) {
	s := sem.s
	k, err := s.markOf(ctx, sem.leases.root, sem.leases.mode)
	if err != nil {
		return Queue{}, err
	}
	leases, pz, err := s.readChildren(ctx, sem.leases.path)
	if err != nil {
		return Queue{}, err
	}
	limit, lidx, err := sem.readLimit(ctx)
	if err != nil {
		return Queue{}, err
	}
	locks, lz, err := s.readChildren(ctx, sem.lock.path)
	if err != nil {
		return Queue{}, err
	}
	q := Queue{Limit: limit, Index: max(pz, lz, lidx)}
	names := sortedLeases(leases)
	var held []QueuedNode
	if held, q.Unread, err = s.readNodes(ctx, sem.leases.path, names); err != nil {
		return Queue{}, err
	}
	held = present(held)
	q.Holding = len(held)
	if limit > 0 {
		q.Holding = min(len(held), limit)
	}
	for i := range held[:q.Holding] {
		held[i].Token = k.token(held[i].Czxid)
	}
	cs := sortContenders(locks)
	names = names[:0]
	for _, c := range cs {
		names = append(names, c.node)
	}
	if len(held) > q.Holding && len(names) > 0 {
		names = names[1:]
	}
	waiting, unread, err := s.readNodes(ctx, sem.lock.path, names[:min(len(names), max(0, MaxQueueRead-len(held)))])
	if err != nil {
		return Queue{}, err
	}
	q.Unread += unread + len(names) - min(len(names), max(0, MaxQueueRead-len(held)))
	q.Nodes = append(held, present(waiting)...)
	for _, n := range q.Nodes {
		q.Index = max(q.Index, n.Czxid)
	}
	return q, nil
}

// sortedLeases is a semaphore's lease nodes, lowest sequence first.
func sortedLeases(children []string) []string {
	type lease struct {
		name string
		seq  int64
	}
	ls := make([]lease, 0, len(children))
	for _, ch := range children {
		if len(ch) < seqDigits {
			continue
		}
		seq, err := strconv.ParseInt(ch[len(ch)-seqDigits:], 10, 64)
		if err != nil {
			continue
		}
		ls = append(ls, lease{ch, seq})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].seq < ls[j].seq })
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.name
	}
	return out
}

// readChildren reads p's children and its pzxid; a missing node has none
// (nil, no error).
func (s *Session) readChildren(ctx context.Context, p string) ([]string, uint64, error) {
	l, err := read(ctx, s, s.childrenOp(p))
	children, st := l.names, l.stat
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if children == nil {
		children = []string{}
	}
	return children, uint64(st.Pzxid), nil
}

// readNodes reads the first MaxQueueRead of the children names of parent,
// queueReads at a time, in names' order; unread counts the rest. A node
// deleted meanwhile comes back Gone.
func (s *Session) readNodes(ctx context.Context, parent string, names []string) (nodes []QueuedNode, unread int, err error) {
	if len(names) > MaxQueueRead {
		unread, names = len(names)-MaxQueueRead, names[:MaxQueueRead]
	}
	nodes = make([]QueuedNode, len(names))
	errs := make([]error, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(queueReads, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				nodes[i], errs[i] = s.readNode(ctx, parent, names[i])
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return nodes, unread, errors.Join(errs...)
}

// readNode reads one contender.
func (s *Session) readNode(ctx context.Context, parent, name string) (QueuedNode, error) {
	n := QueuedNode{Node: name, Marker: markerOf(name)}
	n.Shared = n.Marker == readMarker || n.Marker == kazooReader
	r, err := read(ctx, s, s.getOp(parent+"/"+name))
	data, st := r.data, r.stat
	if errors.Is(err, zk.ErrNoNode) {
		n.Gone = true
		return n, nil
	}
	if err != nil {
		return n, err
	}
	n.Data, n.Created, n.Czxid, n.Session = data, time.UnixMilli(st.Ctime), uint64(st.Czxid), st.EphemeralOwner
	c, _ := parseContender(name)
	n.SetWaiting = !c.holds(st)
	if c.rewritten(st) {
		n.Data, n.DataRewritten = nil, true
	}
	return n, nil
}

// BreakNode deletes the contender node of a lock, an election or a
// semaphore lease (its child name, as a Queue read gave it) at whatever
// version it has: the holder's session learns that its node is gone and
// its grant is lost. It reports false when the node was already gone.
func (s *Session) BreakNode(ctx context.Context, parent, node string) (bool, error) {
	if strings.Contains(node, "/") || node == "" {
		return false, errors.New("zklock: a contender node is one child name")
	}
	err := s.do(ctx, func() error { return s.conn.Delete(parent+"/"+node, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	return err == nil, err
}

// LeasesPath is the node under which the semaphore's lease nodes live.
func (sem *Semaphore) LeasesPath() string { return sem.leases.path }

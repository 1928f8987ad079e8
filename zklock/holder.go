package zklock

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// Holder describes a lock's current state as ZooKeeper has it.
type Holder struct {
	Held bool
	// Shared: the holder is a reader, holding together with the readers
	// queued right behind it; no writer holds the lock.
	Shared bool
	Node   string // the holder's contender (child name)
	Token  uint64 // its token (version mode: the last issued, even if its holder has gone)
	Data   []byte // the holder's contender data, as created (nil if rewritten since)
	Owner  int64  // the session that owns the holder's contender
	// Since is when the holder's contender was created (when it queued,
	// not when it was granted); zero when nobody holds.
	Since   time.Time
	Waiters int // contenders behind the holder
	// Index is the zxid of the latest change the state shows (a contender
	// created or deleted, the holder's or the lock node's data set): it
	// differs whenever the state may have changed.
	Index uint64
	// DataRewritten: the contender's data was changed after its create (its
	// data version is not 0), so Data is not given: it may not be the
	// holder's.
	DataRewritten bool
	// Blocked names a contender-shaped child at the head of the queue that
	// no session owns (it is not ephemeral): it blocks the lock until
	// someone deletes it, and is no holder (Held is false).
	Blocked string
}

// Holder reads the lock's current holder from ZooKeeper, so that it answers
// for holders on any session or daemon (Chubby's CheckSequencer).
func (m *Mutex) Holder(ctx context.Context) (Holder, error) {
	s := m.s
	k, err := s.markOf(ctx, m.root, m.mode)
	if err != nil {
		return Holder{}, err
	}
	var (
		children []string
		cstat    *zk.Stat
		lock     = make(chan lockRead, 1)
	)
	if m.mode == TokenVersion {
		// Pipelined with the children read: the counter and who bumped it.
		go func() {
			var r lockRead
			n, err := read(ctx, s, s.getOp(m.path))
			r.data, r.stat, r.err = n.data, n.stat, err
			lock <- r
		}()
	} else {
		lock <- lockRead{}
	}
	var l listing
	l, err = read(ctx, s, s.childrenOp(m.path))
	children, cstat = l.names, l.stat
	lr := <-lock // bounded like the children read
	if errors.Is(err, zk.ErrNoNode) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, err
	}
	if lr.err != nil && !errors.Is(lr.err, zk.ErrNoNode) {
		return Holder{}, lr.err
	}
	lockData, lockStat := lr.data, lr.stat
	cs := sortContenders(children)
	h := Holder{Index: uint64(cstat.Pzxid)}
	if lockStat != nil {
		if lockStat.Version > 0 {
			h.Token = k.token(uint64(lockStat.Version))
		}
		h.Index = max(h.Index, uint64(lockStat.Mzxid))
	}
	for len(cs) > 0 {
		n, err := read(ctx, s, s.getOp(m.path+"/"+cs[0].node))
		data, st := n.data, n.stat
		if errors.Is(err, zk.ErrNoNode) {
			cs = cs[1:] // it left between the two reads
			continue
		}
		if err != nil {
			return Holder{}, err
		}
		m.overtakeOwn(ctx, cs)
		h.Waiters = len(cs) - 1
		h.Index = max(h.Index, uint64(st.Mzxid))
		if st.EphemeralOwner == 0 {
			// Planted by hand: it holds nothing, whatever its name says.
			h.Blocked = cs[0].node
			s.reportBlocked(m.name, m.path+"/"+cs[0].node, st.Czxid)
			break
		}
		h.Node, h.Data, h.Owner, h.Shared, h.Since = cs[0].node, data, st.EphemeralOwner, cs[0].reader, time.UnixMilli(st.Ctime)
		if cs[0].rewritten(st) {
			// A contender's data is written once, at create: another
			// version was written by someone else.
			h.Data, h.DataRewritten = nil, true
		}
		switch {
		case !cs[0].holds(st):
			// A multi-lock's contender waiting for another lock of its set.
		case m.mode == TokenZxid:
			h.Held, h.Token = true, k.token(uint64(st.Czxid))
		case m.mode == TokenVersion:
			h.Held = string(lockData) == cs[0].node
		}
		break
	}
	return h, nil
}

// overtakeOwn ends this session's live grant of the lock if its contender is
// among cs but not the lowest: a contender appeared below it, so the grant
// must not be vouched for any more (check and status now name another).
func (m *Mutex) overtakeOwn(ctx context.Context, cs []contender) {
	g := m.s.grants.get(m.path)
	if g == nil {
		return
	}
	if lower, ok := g.below(cs); ok && lower != "" {
		g.overtaken(ctx, lower)
	}
}

// lockRead is the lock node's data and stat, read alongside its children.
type lockRead struct {
	data []byte
	stat *zk.Stat
	err  error
}

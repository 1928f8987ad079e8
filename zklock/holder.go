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
// for holders on any session or daemon (Chubby's CheckSequencer). What the
// reads show becomes a Holder in holderOf, as for Observe.
func (m *Mutex) Holder(ctx context.Context) (Holder, error) {
	s := m.s
	k, err := s.markOf(ctx, m.root, m.mode)
	if err != nil {
		return Holder{}, err
	}
	lock := make(chan lockRead, 1)
	if m.mode == TokenVersion {
		// Pipelined with the children read: the counter and who bumped it.
		go func() {
			n, err := read(ctx, s, s.getOp(m.path))
			lock <- lockRead{n.data, n.stat, err}
		}()
	} else {
		lock <- lockRead{}
	}
	l, err := read(ctx, s, s.childrenOp(m.path))
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
	st := nodeState{exists: true, cs: sortContenders(l.names), children: len(l.names), data: lr.data, stat: lr.stat, childStamp: l.stat.Pzxid, mark: k}
	for len(st.cs) > 0 {
		n, err := read(ctx, s, s.getOp(m.path+"/"+st.cs[0].node))
		if errors.Is(err, zk.ErrNoNode) {
			st.cs = st.cs[1:] // it left between the two reads
			continue
		}
		if err != nil {
			return Holder{}, err
		}
		m.overtakeOwn(ctx, st.cs)
		st.first, st.firstData, st.firstStat = st.cs[0].node, n.data, n.stat
		break
	}
	h := holderOf(st, m.mode)
	if h.Blocked != "" {
		s.reportBlocked(m.name, m.path+"/"+h.Blocked, st.firstStat.Czxid)
	}
	return h, nil
}

// holderOf is a lock's Holder as st shows it, in mode: the one holder
// computation, for Holder and Observe.
func holderOf(st nodeState, mode TokenMode) Holder {
	h := Holder{Index: st.index()}
	lock := got{data: st.data, stat: st.stat}
	// Without a holder, version mode still shows the last token issued.
	h.Token, _ = mode.readToken(st.mark, lock, contender{}, nil)
	if st.first == "" {
		return h
	}
	c, fst := st.cs[0], st.firstStat
	h.Node, h.Data, h.Waiters = st.first, st.firstData, len(st.cs)-1
	if fst == nil {
		return h
	}
	if fst.EphemeralOwner == 0 {
		// Planted by hand: it holds nothing, whatever its name says.
		h.Node, h.Data, h.Blocked = "", nil, st.first
		return h
	}
	h.Owner, h.Shared, h.Since = fst.EphemeralOwner, c.reader, time.UnixMilli(fst.Ctime)
	if c.rewritten(fst) {
		// A contender's data is written once, at create: another version
		// was written by someone else.
		h.Data, h.DataRewritten = nil, true
	}
	// A multi-lock's contender waiting for another lock of its set does
	// not hold; in version mode, one that has not taken its token yet.
	h.Token, h.Held = mode.readToken(st.mark, lock, c, fst)
	return h
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

package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultElectionRoot is the znode under which election nodes live.
const DefaultElectionRoot = "/seqd/elections"

// Election is one candidate in a leader election: the lock recipe under its
// own root. Candidates are contenders named as a Mutex's, so Curator's
// LeaderSelector and kazoo's Election (on a Lock with
// extra_lock_patterns=["-lock-"]) on the same path take part; the leader is
// the lowest candidate. Curator's LeaderLatch cannot share a path: it
// counts only its own "-latch-" nodes. Its term is its token
// (TokenZxid: its node's czxid; TokenVersion: the election node's data
// version, bumped when it takes office), so terms strictly rise from one
// leader to the next. Its value is its node's data, which Proclaim changes
// without a new term. NewElection does no I/O; an Election campaigns once at
// a time: a second campaign while one is under way fails at once with
// ErrBusy, and one while it leads with ErrAlreadyAcquired.
type Election struct {
	m *Mutex
}

// Leader is an election's leader as ZooKeeper has it.
type Leader struct {
	// Elected is false when there is no leader (nobody campaigns or, with
	// TokenVersion, the lowest candidate has not taken its term yet).
	Elected bool
	Node    string    // the leader's candidate node (child name)
	Value   []byte    // its data
	Term    uint64    // its term
	Since   time.Time // when it took office (for other recipes' leaders: when their candidate node was created)
	// Candidates counts every candidate, the leader included.
	Candidates int
	// Index is the zxid of the latest change the state shows (a candidate
	// created or deleted, a value proclaimed, a term taken).
	Index uint64
}

// Leadership is one term of office. Holding it is never guaranteed: Lost
// closes when it can no longer be trusted (as a Grant's), before another
// candidate can be elected; a leader that acts on a resource sends Term
// with every write so that the resource refuses a deposed one.
// Its Grant is the candidate's: Lost, Err, Sequencer (name@term) and
// Release (Resign) are the grant's.
type Leadership struct {
	*Grant
	Term uint64 // the grant's token: higher than every earlier term of this election
}

// NewElection names an election on s. It takes WithRoot (default
// DefaultElectionRoot) and WithTokenMode; a candidate's data is the value
// given to Campaign.
func NewElection(s *Session, name string, opts ...ElectionOption) (*Election, error) {
	m := &Mutex{s: s, name: name, root: DefaultElectionRoot, mode: TokenZxid, quiet: true}
	for _, o := range opts {
		o.applyElection(m)
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	if m.mode == TokenZxid {
		m.tokenOf = markedZxidToken
	}
	return &Election{m: m}, nil
}

// Name is the election name.
func (e *Election) Name() string { return e.m.name }

// Path is the election node's path.
func (e *Election) Path() string { return e.m.path }

// Campaign stands for election with value and blocks until elected, ctx
// ends or the session ends. On failure the candidate node is deleted.
func (e *Election) Campaign(ctx context.Context, value []byte) (*Leadership, error) {
	return e.campaign(ctx, value, true)
}

// TryCampaign is Campaign that gives up at once, with ErrHeld, when another
// candidate leads; it leaves no node behind.
func (e *Election) TryCampaign(ctx context.Context, value []byte) (*Leadership, error) {
	return e.campaign(ctx, value, false)
}

func (e *Election) campaign(ctx context.Context, value []byte, wait bool) (*Leadership, error) {
	if err := e.m.begin(); err != nil {
		return nil, err
	}
	defer e.m.end()
	g, err := e.m.lock(ctx, value, wait)
	if err != nil {
		return nil, err
	}
	return &Leadership{Grant: g, Term: g.Token}, nil
}

// Proclaim changes the current leadership's value (see Leadership.Proclaim).
func (e *Election) Proclaim(ctx context.Context, value []byte) error {
	l := e.current()
	if l == nil {
		return fmt.Errorf("%w: not leader", ErrLockLost)
	}
	return l.Proclaim(ctx, value)
}

// Resign ends the current leadership, if any (see Leadership.Resign).
func (e *Election) Resign(ctx context.Context) error {
	if l := e.current(); l != nil {
		return l.Resign(ctx)
	}
	return nil
}

func (e *Election) current() *Leadership {
	e.m.mu.Lock()
	g := e.m.grant
	e.m.mu.Unlock()
	if g == nil {
		return nil
	}
	return &Leadership{Grant: g, Term: g.Token}
}

// Leader reads the current leader from ZooKeeper, whoever's session it is
// on. It fails fast, like every read, while the session cannot be trusted.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	w := &nodeWatch{s: e.m.s, path: e.m.path, root: e.m.root, mode: e.m.mode}
	st, err := w.read(ctx)
	if err != nil {
		return Leader{}, err
	}
	return e.leaderOf(st), nil
}

// Observe reports the leader now and after every change (a new leader, a
// proclaimed value, no leader, the number of candidates), until ctx ends or
// the session ends; then the channel closes. It never reports a term lower
// than one it has reported. One watch of each kind is armed at a time; a
// reader that falls behind finds the latest state, not every one in
// between.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := newLatest[Leader]()
	if !e.m.s.spawn(func() {
		defer close(out.ch)
		var (
			last *Leader
			term uint64
		)
		e.m.s.observe(ctx, e.m, e.m.path, func(st nodeState) {
			l := e.leaderOf(st)
			if l.Elected && l.Term < term {
				return // a read that ran behind one already reported
			}
			if last != nil && sameLeader(*last, l) {
				return
			}
			last = &l
			term = max(term, l.Term)
			out.put(l)
		})
	}) {
		close(out.ch)
	}
	return out.ch
}

func sameLeader(a, b Leader) bool {
	return a.Elected == b.Elected && a.Node == b.Node && a.Term == b.Term &&
		string(a.Value) == string(b.Value) && a.Candidates == b.Candidates
}

// leaderOf is the leader st shows. The election node's data names the
// candidate that last took a term through seqd, and its mtime says when.
func (e *Election) leaderOf(st nodeState) Leader {
	l := Leader{Candidates: len(st.cs), Index: st.index()}
	if st.first == "" {
		return l
	}
	l.Node, l.Value = st.first, st.firstData
	term, elected := e.m.mode.readToken(st.mark, got{data: st.data, stat: st.stat}, st.cs[0], st.firstStat)
	if !elected {
		return l // in version mode, the lowest candidate has not taken its term yet
	}
	l.Elected, l.Term, l.Since = true, term, time.UnixMilli(st.firstStat.Ctime)
	if st.stat != nil && string(st.data) == st.first {
		// Marked by the candidate when it took its term.
		l.Since = time.UnixMilli(st.stat.Mtime)
	}
	return l
}

// Proclaim sets the leader's value without a new term. It fails with
// ErrLockLost once the leadership has ended.
func (l *Leadership) Proclaim(ctx context.Context, value []byte) error {
	if err := l.Err(); err != nil {
		return err
	}
	s := l.m.s
	err := s.do(ctx, func() error { _, err := s.conn.Set(l.Path, value, -1); return err })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: candidate deleted", ErrLockLost)
	}
	return err
}

// Resign ends the leadership and deletes the candidate node, so that the
// next candidate takes office at once. Resigning twice returns nil.
func (l *Leadership) Resign(ctx context.Context) error { return l.Release(ctx) }

// markedZxidToken is the zxid token of an election candidate that also
// names itself in the election node's data, by a multi of check(own
// candidate) + setData(election node): the node's mtime then says when the
// term began.
func markedZxidToken(ctx context.Context, m *Mutex, own string, stat *zk.Stat) (uint64, error) {
	s := m.s
	err := s.do(ctx, func() error {
		_, err := s.conn.Multi(
			&zk.CheckVersionRequest{Path: own, Version: -1},
			&zk.SetDataRequest{Path: m.path, Data: []byte(path.Base(own)), Version: -1},
		)
		return err
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			err = fmt.Errorf("%w: candidate %s vanished before it took office", ErrLockLost, own)
		}
		return 0, err
	}
	return uint64(stat.Czxid), nil
}

package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Several exclusive locks at once, all or nothing, without deadlock.
//
// A MultiMutex creates a contender in every lock of its set with one
// ZooKeeper multi: one transaction, so the contenders of the set share one
// zxid. A lock's sequence numbers follow the order in which ZooKeeper
// commits the creates under it, so in every lock's queue a contender sits
// behind those of older transactions and ahead of those of younger ones. A
// contender waits only for contenders below it, that is for older
// transactions: every waits-for edge points from a younger transaction to
// an older one, no cycle can form, and the oldest waiting transaction is
// always granted once the holders ahead of it release. That holds whatever
// sets the acquirers ask for, as long as each takes either one lock (a
// Mutex, or another recipe's lock) or its whole set at once this way. It
// breaks when an acquirer takes locks of the same paths one by one
// (Curator's InterProcessMultiLock), or when a holder takes more locks
// while it holds some: the edge from what it holds to what it asks for
// then points to a younger transaction.
//
// The price is the queue: a contender waiting for one lock of its set sits
// in the queues of the others too, free or not, and whoever comes after it
// there waits behind it (FIFO, as for a single lock). Letting a later
// acquirer overtake it would let younger transactions take locks ahead of
// older ones, and the argument above would no longer hold.

// MaxMultiLocks bounds the locks of one MultiMutex.
const MaxMultiLocks = 64

// MultiMutex is one contender for a set of exclusive locks: it holds all of
// them or none. It holds at most one grant at a time. NewMultiMutex does no
// I/O.
type MultiMutex struct {
	s     *Session
	locks []*Mutex // one per lock, in the order given

	mu        sync.Mutex
	acquiring bool // an acquire is under way (begin)
	grant     *MultiGrant
}

// MultiLockError says which lock of its set an acquire was waiting for
// when it failed.
type MultiLockError struct {
	Lock string // the lock's name
	Err  error
}

func (e *MultiLockError) Error() string {
	return fmt.Sprintf("%v (waiting for the lock %s of the set)", e.Err, e.Lock)
}

func (e *MultiLockError) Unwrap() error { return e.Err }

// NewMultiMutex names a set of 1 to MaxMultiLocks distinct locks on s, all
// under one root with one token mode. It validates the names and touches
// nothing.
func NewMultiMutex(s *Session, names []string, opts ...MultiMutexOption) (*MultiMutex, error) {
	if len(names) == 0 || len(names) > MaxMultiLocks {
		return nil, fmt.Errorf("zklock: a multi-lock takes 1 to %d locks, not %d", MaxMultiLocks, len(names))
	}
	mm := &MultiMutex{s: s, locks: make([]*Mutex, len(names))}
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("zklock: the lock %q appears twice in the set", name)
		}
		seen[name] = true
		m := &Mutex{s: s, name: name, root: DefaultRoot, mode: TokenZxid}
		for _, o := range opts {
			o.applyMultiMutex(m)
		}
		if err := m.init(); err != nil {
			return nil, err
		}
		mm.locks[i] = m
	}
	return mm, nil
}

// Names are the set's lock names, in the order given.
func (mm *MultiMutex) Names() []string {
	names := make([]string, len(mm.locks))
	for i, m := range mm.locks {
		names[i] = m.name
	}
	return names
}

// Acquire waits until every lock of the set is granted, ctx ends (its
// deadline is the wait timeout) or the session ends. On any failure every
// contender is deleted, with a context that outlives ctx.
func (mm *MultiMutex) Acquire(ctx context.Context) (*MultiGrant, error) {
	return mm.acquire(ctx, true)
}

// TryAcquire makes one attempt: it returns an error matching ErrHeld if
// another contender is ahead in any lock of the set, and leaves no node
// behind.
func (mm *MultiMutex) TryAcquire(ctx context.Context) (*MultiGrant, error) {
	return mm.acquire(ctx, false)
}

// Release releases the current grant (see MultiGrant.Release).
func (mm *MultiMutex) Release(ctx context.Context) error {
	mm.mu.Lock()
	g := mm.grant
	mm.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.Release(ctx)
}

func (mm *MultiMutex) acquire(ctx context.Context, wait bool) (g *MultiGrant, err error) {
	if err := mm.begin(); err != nil {
		return nil, err
	}
	defer mm.end()
	s, first := mm.s, mm.locks[0]
	if err := s.ClaimTokenMode(ctx, first.root, first.mode); err != nil {
		return nil, err
	}
	start := s.clock.Now()
	if wait {
		for _, m := range mm.locks {
			m.observer().Waiting(m.name, 1)
			defer m.observer().Waiting(m.name, -1)
		}
	}
	guid := newGUID() + multiMark
	var cs []created
	defer func() {
		if err != nil {
			mm.withdraw(ctx, guid, cs)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				err = fmt.Errorf("zklock: %s not acquired: %w", strings.Join(mm.Names(), ", "), err)
			}
		}
	}()
	if cs, err = mm.create(ctx, guid); err != nil {
		return nil, err
	}
	stats, err := mm.ownStats(ctx, cs)
	if err != nil {
		return nil, err
	}
	waits := wait && !mm.lowestEverywhere(cs)
	if waits {
		if err := mm.mark(ctx, cs, multiWaiting); err != nil {
			return nil, err
		}
	}
	kids, err := mm.awaitAll(ctx, cs, stats, guid, wait)
	if err != nil {
		return nil, err
	}
	tokens, err := mm.takeTokens(ctx, cs, stats)
	if err != nil {
		return nil, err
	}
	if waits {
		if err := mm.mark(ctx, cs, multiGranted); err != nil {
			return nil, err
		}
	}
	return mm.newGrant(cs, guid, tokens, s.clock.Now().Sub(start), kids)
}

// begin starts an acquire, before anything is written: it refuses while
// another acquire on mm is under way (ErrBusy) or mm holds a live grant
// (ErrAlreadyAcquired), and forgets an ended grant. end closes it.
func (mm *MultiMutex) begin() error {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	switch {
	case mm.acquiring:
		return fmt.Errorf("%w: %s", ErrBusy, strings.Join(mm.Names(), ", "))
	case mm.grant != nil && mm.grant.Err() == nil:
		return ErrAlreadyAcquired
	}
	mm.acquiring = true
	mm.grant = nil
	return nil
}

// end closes the acquire that begin started.
func (mm *MultiMutex) end() {
	mm.mu.Lock()
	mm.acquiring = false
	mm.mu.Unlock()
}

// create makes our contender in every lock with one multi, creating the
// lock nodes that are missing, and reads each lock's children (with a
// watch) and lock-delay marker right behind it. A multi happens in every
// lock or in none: one whose answer is lost is recovered by finding our
// GUID in the locks before trying again. cs is set when the contenders
// exist, even with an error (ctx ended meanwhile), so that they can be
// withdrawn by path.
func (mm *MultiMutex) create(ctx context.Context, guid string) (cs []created, err error) {
	proofs := make([]*absence, len(mm.locks))
	for i, m := range mm.locks {
		proofs[i] = m.markerAbsence()
	}
	for attempt := 0; ; attempt++ {
		// Not abandoned when ctx ends, as for a single create: a multi
		// in flight could commit after the withdrawal looked for it.
		paths, missing, err := mm.createOnce(guid)
		switch {
		case err == nil && ctx.Err() != nil:
			return mm.made(paths), ctx.Err()
		case err == nil:
			return mm.readBehind(paths, proofs), nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 10:
			if err := mm.ensureLockNodes(ctx, missing); err != nil {
				return nil, err
			}
			continue
		case errors.Is(err, ErrUnavailable) && attempt < 10:
			found, ferr := mm.findOwn(ctx, guid)
			if ferr != nil {
				return nil, ferr
			}
			if found != nil {
				return mm.made(found), nil
			}
			continue
		}
		return nil, err
	}
}

// createOnce sends the multi of creates; on ErrNoNode, missing are the
// locks whose node may be missing: ZooKeeper stops a multi at its first
// failed op, so every lock from the first one it names as missing on (all
// of them when the answer does not say).
func (mm *MultiMutex) createOnce(guid string) (paths []string, missing []*Mutex, err error) {
	s := mm.s
	ops := make([]any, len(mm.locks))
	for i, m := range mm.locks {
		ops[i] = &zk.CreateRequest{Path: m.path + "/" + contenderPrefix(guid), Data: m.data, Acl: s.acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
	}
	var res []zk.MultiResponse
	err = s.call(func() (err error) { res, err = s.conn.Multi(ops...); return err })
	switch {
	case err == nil && len(res) != len(ops):
		// Done, but an answer we cannot read: as after a lost answer.
		return nil, nil, fmt.Errorf("%w: a multi of %d creates answered %d results", ErrUnavailable, len(ops), len(res))
	case err == nil:
		paths = make([]string, len(res))
		for i, r := range res {
			paths[i] = r.String
		}
		return paths, nil, nil
	case errors.Is(err, zk.ErrNoNode):
		missing = mm.locks
		for i, r := range res {
			if i < len(mm.locks) && errors.Is(r.Error, zk.ErrNoNode) {
				missing = mm.locks[i:]
				break
			}
		}
	}
	return nil, missing, err
}

// ensureLockNodes creates the lock nodes of locks that do not exist: it
// asks ZooKeeper about them all at once (one round trip), then creates
// those that are missing. A multi reports only its first missing node, so
// creating one per failed multi would need as many attempts as new locks.
func (mm *MultiMutex) ensureLockNodes(ctx context.Context, locks []*Mutex) error {
	exists := make([]bool, len(locks))
	errs := make([]error, len(locks))
	var wg sync.WaitGroup
	for i, m := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := callCtx(ctx, mm.s, mm.s.existsOp(m.path))
			exists[i], errs[i] = e.ok, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("zklock: look for the lock nodes: %w", err)
	}
	for i, m := range locks {
		if exists[i] {
			continue
		}
		if err := m.ensureLockNode(ctx); err != nil {
			return err
		}
	}
	return nil
}

// made is the contenders at paths, as found (nothing read behind them).
func (mm *MultiMutex) made(paths []string) []created {
	now := mm.s.clock.Now()
	cs := make([]created, len(paths))
	for i, p := range paths {
		cs[i] = created{path: p, at: now}
	}
	return cs
}

// readBehind reads, for the contenders of one multi at paths, each lock's
// children with a watch and its marker (unless proofs show the marker
// directory absent), and the stat that the contenders share: they were
// created in one transaction, so they have one czxid, ctime and owner. The
// reads go out together; what could not be read stays nil and is read
// later.
func (mm *MultiMutex) readBehind(paths []string, proofs []*absence) []created {
	s := mm.s
	cs := mm.made(paths)
	var (
		wg   sync.WaitGroup
		stat *zk.Stat
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ok bool
		var st *zk.Stat
		if s.call(func() (err error) { ok, st, err = s.conn.Exists(paths[0]); return err }) == nil && ok {
			stat = st
		}
	}()
	for i, m := range mm.locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			marker := m.delayPath()
			if proofs[i] != nil {
				marker = "" // no marker can exist: not read
			}
			s.readBehind(&cs[i], m.path, marker, false) // the stat is read once, above
			if proofs[i] != nil && cs[i].children != nil && proofs[i].confirm(s) {
				cs[i].marker = &readResult{err: zk.ErrNoNode}
			}
		}()
	}
	wg.Wait()
	for i := range cs {
		if stat != nil {
			st := *stat
			cs[i].stat = &st
		}
	}
	return cs
}

// findOwn looks for our GUID in every lock after a multi whose answer was
// lost: it returns every contender's path, or nil when the multi did not
// happen. Some found and some not means someone deleted ours meanwhile.
func (mm *MultiMutex) findOwn(ctx context.Context, guid string) ([]string, error) {
	paths := make([]string, len(mm.locks))
	found := 0
	for i, m := range mm.locks {
		p, err := m.findOwn(ctx, guid)
		if err != nil {
			return nil, err
		}
		if p != "" {
			paths[i] = p
			found++
		}
	}
	switch found {
	case 0:
		return nil, nil
	case len(paths):
		return paths, nil
	}
	return nil, fmt.Errorf("%w: %d of the set's %d contenders vanished while acquiring", ErrLockLost, len(paths)-found, len(paths))
}

// ownStats is every contender's stat, read where the create's answer did
// not give it, and checks that each is ours: a node another session owns
// was planted or is not the one we made.
func (mm *MultiMutex) ownStats(ctx context.Context, cs []created) ([]*zk.Stat, error) {
	s := mm.s
	stats := make([]*zk.Stat, len(cs))
	for i, c := range cs {
		st, err := s.statOf(ctx, c)
		if err != nil {
			return nil, err
		}
		if err := s.ownedBy("contender", c.path, st); err != nil {
			return nil, err
		}
		stats[i] = st
	}
	return stats, nil
}

// awaitAll waits until our contender is the lowest in every lock (and no
// lock-delay holds it back), one lock at a time, each watching its one
// predecessor: a contender that is the lowest stays so, since only a node
// planted by hand can sort below it. It returns each lock's children watch,
// for the grants' monitors to go on from.
func (mm *MultiMutex) awaitAll(ctx context.Context, cs []created, stats []*zk.Stat, guid string, wait bool) ([]<-chan zk.Event, error) {
	kids := make([]<-chan zk.Event, len(cs))
	for {
		for i, m := range mm.locks {
			if kids[i] != nil {
				continue
			}
			c := cs[i]
			c.stat = stats[i]
			k, err := m.awaitTurn(ctx, c, guid, wait)
			if err != nil {
				return nil, &MultiLockError{Lock: m.name, Err: err}
			}
			kids[i] = k
		}
		again, err := mm.recheck(ctx, cs, kids)
		if err != nil || !again {
			return kids, err
		}
	}
}

// recheck reads again the children of each lock whose watch fired while the
// other locks were waited for, as a Mutex does before its grant. A lock
// where our contender is no longer the lowest (a node planted below it) is
// to be waited for again: its watch is then nil, and again true.
func (mm *MultiMutex) recheck(ctx context.Context, cs []created, kids []<-chan zk.Event) (again bool, err error) {
	for i, m := range mm.locks {
		if !fired(kids[i]) {
			continue
		}
		children, k, err := m.readChildren(ctx, true)
		if err != nil {
			return false, err
		}
		if m.wasLowest(cs[i].path, children) {
			kids[i] = k
			continue
		}
		kids[i], again = nil, true
		cs[i].children, cs[i].kids, cs[i].marker = children, k, nil
	}
	return again, nil
}

// takeTokens records each lock's lock-delay marker (if it has a delay) and
// takes its token, as a Mutex does at its grant: the contender's czxid in
// zxid mode (the same for every lock of the set), each lock's counter
// bumped in version mode.
func (mm *MultiMutex) takeTokens(ctx context.Context, cs []created, stats []*zk.Stat) ([]uint64, error) {
	tokens := make([]uint64, len(cs))
	for i, m := range mm.locks {
		if err := m.markHeld(ctx, cs[i].path); err != nil {
			return nil, err
		}
		k, err := m.s.claim(ctx, m.root, m.mode)
		if err != nil {
			return nil, err
		}
		t, err := m.takeToken(ctx, k, cs[i].path, stats[i])
		if err != nil {
			return nil, err
		}
		tokens[i] = t
	}
	return tokens, nil
}

// lowestEverywhere reports whether the children read behind the create
// show our contender the lowest in every lock.
func (mm *MultiMutex) lowestEverywhere(cs []created) bool {
	for i, m := range mm.locks {
		if cs[i].children == nil || !m.wasLowest(cs[i].path, cs[i].children) {
			return false
		}
	}
	return true
}

// mark moves every contender of the set to data version v (multiWaiting or
// multiGranted) by setting its data again, unchanged, in one multi: while
// the set waits for one of its locks, a reader of another lock where the
// set's contender is the lowest sees no holder there.
func (mm *MultiMutex) mark(ctx context.Context, cs []created, v int32) error {
	s := mm.s
	ops := make([]any, len(cs))
	for i, m := range mm.locks {
		ops[i] = &zk.SetDataRequest{Path: cs[i].path, Data: m.data, Version: v - 1}
	}
	err := s.do(ctx, func() error { _, err := s.conn.Multi(ops...); return err })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: a contender of the set vanished before its grant", ErrLockLost)
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: a contender of the set was rewritten before its grant", ErrLockLost)
	case err != nil:
		return err
	}
	return nil
}

// newGrant declares a grant of every lock, each with its loss monitor, and
// ties them into one MultiGrant. Should the session close halfway, the
// grants already declared end with it.
func (mm *MultiMutex) newGrant(cs []created, guid string, tokens []uint64, waited time.Duration, kids []<-chan zk.Event) (*MultiGrant, error) {
	mg := &MultiGrant{s: mm.s, lost: make(chan struct{}), Locks: make([]HeldLock, len(cs))}
	for i, m := range mm.locks {
		g, err := m.newGrant(cs[i].path, guid, tokens[i], waited, kids[i])
		if err != nil {
			mg.end(err)
			return nil, err
		}
		mg.grants = append(mg.grants, g)
		mg.Locks[i] = HeldLock{Name: m.name, Path: cs[i].path, Token: tokens[i]}
	}
	for _, g := range mg.grants {
		g.AfterEnd(func(err error) {
			if !errors.Is(err, ErrReleased) {
				mg.lose(g, err)
			}
		})
	}
	mm.mu.Lock()
	mm.grant = mg
	mm.mu.Unlock()
	return mg, nil
}

// withdraw deletes our contenders after a failed or abandoned acquire, on a
// context that outlives the caller's: all at once by path in one multi
// when cs knows them, otherwise (or if that fails) lock by lock by GUID,
// leaving to the janitor what ZooKeeper cannot delete now.
func (mm *MultiMutex) withdraw(ctx context.Context, guid string, cs []created) {
	s := mm.s
	if len(cs) == len(mm.locks) {
		ops := make([]any, len(cs))
		for i, c := range cs {
			ops[i] = &zk.DeleteRequest{Path: c.path, Version: -1}
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		err := s.do(cctx, func() error { _, err := s.conn.Multi(ops...); return err })
		cancel()
		if err == nil {
			return
		}
	}
	var wg sync.WaitGroup
	for _, m := range mm.locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.withdraw(ctx, guid)
		}()
	}
	wg.Wait()
}

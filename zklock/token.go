package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"
)

// TokenMode chooses where tokens come from.
type TokenMode int

const (
	// TokenZxid (default): the czxid of the holder's contender znode; rises
	// across holders, across locks and across leader failover.
	TokenZxid TokenMode = iota
	// TokenVersion: a dense per-lock counter 1, 2, 3 …, the data version of
	// the lock node, bumped at grant by a multi of check(own contender) +
	// setData(lock node).
	TokenVersion
)

func (m TokenMode) String() string {
	switch m {
	case TokenZxid:
		return "zxid"
	case TokenVersion:
		return "version"
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

// readToken is the read side of the mode, which every reader of a lock's
// state asks (Holder and Observe through holderOf, an election's leader):
// whether c, the lock's lowest contender with stat cst, holds it, and the
// token to show. In zxid mode that is c's czxid, once c holds. In version
// mode it is the lock node's counter (its data version, in lock), shown
// even when nobody holds (the last one issued), and c holds once the lock
// node's data names it: it has taken its token. cst nil: no contender.
func (m TokenMode) readToken(k rootMark, lock got, c contender, cst *zk.Stat) (token uint64, held bool) {
	held = cst != nil && c.holds(cst)
	switch m {
	case TokenVersion:
		if lock.stat != nil && lock.stat.Version > 0 {
			token = k.token(uint64(lock.stat.Version))
		}
		return token, held && lock.stat != nil && string(lock.data) == c.node
	case TokenZxid:
		if held {
			token = k.token(uint64(cst.Czxid))
		}
		return token, held
	}
	return 0, false
}

// tokenSource computes the token of a grant to our contender own, whose stat
// was read when it became the lowest.
type tokenSource func(ctx context.Context, m *Mutex, own string, stat *zk.Stat) (uint64, error)

// source is the mode's tokenSource, nil for an unknown mode.
func (m TokenMode) source() tokenSource {
	switch m {
	case TokenZxid:
		return zxidToken
	case TokenVersion:
		return versionToken
	}
	return nil
}

func zxidToken(_ context.Context, _ *Mutex, _ string, stat *zk.Stat) (uint64, error) {
	return uint64(stat.Czxid), nil
}

// versionToken bumps the lock node's data version by a multi of
// check(own contender) + setData(lock node), so that a holder that already
// lost its node cannot bump the counter. The data names the contender that
// bumped it, for Holder.
func versionToken(ctx context.Context, m *Mutex, own string, _ *zk.Stat) (uint64, error) {
	s := m.s
	res, err := callCtx(ctx, s, func() ([]zk.MultiResponse, error) {
		return s.conn.Multi(
			&zk.CheckVersionRequest{Path: own, Version: -1},
			&zk.SetDataRequest{Path: m.path, Data: []byte(path.Base(own)), Version: -1},
		)
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			err = fmt.Errorf("%w: contender %s vanished before the counter was bumped", ErrLockLost, own)
		}
		return 0, err
	}
	return uint64(res[1].Stat.Version), nil
}

// takeToken computes the token of a grant to own, under the root's mark k
// as claimed right before (the session may have forgotten it meanwhile, when
// a grant was refused for the root's floor), and declares it only if the
// session can still vouch for the grant and the token is above every one
// issued before for this lock (guardToken) and above the root's floor
// record. Writers and readers (a ReadLock's grant, whose token is its
// czxid) go through it alike.
func (m *Mutex) takeToken(ctx context.Context, k rootMark, own string, stat *zk.Stat) (uint64, error) {
	s := m.s
	raw, err := m.tokenOf(ctx, m, own, stat)
	if err != nil {
		return 0, err
	}
	token := k.token(raw)
	if err := s.aboveFloor(m.root, k, token, uint64(stat.Czxid)); err != nil {
		return 0, err
	}
	// Past its deadline ZooKeeper may already have expired the session and
	// granted someone else.
	if !s.Live() {
		if err := s.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: not heard from since %s; cannot declare a grant", ErrUnavailable, s.LastHeard().Format("15:04:05.000"))
	}
	if err := s.guardToken(m, token); err != nil {
		s.obs.TokenRegression(m.name)
		s.log.Error("token regression: grant refused", "lock", m.name, "token", token, "last", s.guard.Last(m.path), "mode", m.mode)
		return 0, err
	}
	if err := s.floors.Record(m.root, Issued{Token: token, Zxid: uint64(stat.Czxid), Floor: k.floor}); err != nil {
		return 0, err
	}
	return token, nil
}

// guardToken holds token to the regression guard: a writer's is issued
// (the guard remembers it and refuses a lower one later); a reader's is
// only checked against the writers', since readers are granted in any
// order among themselves.
func (s *Session) guardToken(m *Mutex, token uint64) error {
	if !m.shared {
		return s.guard.Issue(m.path, token)
	}
	if last := s.guard.Last(m.path); token <= last {
		return &RegressionError{Name: m.path, Token: token, Last: last}
	}
	return nil
}

// aboveFloor refuses a token of root (with mark k, to a contender created
// at zxid) that could fall below one issued before the session was
// dialled, as its Floors recorded them. A zxid token is above them all in
// one history; in version mode each lock counts on its own, so a history
// that went on (a zxid above those seen) is what says the counters did
// too, unless the floor is above every token issued. The refused root's
// mark is read again at its next grant (it may have been raised since).
func (s *Session) aboveFloor(root string, k rootMark, token, zxid uint64) error {
	is := s.issued[root]
	ok := token > is.Token
	if k.mode == TokenVersion {
		ok = k.floor >= is.Token || (zxid > is.Zxid && k.floor >= is.Floor)
	}
	if ok || is.Token == 0 {
		return nil
	}
	s.modes.forget(root)
	s.obs.TokenRegression(root)
	err := &FloorError{Root: root, Floor: k.floor, Zxid: zxid, Issued: is, File: s.floors.Path()}
	s.log.Error("token floor: grant refused", "root", root, "token", token, "err", err)
	return err
}

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
	var res []zk.MultiResponse
	err := s.callCtx(ctx, func() (err error) {
		res, err = s.conn.Multi(
			&zk.CheckVersionRequest{Path: own, Version: -1},
			&zk.SetDataRequest{Path: m.path, Data: []byte(path.Base(own)), Version: -1},
		)
		return err
	})
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			err = fmt.Errorf("%w: contender %s vanished before the counter was bumped", ErrLockLost, own)
		}
		return 0, err
	}
	return uint64(res[1].Stat.Version), nil
}

// takeToken computes the token of a grant to own and declares it only if
// the session can still vouch for the grant and the token is above every
// one issued before for this lock.
func (m *Mutex) takeToken(ctx context.Context, own string, stat *zk.Stat) (uint64, error) {
	s := m.s
	token, err := m.tokenOf(ctx, m, own, stat)
	if err != nil {
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
	if err := s.guard.Issue(m.path, token); err != nil {
		s.obs.TokenRegression(m.name)
		s.log.Error("token regression: grant refused", "lock", m.name, "token", token, "last", s.guard.Last(m.path), "mode", m.mode)
		return 0, err
	}
	return token, nil
}

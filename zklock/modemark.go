package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ErrTokenModeMismatch: the root records another token mode than the one
// asked for. Tokens of the two modes are unrelated numbers, so a lock that
// changed modes could hand out a token lower than one already issued.
var ErrTokenModeMismatch = errors.New("zklock: token mode mismatch")

// TokenModeError names the two modes of a refused root.
type TokenModeError struct {
	Root     string
	Recorded string // what the root's data says
	Wanted   TokenMode
}

func (e *TokenModeError) Error() string {
	return fmt.Sprintf("zklock: root %s records token mode %s, refusing token mode %s: mixing modes on one root makes tokens go backwards (use another root)", e.Root, e.Recorded, e.Wanted)
}

// Is makes errors.Is(err, ErrTokenModeMismatch) true.
func (e *TokenModeError) Is(target error) bool { return target == ErrTokenModeMismatch }

// modeMarkPrefix starts the root node's data, so that a root that holds
// something else is told apart from one that records a mode.
const modeMarkPrefix = "seqd-token-mode="

// claimedModes remembers the roots whose mode this session has checked.
type claimedModes struct {
	mu    sync.Mutex
	roots map[string]TokenMode
}

func (c *claimedModes) get(root string) (TokenMode, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.roots[root]
	return m, ok
}

func (c *claimedModes) set(root string, mode TokenMode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roots == nil {
		c.roots = map[string]TokenMode{}
	}
	c.roots[root] = mode
}

// ClaimTokenMode records mode in root's data if the root records none yet
// (creating the root and its ancestors if missing), and otherwise checks it:
// a root that records the other mode is refused with a *TokenModeError.
// Acquire calls it once per root and session; a daemon calls it at start to
// refuse to run at all.
func (s *Session) ClaimTokenMode(ctx context.Context, root string, mode TokenMode) error {
	if m, ok := s.modes.get(root); ok {
		if m != mode {
			return &TokenModeError{Root: root, Recorded: m.String(), Wanted: mode}
		}
		return nil
	}
	want := []byte(modeMarkPrefix + mode.String())
	for attempt := 0; attempt < 10; attempt++ {
		var (
			data []byte
			st   *zk.Stat
		)
		err := s.callCtx(ctx, func() (err error) { data, st, err = s.conn.Get(root); return err })
		if errors.Is(err, zk.ErrNoNode) {
			err = s.createRoot(ctx, root, want)
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				continue // read what is there now
			}
		}
		if err != nil {
			return fmt.Errorf("zklock: token mode of %s: %w", root, err)
		}
		if len(data) == 0 {
			// Made before modes were recorded, or by another tool: the
			// first to claim it records its mode, the others then read it.
			err := s.callCtx(ctx, func() error { _, err := s.conn.Set(root, want, st.Version); return err })
			if err != nil && !errors.Is(err, zk.ErrBadVersion) {
				return fmt.Errorf("zklock: record token mode on %s: %w", root, err)
			}
			continue
		}
		recorded, ok := strings.CutPrefix(string(data), modeMarkPrefix)
		if !ok {
			return &TokenModeError{Root: root, Recorded: fmt.Sprintf("unknown (data %.40q)", data), Wanted: mode}
		}
		got, err := ParseTokenMode(recorded)
		if err != nil || recorded == "" {
			return &TokenModeError{Root: root, Recorded: fmt.Sprintf("%q", recorded), Wanted: mode}
		}
		if got != mode {
			return &TokenModeError{Root: root, Recorded: got.String(), Wanted: mode}
		}
		if err := s.checkRootACL(ctx, root); err != nil {
			return err
		}
		s.modes.set(root, mode)
		return nil
	}
	return fmt.Errorf("zklock: token mode of %s: the root keeps changing", root)
}

// ErrOpenRoot: under the creator ACL, a root that others may write. Every
// lock under it could be broken, its contenders deleted or planted, by
// any client.
var ErrOpenRoot = errors.New("zklock: root open to writes by anyone")

// OpenRootError names the root and what its ACL lets anyone do.
type OpenRootError struct {
	Root  string
	Perms string // e.g. "cdrwa"
}

func (e *OpenRootError) Error() string {
	return fmt.Sprintf("zklock: root %s exists with an ACL that lets any client %s: with the creator ACL, seqd's nodes under it would still be open; "+
		"set its ACL to the creator's (setAcl %s digest:<user>:<hash>:cdrwa,world:anyone:r, as the creator) or choose a root that does not exist yet",
		e.Root, e.Perms, e.Root)
}

// Is makes errors.Is(err, ErrOpenRoot) true.
func (e *OpenRootError) Is(target error) bool { return target == ErrOpenRoot }

// ErrNoAuthRoot: a root that lets only digest identities create nodes,
// for a session that has none. It matches zk.ErrNoAuth too, which is what
// ZooKeeper would answer the first create under it.
var ErrNoAuthRoot = errors.New("zklock: root needs an identity")

// NoAuthRootError names the root and the identities its ACL admits.
type NoAuthRootError struct {
	Root  string
	Users []string // the digest users that may create under it
}

func (e *NoAuthRootError) Error() string {
	return fmt.Sprintf("zklock: root %s lets only the digest identity %s create nodes, and this session has none: %v",
		e.Root, strings.Join(e.Users, ", "), zk.ErrNoAuth)
}

// Is makes errors.Is(err, ErrNoAuthRoot) and errors.Is(err, zk.ErrNoAuth)
// true.
func (e *NoAuthRootError) Is(target error) bool {
	return target == ErrNoAuthRoot || target == zk.ErrNoAuth
}

// checkRootACL refuses, under the creator ACL, a root whose ACL lets
// clients without credentials (world, ip) do more than read: nodes created
// below it inherit nothing, and whoever may create or delete its children
// may delete or plant lock nodes and contenders. A session without an
// identity is refused a root it could not create nodes under, at once
// rather than at its first grant.
func (s *Session) checkRootACL(ctx context.Context, root string) error {
	if !s.creatorACL() && !s.anonymous {
		return nil
	}
	var acl []zk.ACL
	if err := s.callCtx(ctx, func() (err error) { acl, _, err = s.conn.GetACL(root); return err }); err != nil {
		return fmt.Errorf("zklock: read the ACL of %s: %w", root, err)
	}
	if s.anonymous {
		return checkAnonymousCreate(root, acl)
	}
	for _, a := range acl {
		if (a.Scheme == "world" || a.Scheme == "ip") && a.Perms&^zk.PermRead != 0 {
			return &OpenRootError{Root: root, Perms: permString(a.Perms)}
		}
	}
	return nil
}

// checkAnonymousCreate: without an identity, only a world or ip entry with
// the create permission lets a session create under root.
func checkAnonymousCreate(root string, acl []zk.ACL) error {
	var users []string
	for _, a := range acl {
		switch {
		case (a.Scheme == "world" || a.Scheme == "ip") && a.Perms&zk.PermCreate != 0:
			return nil
		case a.Scheme == "digest" && a.Perms&zk.PermCreate != 0:
			user, _, _ := strings.Cut(a.ID, ":")
			users = append(users, fmt.Sprintf("%q", user))
		case a.Scheme != "world" && a.Scheme != "ip" && a.Scheme != "digest":
			return nil // another scheme (sasl, x509) may admit this client: ZooKeeper decides
		}
	}
	if len(users) == 0 {
		return nil // nobody may create: not a question of identity
	}
	return &NoAuthRootError{Root: root, Users: users}
}

// creatorACL reports whether the session creates nodes under the creator
// ACL.
func (s *Session) creatorACL() bool {
	return len(s.acl) > 0 && s.acl[0].Scheme == "digest"
}

// permString spells ZooKeeper permissions as its CLI does (cdrwa).
func permString(p int32) string {
	var b strings.Builder
	for _, x := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// createRoot creates root's missing ancestors (persistent, no data) and root
// itself with data.
func (s *Session) createRoot(ctx context.Context, root string, data []byte) error {
	parts := strings.Split(strings.Trim(root, "/"), "/")
	p := ""
	for i, part := range parts {
		p += "/" + part
		node, d := p, []byte(nil)
		if i == len(parts)-1 {
			d = data
		}
		err := s.callCtx(ctx, func() error { _, err := s.conn.Create(node, d, 0, s.acl); return err })
		if err != nil && (i == len(parts)-1 || !errors.Is(err, zk.ErrNodeExists)) {
			return err
		}
	}
	return nil
}

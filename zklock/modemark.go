package zklock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
// something else is told apart from one that records a mode. A floor
// follows the mode, " floor=N", when it is not 0 (a daemon that knows no
// floors then refuses the root rather than issue tokens without it).
const (
	modeMarkPrefix = "seqd-token-mode="
	floorMark      = " floor="
)

// rootMark is what a root's data records: its token mode and floor.
type rootMark struct {
	mode  TokenMode
	floor uint64
}

func (k rootMark) bytes() []byte {
	if k.floor == 0 {
		return []byte(modeMarkPrefix + k.mode.String())
	}
	return []byte(fmt.Sprintf("%s%s%s%d", modeMarkPrefix, k.mode, floorMark, k.floor))
}

// token is the fencing token of raw on a root with this mark: raw is a
// contender's czxid (zxid mode, a reader's, a semaphore lease's) or a lock
// node's data version (version mode). Every token seqd issues or reads goes
// through it.
func (k rootMark) token(raw uint64) uint64 { return k.floor + raw }

// parseMark reads a root's data; recorded is how to name what it holds
// when it is not a mark.
func parseMark(data []byte) (k rootMark, recorded string, ok bool) {
	rest, found := strings.CutPrefix(string(data), modeMarkPrefix)
	if !found {
		return rootMark{}, fmt.Sprintf("unknown (data %.40q)", data), false
	}
	mode, floor, hasFloor := strings.Cut(rest, floorMark)
	got, err := ParseTokenMode(mode)
	if err != nil || mode == "" {
		return rootMark{}, fmt.Sprintf("%q", rest), false
	}
	k.mode = got
	if hasFloor {
		n, err := strconv.ParseUint(floor, 10, 64)
		if err != nil || n > MaxTokenFloor {
			return rootMark{}, fmt.Sprintf("%q", rest), false
		}
		k.floor = n
	}
	return k, "", true
}

// claimedModes remembers the roots whose mark this session has claimed
// (checked for mode and ACL) and those it read for reads, until a grant on
// the root is refused for its floor (the floor may have been raised since)
// or ForgetTokenMark. A session keeps no watch on a mark: go-zookeeper
// v1.0.4 races with itself (on its last zxid) when a session with watches
// reconnects, and a watch of every session's whole life would make every
// reconnect one.
type claimedModes struct {
	mu    sync.Mutex
	roots map[string]rootMark
	seen  map[string]rootMark
	// reading has a channel per root whose mark a read is reading now,
	// closed when it is done: the other reads wait for it rather than
	// send a request each (many blocking reads start at once).
	reading map[string]chan struct{}
}

// readTurn returns nil when the caller is to read root's mark (and then
// call readDone), or a channel that closes when another read of it ends.
func (c *claimedModes) readTurn(root string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.reading[root]; ok {
		return ch
	}
	if c.reading == nil {
		c.reading = map[string]chan struct{}{}
	}
	c.reading[root] = make(chan struct{})
	return nil
}

func (c *claimedModes) readDone(root string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.reading[root])
	delete(c.reading, root)
}

func (c *claimedModes) get(root string) (rootMark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.roots[root]
	return m, ok
}

func (c *claimedModes) set(root string, k rootMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roots == nil {
		c.roots = map[string]rootMark{}
	}
	c.roots[root] = k
}

// getSeen is root's mark as claimed or read.
func (c *claimedModes) getSeen(root string) (rootMark, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.roots[root]; ok {
		return k, true
	}
	k, ok := c.seen[root]
	return k, ok
}

func (c *claimedModes) setSeen(root string, k rootMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]rootMark{}
	}
	c.seen[root] = k
}

// ForgetTokenMark drops what the session knows of root's mark: its next
// grant and its next read there read it again. A daemon calls it on its
// other sessions when one of its grants was refused for the root's floor,
// since the floor may be raised next.
func (s *Session) ForgetTokenMark(root string) { s.modes.forget(root) }

func (c *claimedModes) forget(root string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.roots, root)
	delete(c.seen, root)
}

// ClaimTokenMode records mode in root's data if the root records none yet
// (creating the root and its ancestors if missing), with the floor of a
// fresh root (Options.TokenFloor), and otherwise checks it: a root that
// records the other mode is refused with a *TokenModeError. A root with no
// mark on which the session's Floors recorded tokens is refused with a
// *FloorError unless TokenFloor is at least the highest of them (ZooKeeper
// was rebuilt or replaced: its tokens would start again from 1). Acquire
// calls it once per root and session; a daemon calls it at start to refuse
// to run at all.
func (s *Session) ClaimTokenMode(ctx context.Context, root string, mode TokenMode) error {
	_, err := s.claim(ctx, root, mode)
	return err
}

// claim is ClaimTokenMode, returning the root's mark. The root is read,
// and marked where it records no mark, as one piece of work: ctx bounds
// the wait for it, and a claim that its caller gave up on finishes in the
// background (each of its steps is one any claimer may take again).
func (s *Session) claim(ctx context.Context, root string, mode TokenMode) (rootMark, error) {
	if k, ok := s.modes.get(root); ok {
		if k.mode != mode {
			return rootMark{}, &TokenModeError{Root: root, Recorded: k.mode.String(), Wanted: mode}
		}
		return k, nil
	}
	return callCtx(ctx, s, func() (rootMark, error) { return s.claimRoot(root, mode) })
}

// claimRoot reads root's mark, recording mode (with a fresh floor) where
// the root records none and creating the root where it is missing, and
// checks the mode and the root's ACL.
func (s *Session) claimRoot(root string, mode TokenMode) (rootMark, error) {
	for attempt := 0; attempt < 10; attempt++ {
		var (
			data []byte
			st   *zk.Stat
		)
		err := s.call(func() (err error) { data, st, err = s.conn.Get(root); return err })
		if errors.Is(err, zk.ErrNoNode) {
			want, ferr := s.freshMark(root, mode)
			if ferr != nil {
				return rootMark{}, ferr
			}
			err = s.createRoot(root, want.bytes())
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				continue // read what is there now
			}
		}
		if err != nil {
			return rootMark{}, fmt.Errorf("zklock: token mode of %s: %w", root, err)
		}
		if len(data) == 0 {
			// Made before modes were recorded, or by another tool: the
			// first to claim it records its mode, the others then read it.
			want, ferr := s.freshMark(root, mode)
			if ferr != nil {
				return rootMark{}, ferr
			}
			err := s.call(func() error { _, err := s.conn.Set(root, want.bytes(), st.Version); return err })
			if err != nil && !errors.Is(err, zk.ErrBadVersion) {
				return rootMark{}, fmt.Errorf("zklock: record token mode on %s: %w", root, err)
			}
			continue
		}
		k, recorded, ok := parseMark(data)
		if !ok {
			return rootMark{}, &TokenModeError{Root: root, Recorded: recorded, Wanted: mode}
		}
		if k.mode != mode {
			return rootMark{}, &TokenModeError{Root: root, Recorded: k.mode.String(), Wanted: mode}
		}
		if err := s.checkRootACL(root); err != nil {
			return rootMark{}, err
		}
		s.modes.set(root, k)
		return k, nil
	}
	return rootMark{}, fmt.Errorf("zklock: token mode of %s: the root keeps changing", root)
}

// freshMark is the mark a root without one gets: the session's fresh floor,
// refused below what the session's Floors recorded as issued on it.
func (s *Session) freshMark(root string, mode TokenMode) (rootMark, error) {
	k := rootMark{mode: mode, floor: s.freshFloor}
	if is := s.floors.Issued(root); is.Token > k.floor {
		s.obs.TokenRegression(root)
		return rootMark{}, &FloorError{Root: root, Unmarked: true, Floor: k.floor, Issued: is, File: s.floors.Path()}
	}
	return k, nil
}

// markOf is root's mark for a read: as claimed, or read now (a root that
// does not exist, or records no mark, reads as floor 0).
func (s *Session) markOf(ctx context.Context, root string, mode TokenMode) (rootMark, error) {
	for {
		if k, ok := s.modes.getSeen(root); ok {
			return k, nil
		}
		wait := s.modes.readTurn(root)
		if wait == nil {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return rootMark{}, ctx.Err()
		}
	}
	defer s.modes.readDone(root)
	var data []byte
	n, err := read(ctx, s, s.getOp(root))
	data = n.data
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return rootMark{}, err
	}
	// A root that does not exist or records nothing reads as floor 0
	// (kept too: a daemon marks its roots before it reads them).
	k, recorded, ok := parseMark(data)
	if !ok {
		if len(data) != 0 {
			return rootMark{}, &TokenModeError{Root: root, Recorded: recorded, Wanted: mode}
		}
		k = rootMark{mode: mode}
	}
	s.modes.setSeen(root, k)
	return k, nil
}

// TokenFloor reads root's mark: its token mode and floor (ok false when
// the root records none).
func (s *Session) TokenFloor(ctx context.Context, root string) (mode TokenMode, floor uint64, ok bool, err error) {
	var data []byte
	var n got
	n, err = callCtx(ctx, s, s.getOp(root))
	data = n.data
	if errors.Is(err, zk.ErrNoNode) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("zklock: read the mark of %s: %w", root, err)
	}
	if len(data) == 0 {
		return 0, 0, false, nil
	}
	k, recorded, ok := parseMark(data)
	if !ok {
		return 0, 0, false, &TokenModeError{Root: root, Recorded: recorded, Wanted: mode}
	}
	return k.mode, k.floor, true, nil
}

// ErrFloorLowered: a floor below the one a root records was asked for.
var ErrFloorLowered = errors.New("zklock: a token floor is never lowered")

// RaiseTokenFloor raises root's floor to floor (the root is created with
// mode if it records no mark; a recorded mode is kept). It never lowers:
// asked for a floor below the recorded one it changes nothing and returns
// an error matching ErrFloorLowered. It returns the floor recorded before.
func (s *Session) RaiseTokenFloor(ctx context.Context, root string, mode TokenMode, floor uint64) (uint64, error) {
	if floor > MaxTokenFloor {
		return 0, fmt.Errorf("zklock: token floor %d is above the highest allowed, %d", floor, uint64(MaxTokenFloor))
	}
	for attempt := 0; attempt < 10; attempt++ {
		n, err := callCtx(ctx, s, s.getOp(root))
		data, st := n.data, n.stat
		if errors.Is(err, zk.ErrNoNode) {
			err = s.do(ctx, func() error { return s.createRoot(root, rootMark{mode: mode, floor: floor}.bytes()) })
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("zklock: create %s: %w", root, err)
			}
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("zklock: read the mark of %s: %w", root, err)
		}
		k := rootMark{mode: mode}
		if len(data) != 0 {
			var recorded string
			var ok bool
			if k, recorded, ok = parseMark(data); !ok {
				return 0, &TokenModeError{Root: root, Recorded: recorded, Wanted: mode}
			}
		}
		old := k.floor
		if floor < old {
			return old, fmt.Errorf("%w: %s records floor %d, above %d", ErrFloorLowered, root, old, floor)
		}
		if floor == old && len(data) != 0 {
			return old, nil
		}
		k.floor = floor
		err = s.do(ctx, func() error { _, err := s.conn.Set(root, k.bytes(), st.Version); return err })
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("zklock: raise the floor of %s: %w", root, err)
		}
		s.modes.forget(root)
		return old, nil
	}
	return 0, fmt.Errorf("zklock: floor of %s: the root keeps changing", root)
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
func (s *Session) checkRootACL(root string) error {
	if !s.creatorACL() && !s.anonymous {
		return nil
	}
	var acl []zk.ACL
	err := s.call(func() (err error) { acl, _, err = s.conn.GetACL(root); return err })
	if err != nil {
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
// itself with data, one request after the other (its caller bounds the wait
// for them).
func (s *Session) createRoot(root string, data []byte) error {
	parts := strings.Split(strings.Trim(root, "/"), "/")
	p := ""
	for i, part := range parts {
		p += "/" + part
		node, d := p, []byte(nil)
		if i == len(parts)-1 {
			d = data
		}
		err := s.call(func() error { _, err := s.conn.Create(node, d, 0, s.acl); return err })
		if err != nil && (i == len(parts)-1 || !errors.Is(err, zk.ErrNodeExists)) {
			return err
		}
	}
	return nil
}

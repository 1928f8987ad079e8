package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Lock-delay. A holder that asked for a delay D records, before its grant
// is declared, a marker naming its contender: "held <node> <D in ms>". A
// clean release is one multi that deletes the contender and rewrites the
// marker to "released <node>", so that a daemon dying halfway leaves either
// both or neither. Every contender that reaches the head of the queue reads
// the marker before it is granted; a marker still saying "held" names a
// contender that is gone (nothing ahead of us is left), so its end was
// unclean (lease expired, session lost, node deleted by someone else). The
// first to see that rewrites it, conditionally, to "lost <node> <D>": the
// mtime of that write is ZooKeeper's time of the first observation, no
// earlier than the loss, and nobody is granted until D has passed since it.
//
// A contender compares that mtime with its own node's ctime, both stamped
// by ZooKeeper, and waits on its local clock from the moment its create was
// answered: ZooKeeper's clock then read at least the ctime, so the wait
// never ends before ZooKeeper's clock reaches mtime + D (clock rates are
// assumed equal; across a leader change, the two leaders' clocks must
// agree to within the error one accepts on D).
//
// The markers live outside the lock node (which is a container that
// ZooKeeper may remove as soon as it is empty, and whose children other
// recipes read): at <root>.delay/<name>, persistent.

// MaxLockDelay bounds WithLockDelay.
const MaxLockDelay = time.Minute

// ErrLockDelay: TryAcquire found the lock free but within the lock-delay of
// an unclean loss (it wraps ErrHeld).
var ErrLockDelay = fmt.Errorf("%w: lock-delay after an unclean loss", ErrHeld)

// delayPath is the marker node of the lock.
func (m *Mutex) delayPath() string {
	if m.root == "/" {
		return "/.delay/" + m.name
	}
	return m.root + ".delay/" + m.name
}

// delayMarker is a parsed marker.
type delayMarker struct {
	state string // "held", "lost", "released"
	node  string
	delay time.Duration
}

func parseDelayMarker(data []byte) (delayMarker, bool) {
	f := strings.Fields(string(data))
	switch {
	case len(f) == 2 && f[0] == "released":
		return delayMarker{state: f[0], node: f[1]}, true
	case len(f) == 3 && (f[0] == "held" || f[0] == "lost"):
		ms, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || ms < 0 {
			return delayMarker{}, false
		}
		// No holder may ask for more; a larger figure is not ours, and
		// would overflow a Duration.
		ms = min(ms, MaxLockDelay.Milliseconds())
		return delayMarker{state: f[0], node: f[1], delay: time.Duration(ms) * time.Millisecond}, true
	}
	return delayMarker{}, false
}

func (d delayMarker) bytes() []byte {
	if d.state == "released" {
		return []byte("released " + d.node)
	}
	return []byte(fmt.Sprintf("%s %s %d", d.state, d.node, d.delay.Milliseconds()))
}

// ownNode is our contender while it waits at the head of the queue: its
// path, its stat and the local time its create was answered.
type ownNode struct {
	path    string
	stat    *zk.Stat
	created time.Time
}

// delayUntil says until when (local clock) a lock-delay keeps the head of
// the queue, own, from being granted; zero when none does. read, when not
// nil, is the marker as read after the children that showed own at the
// head; otherwise it reads the marker (its caller bounds the wait).
func (m *Mutex) delayUntil(own ownNode, read *readResult) (time.Time, error) {
	s := m.s
	p := m.delayPath()
	for attempt := 0; attempt < 10; attempt++ {
		var (
			data []byte
			st   *zk.Stat
			err  error
		)
		if read != nil {
			data, st, err = read.data, read.stat, read.err
			read = nil
		} else {
			err = s.call(func() (err error) { data, st, err = s.conn.Get(p); return err })
		}
		if errors.Is(err, zk.ErrNoNode) {
			return time.Time{}, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		mk, ok := parseDelayMarker(data)
		if !ok || mk.state == "released" || mk.delay == 0 || mk.node == path.Base(own.path) {
			return time.Time{}, nil
		}
		if mk.state == "held" {
			// Its node is gone: we are at the head of the queue, and the
			// children were read before this marker. Record when that was
			// first seen; a conditional write, since another contender that
			// was at the head before us may have done it already.
			mk.state = "lost"
			data, version := mk.bytes(), st.Version
			err := s.call(func() (err error) { st, err = s.conn.Set(p, data, version); return err })
			if errors.Is(err, zk.ErrBadVersion) {
				continue
			}
			if err != nil {
				return time.Time{}, err
			}
			s.log.Info("unclean end of the previous holder: lock-delay", "lock", m.name, "holder", mk.node, "delay", mk.delay)
		}
		zkWait := time.Duration(st.Mtime-own.stat.Ctime)*time.Millisecond + mk.delay
		if zkWait <= 0 {
			return time.Time{}, nil
		}
		return own.created.Add(zkWait), nil
	}
	return time.Time{}, fmt.Errorf("zklock: lock-delay marker %s keeps changing", p)
}

// markHeld records, before the grant of own is declared, that own holds the
// lock with this Mutex's delay: a multi of check(own) + write(marker), so
// that a contender already gone cannot claim it. The marker's directory is
// created the first time; ctx bounds the wait for it all.
func (m *Mutex) markHeld(ctx context.Context, own string) error {
	if m.delay <= 0 {
		return nil
	}
	write := func() (struct{}, error) { return struct{}{}, m.writeHeld(own) }
	_, err := callCtx(ctx, m.s, write)
	return err
}

// writeHeld writes markHeld's marker, creating what is missing of its path.
func (m *Mutex) writeHeld(own string) error {
	s := m.s
	p := m.delayPath()
	data := delayMarker{state: "held", node: path.Base(own), delay: m.delay}.bytes()
	for attempt := 0; attempt < 10; attempt++ {
		err := s.call(func() error {
			_, err := s.conn.Multi(
				&zk.CheckVersionRequest{Path: own, Version: -1},
				&zk.SetDataRequest{Path: p, Data: data, Version: -1},
			)
			return err
		})
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		var ok bool
		err = s.call(func() (err error) { ok, _, err = s.conn.Exists(own); return err })
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("%w: contender %s vanished before the lock-delay marker was written", ErrLockLost, own)
		}
		if err := s.createPersistent(p, data); err != nil {
			return err
		}
	}
	return fmt.Errorf("zklock: lock-delay marker %s could not be written", p)
}

// createPersistent creates p and its missing ancestors as persistent nodes,
// p itself with data.
func (s *Session) createPersistent(p string, data []byte) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	node := ""
	for i, part := range parts {
		node += "/" + part
		var d []byte
		if i == len(parts)-1 {
			d = data
		}
		n := node
		err := s.call(func() error {
			_, err := s.conn.Create(n, d, 0, s.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", n, err)
		}
	}
	return nil
}

// Every contender at the head of a queue must read the lock's lock-delay
// marker, since any holder, on any daemon, may have asked for a delay. Most
// roots never see one: while a root's marker directory (<root>.delay) does
// not exist, no marker under it can, and the read is skipped. The session
// knows the directory is absent from an exists watch that has not fired;
// ZooKeeper delivers a watch's event before any answer that shows a later
// state, so a children read that shows our contender at the head, answered
// while the watch is still quiet on the same connection, proves that no
// holder before us wrote a marker (a holder writes it before its grant, and
// its contender was gone by that read). A reconnect voids what the session
// knew (the watch is set again by go-zookeeper, but its event could come
// after other answers).

// delayDirs is what the session knows of the roots' marker directories.
type delayDirs struct {
	mu   sync.Mutex
	dirs map[string]*delayDir
}

type delayDir struct {
	absent <-chan zk.Event // exists watch on the directory; nil unless known absent
	conn   uint64          // the connection the watch was set on
	arming bool            // an exists watch is being set
	// present: the directory was seen; markers are read from then on
	// (it is persistent, and seldom removed).
	present bool
}

// absence is a proof, to be confirmed after a read, that the directory did
// not exist.
type absence struct {
	watch <-chan zk.Event
	conn  uint64
}

// confirm reports whether the directory was still absent as of every
// answer received so far on the watch's connection.
func (a *absence) confirm(s *Session) bool {
	return a != nil && !fired(a.watch) && s.conns.Load() == a.conn && s.Connected()
}

// markerDir is the directory of the lock's lock-delay marker.
func (m *Mutex) markerDir() string { return markerDirOf(m.root) }

// markerDirOf is the directory of the lock-delay markers of root's locks.
func markerDirOf(root string) string {
	if root == "/" {
		return "/.delay"
	}
	return root + ".delay"
}

// markerAbsence returns a proof that the lock's marker directory is absent,
// or nil when the session does not know that (then the marker is read). It
// sends nothing on the caller's path: the first call on a root, and the
// first after a reconnect, sets an exists watch in the background (one
// request) for the acquires after it; once the directory has been seen, it
// is not looked for again.
func (m *Mutex) markerAbsence() *absence {
	s := m.s
	if s.without.markerProof {
		return nil
	}
	dir := m.markerDir()
	s.delayDirs.mu.Lock()
	defer s.delayDirs.mu.Unlock()
	if s.delayDirs.dirs == nil {
		s.delayDirs.dirs = map[string]*delayDir{}
	}
	d := s.delayDirs.dirs[dir]
	if d == nil {
		if len(s.delayDirs.dirs) >= maxGrantedMemory {
			clear(s.delayDirs.dirs) // a root per lock would be odd; stay bounded
		}
		d = &delayDir{}
		s.delayDirs.dirs[dir] = d
	}
	if d.absent != nil && !fired(d.absent) && d.conn == s.conns.Load() {
		return &absence{watch: d.absent, conn: d.conn}
	}
	d.absent = nil
	if !d.arming && !d.present {
		d.arming = s.spawn(func() { s.armMarkerDir(dir, d) })
	}
	return nil
}

// armMarkerDir sets an exists watch on the marker directory dir and
// records in d what it found.
func (s *Session) armMarkerDir(dir string, d *delayDir) {
	conn := s.conns.Load()
	var (
		exists bool
		ch     <-chan zk.Event
	)
	err := s.call(func() (err error) { exists, _, ch, err = s.conn.ExistsW(dir); return err })
	s.delayDirs.mu.Lock()
	defer s.delayDirs.mu.Unlock()
	d.arming = false
	switch {
	case err != nil: // unknown: markers are read
	case exists:
		d.present = true // markers may exist: read them from now on
	default:
		if a := (&absence{watch: ch, conn: conn}); a.confirm(s) {
			d.absent, d.conn = ch, conn
		}
	}
}

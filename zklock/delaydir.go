package zklock

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
)

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
// or nil when the session does not know that (then the marker is read). The
// first call on a root, and the first after a reconnect, sets an exists
// watch (one request); once the directory has been seen, it is not looked
// for again.
func (m *Mutex) markerAbsence(ctx context.Context) *absence {
	s := m.s
	dir := m.markerDir()
	s.delayDirs.mu.Lock()
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
		a := &absence{watch: d.absent, conn: d.conn}
		s.delayDirs.mu.Unlock()
		return a
	}
	d.absent = nil
	if d.arming || d.present {
		s.delayDirs.mu.Unlock()
		return nil
	}
	d.arming = true
	s.delayDirs.mu.Unlock()

	conn := s.conns.Load()
	var (
		exists bool
		ch     <-chan zk.Event
	)
	err := s.read(ctx, func() (err error) { exists, _, ch, err = s.conn.ExistsW(dir); return err })

	s.delayDirs.mu.Lock()
	defer s.delayDirs.mu.Unlock()
	d.arming = false
	switch {
	case err != nil:
		// Unknown: markers are read. A read that timed out may still be
		// running and write exists and ch: neither is looked at.
		return nil
	case exists:
		d.present = true // markers may exist: read them from now on
		return nil
	}
	d.absent, d.conn = ch, conn
	a := &absence{watch: ch, conn: conn}
	if !a.confirm(s) {
		d.absent = nil
		return nil
	}
	return a
}

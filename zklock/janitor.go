package zklock

import (
	"errors"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// janitor holds the contenders a session still has to delete: a grant
// declared lost while ZooKeeper was silent, a waiter whose delete failed, a
// create abandoned mid-flight. The session's run loop sweeps them as soon as
// ZooKeeper can be reached, so that no orphan blocks a lock.
type janitor struct {
	mu      sync.Mutex
	pending map[orphan]struct{}
	wake    chan struct{} // pokes the session's run loop
}

// orphan names a contender to delete: by its GUID under its lock node, since
// a create whose reply was lost has no known path.
type orphan struct{ parent, guid string }

func (j *janitor) init() {
	j.pending = map[orphan]struct{}{}
	j.wake = make(chan struct{}, 1)
}

func (j *janitor) add(o orphan) {
	j.mu.Lock()
	j.pending[o] = struct{}{}
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

func (j *janitor) list() []orphan {
	j.mu.Lock()
	defer j.mu.Unlock()
	todo := make([]orphan, 0, len(j.pending))
	for o := range j.pending {
		todo = append(todo, o)
	}
	return todo
}

func (j *janitor) done(o orphan) {
	j.mu.Lock()
	delete(j.pending, o)
	j.mu.Unlock()
}

func (j *janitor) len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

// deleteLater hands a contender to the janitor, which deletes it as soon as
// ZooKeeper can be reached.
func (s *Session) deleteLater(parent, guid string) { s.janitor.add(orphan{parent, guid}) }

// pendingCleanups counts contenders still to delete.
func (s *Session) pendingCleanups() int { return s.janitor.len() }

// sweep deletes the contenders the janitor holds; those it cannot delete
// now stay for the next sweep.
func (s *Session) sweep() {
	for _, o := range s.janitor.list() {
		if err := s.deleteGUID(o.parent, o.guid); err == nil {
			s.janitor.done(o)
		}
	}
}

// deleteGUID deletes the child of parent whose protected name carries guid.
func (s *Session) deleteGUID(parent, guid string) error {
	var children []string
	err := s.call(func() (err error) {
		// Sync first: a create that committed on another server must be
		// seen, or its node would be dropped from the cleanup set unseen.
		if _, err := s.conn.Sync(parent); err != nil {
			return err
		}
		children, _, err = s.conn.Children(parent)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		// A protected name, of a lock's contender or a semaphore's lease.
		if strings.HasPrefix(ch, protectedPrefix+guid+"-") {
			err := s.call(func() error { return s.conn.Delete(parent+"/"+ch, -1) })
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			s.log.Debug("deleted contender", "path", parent+"/"+ch)
		}
	}
	return nil
}

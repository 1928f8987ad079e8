package sequencer

// What the external tests (package sequencer_test, which drive the daemon
// through sequencer/httpapi) read and set inside a Service.

import (
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
)

// Config is the configuration s runs with, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// Metrics is s's collectors.
func (s *Service) Metrics() *metrics.Metrics { return s.m }

// SetWatchLinger sets how long a watch outlives its last reader.
func (s *Service) SetWatchLinger(d time.Duration) {
	s.watches.mu.Lock()
	s.watches.linger = d
	s.watches.mu.Unlock()
}

// SetWatchMax sets how many blocking reads may wait at once.
func (s *Service) SetWatchMax(n int) {
	s.watches.mu.Lock()
	s.watches.max = n
	s.watches.mu.Unlock()
}

// WatchWaiting is how many blocking reads wait.
func (s *Service) WatchWaiting() int { return s.watches.waiting() }

// WatchWatching is how many names are watched.
func (s *Service) WatchWatching() int { return s.watches.watching() }

// WatchSubscribers is how many readers are subscribed to the watch of
// name of kind.
func (s *Service) WatchSubscribers(kind fence.Kind, name string) int {
	h := s.watches
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.names[watchKey{kind: kind, name: name}]; w != nil {
		return w.readers
	}
	return 0
}

// WatchHasState reports whether name of kind is watched and its state
// read.
func (s *Service) WatchHasState(kind fence.Kind, name string) bool {
	h := s.watches
	h.mu.Lock()
	w := h.names[watchKey{kind: kind, name: name}]
	h.mu.Unlock()
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.have
}

// LeasePath is the contender node of s's lease with token on the lock
// name, "" when s holds none.
func (s *Service) LeasePath(name string, token uint64) string {
	if l := s.leases.find(api.Locks, name, token, "", true); l != nil {
		return l.grant.Path
	}
	return ""
}

// Noun names a kind in messages.
var Noun = noun

const (
	RecycleMin    = recycleMin
	RenewParallel = renewParallel
)

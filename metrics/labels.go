package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelIdle is how long a lock name must go without any event before its
// label may be given to a new name once the label set is full.
const LabelIdle = 10 * time.Minute

// labelSet bounds the distinct values of the lock label and lets them follow
// the locks in use: when it is full, a new name takes the place of the name
// idle the longest, if that one has been idle for LabelIdle (its series are
// deleted); otherwise the new name is counted under OtherLock. So a real
// lock that appears late gets its own series once older ones go quiet, and a
// client inventing names by the thousand cannot push out the locks in use.
type labelSet struct {
	key   string // the label's name: "lock" or "election"
	max   int    // < 0: every name is OtherLock
	idle  time.Duration
	now   func() time.Time
	vecs  []labelled // the vectors with the label
	mu    sync.RWMutex
	last  map[string]*atomic.Int64 // name -> unix nanos of its last event
	later int64                    // no name can be evicted before this
}

// labelled is a vector with the label: a counter or a histogram vector.
type labelled interface {
	DeletePartialMatch(prometheus.Labels) int
}

func newLabelSet(key string, max int, vecs ...labelled) *labelSet {
	return &labelSet{key: key, max: max, idle: LabelIdle, now: time.Now, vecs: vecs, last: map[string]*atomic.Int64{}}
}

// with calls f with name's label value. f runs while name's label cannot be
// taken away, so that an increment never re-creates an evicted series.
func (c *labelSet) with(name string, f func(label string)) {
	now := c.now().UnixNano()
	c.mu.RLock()
	if t, ok := c.last[name]; ok {
		t.Store(now)
		f(name)
		c.mu.RUnlock()
		return
	}
	if c.max < 0 || len(c.last) >= c.max && now < c.later {
		// Full, and no name can be evicted yet: no need for the write
		// lock (many new names at once would queue on it).
		f(OtherLock)
		c.mu.RUnlock()
		return
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[name]; ok {
		t.Store(now)
		f(name)
		return
	}
	if c.max < 0 || len(c.last) >= c.max && !c.evictLocked(now) {
		f(OtherLock)
		return
	}
	t := new(atomic.Int64)
	t.Store(now)
	c.last[name] = t
	f(name)
}

// evictLocked removes the name idle the longest if it has been idle for
// c.idle, deleting its series, and reports whether it did.
func (c *labelSet) evictLocked(now int64) bool {
	if now < c.later {
		return false
	}
	oldest, at := "", int64(0)
	for name, t := range c.last {
		if v := t.Load(); oldest == "" || v < at {
			oldest, at = name, v
		}
	}
	if oldest == "" {
		return false
	}
	if now-at < int64(c.idle) {
		c.later = at + int64(c.idle)
		return false
	}
	delete(c.last, oldest)
	for _, v := range c.vecs {
		v.DeletePartialMatch(prometheus.Labels{c.key: oldest})
	}
	return true
}

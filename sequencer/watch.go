package sequencer

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// Blocking reads: one watch per lock, semaphore or election name per daemon,
// however many readers wait on it. The watch (zklock's Observe) keeps the
// name's state current with ZooKeeper watches, on the hub's own ZooKeeper
// session (see watchsession.go); readers wait on a channel that closes when
// the state changes. A name nobody waits on for watchLinger is no longer
// watched, so a reader that went away costs nothing afterwards.
//
// What blocking reads may cost is bounded: at most max readers wait at once
// (one more is answered 503 at once), and at most max names are watched
// while some are unread (a new name takes the place of the one nobody has
// read the longest).

// watchLinger is how long a name stays watched after its last reader left:
// a long-polling client asks again at once.
const watchLinger = 5 * time.Second

// DefaultMaxBlockingReads is how many blocking reads may wait at once when
// Config.MaxBlockingReads is 0.
const DefaultMaxBlockingReads = 1024

// watchKey names a watched state: a lock's (both modes share it), a
// semaphore's or an election's.
type watchKey struct {
	kind fence.Kind // KindLock, KindSemaphore or KindElection
	name string
}

// watched is one watched name.
type watched struct {
	key watchKey

	// Under hub.mu.
	readers int // subscriptions: readers, and the daemon's own campaign
	cancel  context.CancelFunc
	idle    *time.Timer     // ends the watch once nobody has read it for the linger
	idleAt  *list.Element   // in hub.idle while nobody reads it
	on      *zklock.Session // the session its watches were set on last

	mu      sync.Mutex
	have    bool // a state was read
	holder  zklock.Holder
	leader  zklock.Leader
	sem     zklock.SemaphoreState
	index   uint64        // rises at every change this daemon sees
	changed chan struct{} // closed and replaced at every change
}

// hub is the daemon's watches for blocking reads, on a session of its
// own (see watchsession.go).
type hub struct {
	cfg     *Config
	guard   *zklock.Guard
	log     *slog.Logger
	recipes recipes
	linger  time.Duration
	max     int // readers waiting at once, and names watched

	mu       sync.Mutex
	names    map[watchKey]*watched
	idle     list.List // the names nobody reads, the longest unread first
	readers  int       // readers entered
	closed   bool
	ws       watchSession
	stopKeep context.CancelFunc // nil until the keeper runs
	wg       sync.WaitGroup
}

func newHub(cfg *Config, guard *zklock.Guard, log *slog.Logger, r recipes) *hub {
	max := cfg.MaxBlockingReads
	if max <= 0 {
		max = DefaultMaxBlockingReads
	}
	h := &hub{cfg: cfg, guard: guard, log: log, recipes: r, linger: watchLinger, max: max, names: map[watchKey]*watched{}}
	h.ws.init()
	return h
}

// enter takes one of the max places of waiting readers, and leave gives
// it back; past max, enter refuses with a 503 that says so. A reader
// enters once, whatever the number of names it subscribes to.
func (h *hub) enter() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return unavailable("shutting down", nil)
	case h.readers >= h.max:
		return unavailable(fmt.Sprintf("%d blocking reads are waiting, the most this daemon serves at once: retry later, or read the state without index", h.max), nil)
	}
	h.startLocked()
	h.readers++
	return nil
}

func (h *hub) leave() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readers--
}

// subscribe returns key's watch, starting it if needed; unsubscribe gives
// it back. It returns nil once the hub is closed. At most max names are
// watched while some are unread: the one unread the longest makes room
// for a new one.
func (h *hub) subscribe(key watchKey) *watched {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.startLocked()
	if w := h.names[key]; w != nil {
		w.readers++
		h.busyLocked(w)
		return w
	}
	if len(h.names) >= h.max && h.idle.Len() > 0 {
		h.dropLocked(h.idle.Front().Value.(*watched))
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watched{key: key, readers: 1, cancel: cancel, changed: make(chan struct{})}
	h.names[key] = w
	h.wg.Add(1)
	go h.run(ctx, w)
	return w
}

func (h *hub) unsubscribe(w *watched) {
	if w == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.readers--; w.readers > 0 || h.names[w.key] != w {
		return
	}
	w.idleAt = h.idle.PushBack(w)
	w.idle = time.AfterFunc(h.linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.readers == 0 && h.names[w.key] == w {
			h.dropLocked(w)
		}
	})
}

// busyLocked takes w off the idle list.
func (h *hub) busyLocked(w *watched) {
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	if w.idleAt != nil {
		h.idle.Remove(w.idleAt)
		w.idleAt = nil
	}
}

// dropLocked stops watching w. Its watches stay on ZooKeeper until they
// fire or their session ends: the watch session counts them.
func (h *hub) dropLocked(w *watched) {
	h.busyLocked(w)
	delete(h.names, w.key)
	w.cancel()
	h.ws.leftBehind(w.on, len(h.names))
}

// watching is how many names are watched now.
func (h *hub) watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.names)
}

// waiting is how many blocking reads wait now.
func (h *hub) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readers
}

// close stops every watch and the watch session, and waits for them.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for k, w := range h.names {
		h.busyLocked(w)
		w.cancel()
		delete(h.names, k)
	}
	stop := h.stopKeep
	sess := h.ws.sess
	h.ws.sess = nil
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
	h.wg.Wait()
	if sess != nil {
		sess.Close()
	}
}

// touch wakes key's readers without a change in ZooKeeper: a leadership of
// this daemon began or ended, which changes their answer's self.
func (h *hub) touch(key watchKey) {
	h.mu.Lock()
	w := h.names[key]
	h.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.have {
		w.bumpLocked(0)
	}
}

// run observes w's name on one watch session after another until ctx
// ends.
func (h *hub) run(ctx context.Context, w *watched) {
	defer h.wg.Done()
	for ctx.Err() == nil {
		sess, changed := h.session()
		if sess == nil {
			select { // the keeper is dialling one
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		h.mu.Lock()
		w.on = sess
		h.mu.Unlock()
		h.observe(ctx, sess, w)
		if ctx.Err() == nil && sess.Err() == nil {
			// The name could not be observed on a live session: try again
			// in a moment rather than at once.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (h *hub) observe(ctx context.Context, sess *zklock.Session, w *watched) {
	switch w.key.kind {
	case fence.KindElection:
		e, err := h.recipes.election(sess, w.key.name)
		if err != nil {
			return
		}
		for l := range e.Observe(ctx) {
			w.publishLeader(l, func() { h.cfg.Metrics.LeaderChangeObserved(w.key.name) })
		}
	case fence.KindSemaphore:
		sem, err := h.recipes.semaphore(sess, w.key.name)
		if err != nil {
			return
		}
		for st := range sem.Observe(ctx) {
			w.publishSemaphore(st)
		}
	default:
		mu, err := h.recipes.mutex(sess, w.key.name)
		if err != nil {
			return
		}
		for hd := range mu.Observe(ctx) {
			w.publishHolder(hd)
		}
	}
}

func (w *watched) publishSemaphore(st zklock.SemaphoreState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.have && w.sem.Holders == st.Holders && w.sem.Limit == st.Limit {
		return
	}
	w.sem = st
	w.bumpLocked(st.Index)
}

func (w *watched) publishLeader(l zklock.Leader, leaderChanged func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.leader
	if w.have && old.Elected == l.Elected && old.Term == l.Term && string(old.Value) == string(l.Value) && old.Candidates == l.Candidates {
		return
	}
	if w.have && (old.Elected != l.Elected || old.Term != l.Term) {
		leaderChanged()
	}
	w.leader = l
	w.bumpLocked(l.Index)
}

func (w *watched) publishHolder(hd zklock.Holder) {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.holder
	if w.have && old.Held == hd.Held && old.Node == hd.Node && old.Token == hd.Token && string(old.Data) == string(hd.Data) && old.Waiters == hd.Waiters {
		return
	}
	w.holder = hd
	w.bumpLocked(hd.Index)
}

// bumpLocked moves the index past its last value (to zx, ZooKeeper's
// index of the state, when that is higher, so that it agrees with a plain
// read and with other daemons watching the same state) and wakes the
// readers. The first state takes zx as it is.
func (w *watched) bumpLocked(zx uint64) {
	if w.have {
		zx = max(zx, w.index+1)
	}
	w.have, w.index = true, zx
	close(w.changed)
	w.changed = make(chan struct{})
}

package sequencer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// Blocking reads: one watch per lock, semaphore or election name per daemon, however
// many readers wait on it. The watch (zklock's Observe) keeps the name's
// state current with ZooKeeper watches; readers wait on a channel that
// closes when the state changes. A name nobody waits on for watchLinger is
// no longer watched, so a reader that went away costs nothing afterwards.

// watchLinger is how long a name stays watched after its last reader left:
// a long-polling client asks again at once.
const watchLinger = 5 * time.Second

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
	readers int
	cancel  context.CancelFunc
	idle    *time.Timer

	mu      sync.Mutex
	have    bool // a state was read
	holder  zklock.Holder
	leader  zklock.Leader
	sem     zklock.SemaphoreState
	index   uint64        // rises at every change this daemon sees
	changed chan struct{} // closed and replaced at every change
}

type hub struct {
	s      *Service
	linger time.Duration

	mu     sync.Mutex
	names  map[watchKey]*watched
	closed bool
	wg     sync.WaitGroup
}

func newHub(s *Service) *hub {
	return &hub{s: s, linger: watchLinger, names: map[watchKey]*watched{}}
}

// subscribe returns key's watch, starting it if needed; unsubscribe gives
// it back. It returns nil once the hub is closed.
func (h *hub) subscribe(key watchKey) *watched {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	if w := h.names[key]; w != nil {
		w.readers++
		if w.idle != nil {
			w.idle.Stop()
			w.idle = nil
		}
		return w
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
	if w.readers--; w.readers > 0 || h.closed {
		return
	}
	w.idle = time.AfterFunc(h.linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.readers == 0 && h.names[w.key] == w {
			delete(h.names, w.key)
			w.cancel()
		}
	})
}

// watching is how many names are watched now.
func (h *hub) watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.names)
}

// close stops every watch and waits for them.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for k, w := range h.names {
		if w.idle != nil {
			w.idle.Stop()
		}
		w.cancel()
		delete(h.names, k)
	}
	h.mu.Unlock()
	h.wg.Wait()
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

// run observes w's name on one session after another until ctx ends.
func (h *hub) run(ctx context.Context, w *watched) {
	defer h.wg.Done()
	for ctx.Err() == nil {
		sess, err := h.s.session()
		if err == nil {
			h.observe(ctx, sess, w)
		}
		select { // the session ended, or there was none: wait for the next
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *hub) observe(ctx context.Context, sess *zklock.Session, w *watched) {
	s := h.s
	switch w.key.kind {
	case fence.KindElection:
		e, err := s.election(sess, w.key.name)
		if err != nil {
			return
		}
		for l := range e.Observe(ctx) {
			w.publishLeader(l, func() { s.m.LeaderChangeObserved(w.key.name) })
		}
	case fence.KindSemaphore:
		sem, err := s.semaphore(sess, w.key.name)
		if err != nil {
			return
		}
		for st := range sem.Observe(ctx) {
			w.publishSemaphore(st)
		}
	default:
		mu, err := s.mutex(sess, w.key.name)
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

// state is one answer of a blocking read: the watched state of its kind.
type state struct {
	holder zklock.Holder
	leader zklock.Leader
	sem    zklock.SemaphoreState
	index  uint64
}

// await waits until key's state has an index other than index, or wait
// passes, or ctx ends, and returns the state then (with its index).
func (s *Service) await(ctx context.Context, key watchKey, index uint64, wait time.Duration) (state, error) {
	w := s.watches.subscribe(key)
	if w == nil {
		return state{}, unavailable("shutting down", nil)
	}
	defer s.watches.unsubscribe(w)
	tc, t := s.clock.NewTimer(wait)
	defer t.Stop()
	for {
		w.mu.Lock()
		have, changed := w.have, w.changed
		st := state{holder: w.holder, leader: w.leader, sem: w.sem, index: w.index}
		w.mu.Unlock()
		if have && st.index != index {
			return st, s.answerable()
		}
		select {
		case <-changed:
		case <-tc:
			if !have {
				return st, unavailable(fmt.Sprintf("the state could not be read within %v", wait), nil)
			}
			return st, s.answerable()
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// answerable says whether a watched state may be given out now: only while
// the session can be trusted, since watches stop arriving without it.
func (s *Service) answerable() error {
	_, err := s.liveSession()
	return err
}

// WaitLock is a blocking read of a lock's state: it answers when the
// state's index differs from index, or once wait has passed.
func (s *Service) WaitLock(ctx context.Context, name string, index uint64, wait time.Duration) (client.LockStatus, error) {
	st, err := s.awaitState(ctx, client.Locks, name, index, wait)
	if err != nil {
		return client.LockStatus{}, err
	}
	out := s.lockStatus(name, st.holder)
	out.Index = st.index
	return out, s.queueLock(ctx, &out)
}

// WaitSemaphore is a blocking read of a semaphore's state, as WaitLock.
func (s *Service) WaitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (client.SemaphoreStatus, error) {
	st, err := s.awaitState(ctx, client.Semaphores, name, index, wait)
	if err != nil {
		return client.SemaphoreStatus{}, err
	}
	out := semaphoreStatus(name, st.sem)
	out.Index = st.index
	return out, s.queueSemaphore(ctx, &out)
}

// WaitElection is a blocking read of an election's state, as WaitLock.
func (s *Service) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (client.ElectionStatus, error) {
	st, err := s.awaitState(ctx, client.Elections, name, index, wait)
	if err != nil {
		return client.ElectionStatus{}, err
	}
	out := s.electionStatus(name, st.leader)
	out.Index = st.index
	return out, s.queueElection(ctx, &out)
}

func (s *Service) awaitState(ctx context.Context, f client.Family, name string, index uint64, wait time.Duration) (state, error) {
	if err := validateName(f, name); err != nil {
		return state{}, err
	}
	if wait <= 0 || wait > client.MaxWait {
		return state{}, badRequest("wait %v is out of range: a blocking read waits more than 0s and at most %v", wait, client.MaxWait)
	}
	return s.await(ctx, watchKey{kind: kindsOf(f)[0], name: name}, index, wait)
}

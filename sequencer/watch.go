package sequencer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seqd/seqd/zklock"
)

// Blocking reads: one watch per lock or election name per daemon, however
// many readers wait on it. The watch (zklock's Observe) keeps the name's
// state current with ZooKeeper watches; readers wait on a channel that
// closes when the state changes. A name nobody waits on for watchLinger is
// no longer watched, so a reader that went away costs nothing afterwards.

// watchLinger is how long a name stays watched after its last reader left:
// a long-polling client asks again at once.
const watchLinger = 5 * time.Second

type watchKey struct {
	election bool
	name     string
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
	if w.key.election {
		e, err := s.election(sess, w.key.name)
		if err != nil {
			return
		}
		for l := range e.Observe(ctx) {
			w.publishLeader(l, func() { s.m.LeaderChangeObserved(w.key.name) })
		}
		return
	}
	mu, err := zklock.NewMutex(sess, w.key.name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode))
	if err != nil {
		return
	}
	for hd := range mu.Observe(ctx) {
		w.publishHolder(hd)
	}
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

// await waits until key's state has an index other than index, or wait
// passes, or ctx ends, and returns the state then (with its index).
func (s *Service) await(ctx context.Context, key watchKey, index uint64, wait time.Duration) (zklock.Holder, zklock.Leader, uint64, error) {
	w := s.watches.subscribe(key)
	if w == nil {
		return zklock.Holder{}, zklock.Leader{}, 0, fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	defer s.watches.unsubscribe(w)
	tc, t := s.clock.NewTimer(wait)
	defer t.Stop()
	for {
		w.mu.Lock()
		have, hd, l, idx, changed := w.have, w.holder, w.leader, w.index, w.changed
		w.mu.Unlock()
		if have && idx != index {
			return hd, l, idx, s.answerable()
		}
		select {
		case <-changed:
		case <-tc:
			if !have {
				return hd, l, idx, fmt.Errorf("%w: the state could not be read within %v", ErrUnavailable, wait)
			}
			return hd, l, idx, s.answerable()
		case <-ctx.Done():
			return hd, l, idx, ctx.Err()
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
func (s *Service) WaitLock(ctx context.Context, name string, index uint64, wait time.Duration) (LockStatus, error) {
	if err := validateBlocking(name, wait); err != nil {
		return LockStatus{}, err
	}
	hd, _, idx, err := s.await(ctx, watchKey{name: name}, index, wait)
	if err != nil {
		return LockStatus{}, err
	}
	st := s.lockStatus(name, hd)
	st.Index = idx
	return st, nil
}

// WaitElection is a blocking read of an election's state, as WaitLock.
func (s *Service) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (ElectionStatus, error) {
	if err := validateBlocking(name, wait); err != nil {
		return ElectionStatus{}, err
	}
	_, l, idx, err := s.await(ctx, watchKey{election: true, name: name}, index, wait)
	if err != nil {
		return ElectionStatus{}, err
	}
	st := s.electionStatus(name, l)
	st.Index = idx
	return st, nil
}

func validateBlocking(name string, wait time.Duration) error {
	if err := validateName(name); err != nil {
		return err
	}
	if wait <= 0 || wait > MaxWait {
		return fmt.Errorf("%w: wait %v is out of range: a blocking read waits more than 0s and at most %v", ErrBadRequest, wait, MaxWait)
	}
	return nil
}

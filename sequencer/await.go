package sequencer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// The Service's blocking reads: a read that answers once the state of a
// lock, semaphore or election differs from the one the reader has seen,
// waiting on the hub's watches (watch.go).

// watchState is one answer of a blocking read: the watched state of its
// kind.
type watchState struct {
	holder zklock.Holder
	leader zklock.Leader
	sem    zklock.SemaphoreState
	index  uint64
}

// await waits until key's state has an index other than index, or wait
// passes, or ctx ends, and returns the state then (with its index). While
// the watch session cannot vouch for the state (ZooKeeper silent for a
// fraction of the session timeout, see hub.vouch) it answers unavailable:
// at once when ZooKeeper is known not to answer, else once it has waited
// that fraction for the session to prove itself.
func (s *Service) await(ctx context.Context, key watchKey, index uint64, wait time.Duration) (watchState, error) {
	h := s.watches
	if err := h.enter(); err != nil {
		return watchState{}, err
	}
	defer h.leave()
	w := h.subscribe(key)
	if w == nil {
		return watchState{}, unavailable("shutting down", nil)
	}
	defer h.unsubscribe(w)
	tc, t := s.clock.NewTimer(wait)
	defer t.Stop()
	start := s.clock.Now()
	var grace <-chan time.Time
	look := func() (have bool, changed <-chan struct{}, st watchState) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.have, w.changed, watchState{holder: w.holder, leader: w.leader, sem: w.sem, index: w.index}
	}
	for {
		hold, trustChanged, distrust := h.vouch(start)
		if distrust != nil && !hold {
			return watchState{}, distrust
		}
		if distrust != nil && grace == nil {
			gc, gt := s.clock.TimerAt(start.Add(h.quantum()))
			defer gt.Stop()
			grace = gc
		}
		have, changed, st := look()
		if distrust == nil && have && st.index != index {
			return st, s.answerable()
		}
		select {
		case <-changed:
		case <-trustChanged:
		case <-grace:
		case <-tc:
			// Judged afresh: the trust or the state may have changed
			// as the wait ended.
			_, _, distrust = h.vouch(start)
			have, _, st = look()
			switch {
			case distrust == nil && have:
				return st, s.answerable()
			case distrust == nil, errors.Is(distrust, errNoWatchSession):
				// The wait ended before the watch had the state (its
				// session still being dialled, or its first read not
				// back): the answer is a plain read, as without index.
				return readSoon(ctx, s, func(ctx context.Context) (watchState, error) { return s.readState(ctx, key) })
			}
			return watchState{}, distrust
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// readSoon makes read, a plain read for a reader whose wait is over, for
// at most the watch session's quantum on the service clock: a ZooKeeper
// that has not answered by then gets the reader a 503, as a watched state
// it cannot vouch for does, rather than the read's own, longer, timeout.
func readSoon[T any](ctx context.Context, s *Service, read func(context.Context) (T, error)) (T, error) {
	q := s.watches.quantum()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tc, t := s.clock.NewTimer(q)
	defer t.Stop()
	go func() {
		select {
		case <-tc:
			cancel()
		case <-rctx.Done():
		}
	}()
	v, err := read(rctx)
	if err != nil && rctx.Err() != nil && ctx.Err() == nil {
		var zero T
		return zero, unavailable(fmt.Sprintf("zookeeper did not answer within %v: the state cannot be vouched for", q.Round(time.Millisecond)), nil)
	}
	return v, err
}

// readState reads key's state from ZooKeeper on the leases' session, as a
// status read without index does.
func (s *Service) readState(ctx context.Context, key watchKey) (watchState, error) {
	switch key.kind {
	case fence.KindElection:
		l, err := s.leader(ctx, key.name)
		return watchState{leader: l, index: l.Index}, err
	case fence.KindSemaphore:
		st, err := s.semaphoreState(ctx, key.name)
		return watchState{sem: st, index: st.Index}, err
	default:
		h, err := s.holder(ctx, key.name)
		return watchState{holder: h, index: h.Index}, err
	}
}

// answerable says whether a watched state may be given out now: only while
// the leases' session can be trusted too, as every answer of the daemon.
func (s *Service) answerable() error {
	_, err := s.liveSession()
	return err
}

// waitLock is a blocking read of a lock's state: it answers when the
// state's index differs from index, or once wait has passed.
func (s *Service) waitLock(ctx context.Context, name string, index uint64, wait time.Duration) (api.LockStatus, error) {
	st, err := s.awaitState(ctx, api.Locks, name, index, wait)
	if err != nil {
		return api.LockStatus{}, err
	}
	out := s.lockStatus(name, st.holder)
	out.Index = st.index
	return out, s.queueLock(ctx, &out)
}

// waitSemaphore is a blocking read of a semaphore's state, as WaitLock.
func (s *Service) waitSemaphore(ctx context.Context, name string, index uint64, wait time.Duration) (api.SemaphoreStatus, error) {
	st, err := s.awaitState(ctx, api.Semaphores, name, index, wait)
	if err != nil {
		return api.SemaphoreStatus{}, err
	}
	out := semaphoreStatus(name, st.sem)
	out.Index = st.index
	return out, s.queueSemaphore(ctx, &out)
}

// waitElection is a blocking read of an election's state, as WaitLock.
func (s *Service) waitElection(ctx context.Context, name string, index uint64, wait time.Duration) (api.ElectionStatus, error) {
	st, err := s.awaitState(ctx, api.Elections, name, index, wait)
	if err != nil {
		return api.ElectionStatus{}, err
	}
	out := s.electionStatus(name, st.leader)
	out.Index = st.index
	return out, s.queueElection(ctx, &out)
}

func (s *Service) awaitState(ctx context.Context, f api.Family, name string, index uint64, wait time.Duration) (watchState, error) {
	if err := validateName(f, name); err != nil {
		return watchState{}, err
	}
	if wait <= 0 || wait > api.MaxWait {
		return watchState{}, badRequest("wait %v is out of range: a blocking read waits more than 0s and at most %v", wait, api.MaxWait)
	}
	return s.await(ctx, watchKey{kind: kindsOf(f)[0], name: name}, index, wait)
}

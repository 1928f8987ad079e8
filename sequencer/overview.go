package sequencer

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/zklock"
)

// The overview: every name of a family that has contenders under the
// daemon's root for it, with its status, as one read (GET
// /v1/{family}?all=1), blocking like a status read when it names an index.
// It serves the status page, which would otherwise need a blocking read
// per name (a browser opens six connections to a host at most).

// overviewRelist is how often a blocking overview looks for names that
// appeared or went: the names' own changes wake it at once.
const overviewRelist = time.Second

// overview reads the status of every name of family f under its root (at
// most client.MaxOverview). blocking makes it wait, up to wait, for a state
// whose index differs from index: a listed name's state changed, or a name
// appeared or went.
func (s *Service) overview(ctx context.Context, f api.Family, blocking bool, index uint64, wait time.Duration) (api.Overview, error) {
	root, shape := s.cfg.Root, zklock.ShapeLock
	switch f {
	case api.Semaphores:
		root, shape = s.cfg.SemaphoreRoot, zklock.ShapeSemaphore
	case api.Elections:
		root = s.cfg.ElectionRoot
	}
	if !blocking {
		sess, err := s.liveSession()
		if err != nil {
			return api.Overview{}, err
		}
		names, more, err := sess.Names(ctx, root, shape, api.MaxOverview)
		if err != nil {
			return api.Overview{}, s.readError(ctx, err)
		}
		return s.overviewOf(ctx, f, names, more, 0)
	}
	// A blocking overview is one blocking read: it takes a reader's place
	// under the cap, and its answers need the watch session's vouching as
	// await's do.
	if err := s.watches.enter(); err != nil {
		return api.Overview{}, err
	}
	defer s.watches.leave()
	return s.awaitOverview(ctx, f, root, shape, index, wait)
}

// awaitOverview is a blocking overview: it answers once the overview's
// index differs from index, or once wait has passed.
func (s *Service) awaitOverview(ctx context.Context, f api.Family, root string, shape zklock.Shape, index uint64, wait time.Duration) (api.Overview, error) {
	start := s.clock.Now()
	deadline := start.Add(wait)
	watching := false // the states of the last listing are watched
	for {
		names, more, err := s.listVouched(ctx, root, shape, start, watching)
		if errors.Is(err, errTrustChanged) {
			continue // vouched for again, or not, at the top
		}
		if err != nil {
			return api.Overview{}, err
		}
		ws := s.subscribeAll(f, names)
		idx, ready, changed := overviewIndex(names, ws)
		// The names come from the leases' session; the watched states
		// need the watch session to vouch for them.
		var distrust error
		if watching = len(ws) > 0; watching {
			hold, tc, d := s.watches.vouch(start)
			if d != nil && !hold {
				s.unsubscribeAll(ws)
				return api.Overview{}, d
			}
			changed, distrust = append(changed, tc), d
		}
		if ready && idx != index && distrust == nil {
			o, err := s.overviewOf(ctx, f, names, more, idx)
			s.unsubscribeAll(ws)
			return o, err
		}
		now := s.clock.Now()
		left := deadline.Sub(now)
		if left <= 0 && distrust != nil && !errors.Is(distrust, errNoWatchSession) {
			s.unsubscribeAll(ws)
			return api.Overview{}, distrust
		}
		if left <= 0 {
			o, err := s.overviewAtDeadline(ctx, f, names, more, idx, ready && distrust == nil)
			s.unsubscribeAll(ws)
			return o, err
		}
		until := now.Add(min(left, overviewRelist))
		if grace := start.Add(s.watches.quantum()); distrust != nil && grace.Before(until) {
			until = grace
		}
		err = waitAny(ctx, s.clock, changed, until)
		s.unsubscribeAll(ws)
		if err != nil {
			return api.Overview{}, err
		}
	}
}

// listVouched lists the names under root. Once states are watched
// (watching), the watch session must vouch for them before and during a
// listing: a listing is cut short when its trust changes (ZooKeeper fell
// silent), errTrustChanged. While the session is distrusted but the
// overview is still in its grace, the listing is cut short at the grace's
// end as well.
func (s *Service) listVouched(ctx context.Context, root string, shape zklock.Shape, start time.Time, watching bool) ([]string, bool, error) {
	var trustChanged <-chan struct{}
	var cut time.Duration
	if watching {
		hold, tc, distrust := s.watches.vouch(start)
		if distrust != nil && !hold {
			return nil, false, distrust
		}
		trustChanged = tc
		if distrust != nil {
			cut = max(start.Add(s.watches.quantum()).Sub(s.clock.Now()), time.Millisecond)
		}
	}
	sess, err := s.liveSession()
	if err != nil {
		return nil, false, err
	}
	names, more, err := s.listNames(ctx, sess, root, shape, trustChanged, cut)
	if err != nil && !errors.Is(err, errTrustChanged) {
		return nil, false, s.readError(ctx, err)
	}
	return names, more, err
}

// subscribeAll subscribes to the states of names of family f.
func (s *Service) subscribeAll(f api.Family, names []string) []*watched {
	ws := make([]*watched, 0, len(names))
	for _, n := range names {
		if w := s.watches.subscribe(watchKey{kind: kindsOf(f)[0], name: n}); w != nil {
			ws = append(ws, w)
		}
	}
	return ws
}

// overviewAtDeadline is the overview of names once the wait has passed.
// The states are read plainly either way; the index is the watches' only
// once they have every state (watched), else the plain one (what the
// watches give once they have read them), and then ZooKeeper has a
// quantum to answer (readSoon).
func (s *Service) overviewAtDeadline(ctx context.Context, f api.Family, names []string, more bool, idx uint64, watched bool) (api.Overview, error) {
	if watched {
		return s.overviewOf(ctx, f, names, more, idx)
	}
	return readSoon(ctx, s, func(ctx context.Context) (api.Overview, error) { return s.overviewOf(ctx, f, names, more, 0) })
}

// errTrustChanged ends a listing whose answer the watch session's trust
// changed under.
var errTrustChanged = errors.New("the watch session's trust changed")

// listNames lists the names under root; a change of the watch session's
// trust (ZooKeeper fell silent, or answered again), or the end of cut when
// it is not 0, cuts it short with errTrustChanged, so that a blocking
// overview need not wait for the read's own timeout.
func (s *Service) listNames(ctx context.Context, sess *zklock.Session, root string, shape zklock.Shape, trustChanged <-chan struct{}, cut time.Duration) ([]string, bool, error) {
	if trustChanged == nil {
		return sess.Names(ctx, root, shape, api.MaxOverview)
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var graceOver <-chan time.Time
	if cut > 0 {
		c, t := s.clock.NewTimer(cut)
		defer t.Stop()
		graceOver = c
	}
	go func() {
		select {
		case <-trustChanged:
			cancel(errTrustChanged)
		case <-graceOver:
			cancel(errTrustChanged)
		case <-lctx.Done():
		}
	}()
	names, more, err := sess.Names(lctx, root, shape, api.MaxOverview)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(lctx), errTrustChanged) {
		return nil, false, errTrustChanged
	}
	return names, more, err
}

func (s *Service) unsubscribeAll(ws []*watched) {
	for _, w := range ws {
		s.watches.unsubscribe(w)
	}
}

// overviewIndex is the overview's index: a hash of the names and of their
// watched states' indexes, so that it differs when any of them changes;
// ready says every state was read (an index of states still unread would
// differ from the next one with nothing changed); changed is the channels
// that close at their next change.
func overviewIndex(names []string, ws []*watched) (idx uint64, ready bool, changed []<-chan struct{}) {
	ready = true
	changed = make([]<-chan struct{}, 0, len(ws)+1)
	idxs := make([]uint64, 0, len(ws))
	for _, w := range ws {
		w.mu.Lock()
		idxs = append(idxs, w.index)
		ready = ready && w.have
		changed = append(changed, w.changed)
		w.mu.Unlock()
	}
	return hashIndex(names, idxs), ready, changed
}

// hashIndex is an overview's index: a hash of its names, then of their
// states' indexes, never 0 (no index). Watched and plain overviews both
// take theirs from it, so that they agree for the same states.
func hashIndex(names []string, idxs []uint64) uint64 {
	h := fnv.New64a()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	for _, i := range idxs {
		h.Write([]byte(strconv.FormatUint(i, 10)))
		h.Write([]byte{0})
	}
	return max(h.Sum64(), 1)
}

// waitAny waits until one of chans closes, the clock reaches until, or
// ctx ends (its error).
func waitAny(ctx context.Context, clock zklock.Clock, chans []<-chan struct{}, until time.Time) error {
	tc, t := clock.TimerAt(until)
	defer t.Stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ch:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	select {
	case <-tc:
	case <-wctx.Done():
	}
	cancel()
	wg.Wait()
	return ctx.Err()
}

// overviewReads is how many status reads an overview runs at once.
const overviewReads = 8

// overviewOf reads the status of every name.
func (s *Service) overviewOf(ctx context.Context, f api.Family, names []string, more bool, index uint64) (api.Overview, error) {
	o := api.Overview{Family: string(f), More: more, Index: index}
	errs := make([]error, len(names))
	switch f {
	case api.Semaphores:
		o.Semaphores = make([]api.SemaphoreStatus, len(names))
	case api.Elections:
		o.Elections = make([]api.ElectionStatus, len(names))
	default:
		o.Locks = make([]api.LockStatus, len(names))
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(overviewReads, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				switch f {
				case api.Semaphores:
					o.Semaphores[i], errs[i] = s.readSemaphore(ctx, names[i])
				case api.Elections:
					o.Elections[i], errs[i] = s.readElection(ctx, names[i])
				default:
					o.Locks[i], errs[i] = s.readLock(ctx, names[i])
				}
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return api.Overview{}, err
		}
	}
	if index == 0 {
		o.Index = plainIndex(o)
	}
	return o, nil
}

// plainIndex is the index of an overview read without blocking: the index
// the watches give for its states as first read.
func plainIndex(o api.Overview) uint64 {
	var names []string
	var idxs []uint64
	for _, st := range o.Locks {
		names, idxs = append(names, st.Name), append(idxs, st.Index)
	}
	for _, st := range o.Semaphores {
		names, idxs = append(names, st.Name), append(idxs, st.Index)
	}
	for _, st := range o.Elections {
		names, idxs = append(names, st.Name), append(idxs, st.Index)
	}
	return hashIndex(names, idxs)
}

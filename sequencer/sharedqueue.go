package sequencer

import (
	"context"
	"sync"
	"time"

	"github.com/seqd/seqd/api"
)

// Readers of one state share one queue read: a change wakes every blocked
// reader of a name at once, and a thousand of them must not cost a
// thousand reads. A read is shared by the readers of the same name and
// state index for queueShare.
const queueShare = time.Second

type queueKey struct {
	f     api.Family
	name  string
	index uint64
}

type queueRead struct {
	done             chan struct{}
	at               time.Time
	holding, waiting []api.Contender
	unread           int
	err              error
}

// queueReads are the queue reads being shared, by name and state index.
type queueReads struct {
	mu sync.Mutex
	m  map[queueKey]*queueRead
}

// share is the answer of read for k, shared with the other readers of k
// for queueShare; read runs bounded by timeout, and is not shared past its
// readers when it fails.
func (qs *queueReads) share(ctx context.Context, k queueKey, timeout time.Duration, read func(context.Context) ([]api.Contender, []api.Contender, int, error)) ([]api.Contender, []api.Contender, int, error) {
	now := time.Now()
	qs.mu.Lock()
	if qs.m == nil {
		qs.m = map[queueKey]*queueRead{}
	}
	r := qs.m[k]
	if r == nil || now.Sub(r.at) > queueShare {
		for key, old := range qs.m { // few entries: the names read this second
			if now.Sub(old.at) > queueShare {
				delete(qs.m, key)
			}
		}
		r = &queueRead{done: make(chan struct{}), at: now}
		qs.m[k] = r
		qs.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		r.holding, r.waiting, r.unread, r.err = read(rctx)
		cancel()
		if r.err != nil {
			qs.mu.Lock()
			if qs.m[k] == r {
				delete(qs.m, k) // not shared past its readers: the next one tries again
			}
			qs.mu.Unlock()
		}
		close(r.done)
	} else {
		qs.mu.Unlock()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
	// The callers fill their own answers: copies, so that none shares
	// another's slices.
	return append([]api.Contender{}, r.holding...), append([]api.Contender{}, r.waiting...), r.unread, r.err
}

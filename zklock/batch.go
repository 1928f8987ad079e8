package zklock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Group commit. While maxInFlight creates (or deletes) of the session are
// in flight, the creates (deletes) that other goroutines ask for queue;
// when one is answered, everything queued goes as one multi: ZooKeeper
// logs and syncs one transaction for all of them. A request goes at once
// while fewer are in flight, as without group commit. A multi answers a
// create with its path only; one read after it gets the stat that the
// batch's nodes share (where a lone create reads its own). The cost: a
// batched create waits for a request in flight, then for that read, before
// its children read. It sends fewer requests per cycle, but ZooKeeper
// already syncs concurrent transactions together, hence off by default
// (docs/design.md has the figures).
// Nodes created by one multi share its zxid, so a batch never holds two
// creates under one parent: two contenders of one lock would get the same
// token. A multi that ZooKeeper refuses (a parent missing, a node already
// gone) fails as a whole: its requests are then sent one by one, each
// meeting its own error. A multi whose answer is lost leaves each create
// to the caller's recovery, which looks for its GUID, and each delete to
// the release's (the janitor).

// maxBatch bounds a multi (ZooKeeper refuses requests above 1 MB).
const maxBatch = 64

// maxInFlight is how many requests (alone or batches) may be in flight
// before the next ones queue for a batch.
var maxInFlight = 4

type batcher struct {
	mu       sync.Mutex
	inFlight int // requests (alone or batches) in flight
	queue    []*queuedOp

	batches atomic.Int64 // multis sent
	batched atomic.Int64 // requests sent in them
}

// queuedOp is one request waiting for a batch, then its result.
type queuedOp struct {
	key  string // at most one request per key in a batch
	req  any    // *zk.CreateRequest (ephemeral-sequential) or *zk.DeleteRequest
	done chan struct{}

	node  string   // a create's node
	stat  *zk.Stat // a create's stat; nil if it could not be read
	err   error
	alone bool // not sent: send it alone
}

// enter returns nil when nothing is in flight: the caller sends its own
// request now and calls leave once it is answered. Otherwise it queues req
// and returns it; done closes when its batch is answered.
func (b *batcher) enter(key string, req any) *queuedOp {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight < maxInFlight {
		b.inFlight++
		return nil
	}
	q := &queuedOp{key: key, req: req, done: make(chan struct{})}
	b.queue = append(b.queue, q)
	return q
}

// leave says the request in flight was answered: the next batch goes, or
// the batcher is idle.
func (b *batcher) leave(s *Session) {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		batch := b.take()
		b.mu.Unlock()
		if s.spawn(func() { b.send(s, batch) }) {
			return // send calls leave when answered
		}
		for _, q := range batch {
			q.err = ErrClosed
			close(q.done)
		}
	}
}

// take removes the next batch from the queue: in queue order, at most one
// request per key, at most maxBatch. Called with mu held.
func (b *batcher) take() []*queuedOp {
	var batch, rest []*queuedOp
	keys := map[string]bool{}
	for _, q := range b.queue {
		if len(batch) < maxBatch && !keys[q.key] {
			keys[q.key] = true
			batch = append(batch, q)
		} else {
			rest = append(rest, q)
		}
	}
	b.queue = rest
	return batch
}

// send sends batch, as one multi when it holds several requests.
func (b *batcher) send(s *Session, batch []*queuedOp) {
	defer b.leave(s)
	defer func() {
		for _, q := range batch {
			close(q.done)
		}
	}()
	if len(batch) == 1 {
		batch[0].alone = true
		return
	}
	ops := make([]any, len(batch))
	for i, q := range batch {
		ops[i] = q.req
	}
	var res []zk.MultiResponse
	err := s.call(func() (err error) { res, err = s.conn.Multi(ops...); return err })
	switch {
	case err == nil && len(res) == len(batch):
	case err == nil:
		// Done, but an answer we cannot read: as after a lost answer.
		for _, q := range batch {
			q.err = fmt.Errorf("%w: a multi of %d requests answered %d results", ErrUnavailable, len(batch), len(res))
		}
		return
	case isServerAnswer(err):
		for _, q := range batch {
			q.alone = true // nothing was done: each alone meets its own error
		}
		return
	default:
		for _, q := range batch {
			q.err = err
		}
		return
	}
	b.batches.Add(1)
	b.batched.Add(int64(len(batch)))
	if _, ok := batch[0].req.(*zk.CreateRequest); !ok {
		return
	}
	// One transaction: one czxid, ctime and owner for every node. Read
	// them once; if that fails, each caller reads its own.
	var (
		ok bool
		st *zk.Stat
	)
	rerr := s.call(func() (err error) { ok, st, err = s.conn.Exists(res[0].String); return err })
	for i, q := range batch {
		q.node = res[i].String
		if rerr == nil && ok {
			cp := *st
			q.stat = &cp
		}
	}
}

// deleteNode deletes p (any version), in a batch of the session's group
// commit when one is in flight. Like callCtx, it stops waiting when ctx
// ends; the delete may still happen.
func (s *Session) deleteNode(ctx context.Context, p string) error {
	if s.groupCommit {
		if q := s.deletes.enter(p, &zk.DeleteRequest{Path: p, Version: -1}); q != nil {
			select {
			case <-q.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !q.alone {
				return q.err
			}
		} else {
			defer s.deletes.leave(s)
		}
	}
	return s.callCtx(ctx, func() error { return s.conn.Delete(p, -1) })
}

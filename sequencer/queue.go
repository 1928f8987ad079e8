package sequencer

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/zklock"
)

// Queues in status reads: who holds and who waits, as far as the contender
// nodes tell, for seqd's own contenders and those of other recipes.

// queueOf reads the contenders of family f's name and the znode they are
// children of (a semaphore's: its leases node).
func (s *Service) queueOf(ctx context.Context, sess *zklock.Session, f api.Family, name string) (zklock.Queue, string, error) {
	var (
		q      zklock.Queue
		parent string
		err    error
	)
	switch f {
	case api.Semaphores:
		sem, serr := s.recipes.semaphore(sess, name)
		if serr != nil {
			return q, "", serr
		}
		parent = sem.LeasesPath()
		q, err = sem.Queue(ctx)
	case api.Elections:
		e, eerr := s.recipes.election(sess, name)
		if eerr != nil {
			return q, "", eerr
		}
		parent = e.Path()
		q, err = e.Queue(ctx)
	default:
		mu, merr := s.recipes.mutex(sess, name)
		if merr != nil {
			return q, "", merr
		}
		parent = mu.Path()
		q, err = mu.Queue(ctx)
	}
	if err != nil {
		return q, "", s.readError(ctx, err)
	}
	return q, parent, nil
}

// readQueue reads the holders and the queue of family f's name.
func (s *Service) readQueue(ctx context.Context, f api.Family, name string) (holding, queue []api.Contender, unread int, err error) {
	sess, err := s.liveSession()
	if err != nil {
		return nil, nil, 0, err
	}
	q, _, err := s.queueOf(ctx, sess, f, name)
	if err != nil {
		return nil, nil, 0, err
	}
	holding, queue = s.contenders(f, name, q)
	return holding, queue, q.Unread, nil
}

// contenders is q in the API's form: the holders and the waiters.
func (s *Service) contenders(f api.Family, name string, q zklock.Queue) (holding, queue []api.Contender) {
	holding, queue = []api.Contender{}, []api.Contender{}
	for i, n := range q.Nodes {
		c := contenderOf(n, f)
		if i < q.Holding {
			c.Token = n.Token
			c.ExpiresAt = s.leases.expiresAt(f, name, c.Token, f == api.Locks || f == api.Semaphores)
			if owner, ok := s.leases.ownerOf(f, name, c.Token, false); ok && f == api.Elections {
				c.Owner, c.Daemon, c.Client = owner, s.cfg.Identity, "seqd"
			}
			holding = append(holding, c)
			continue
		}
		queue = append(queue, c)
	}
	return holding, queue
}

// contenderOf names what made node n and who it is for.
func contenderOf(n zklock.QueuedNode, f api.Family) api.Contender {
	c := api.Contender{Node: n.Node, Since: n.Created.UTC()}
	if f == api.Locks {
		c.Mode = api.ModeExclusive
		if n.Shared {
			c.Mode = api.ModeShared
		}
	}
	var cd contenderData
	seqd := len(n.Data) > 0 && n.Data[0] == '{' && json.Unmarshal(n.Data, &cd) == nil && cd.Owner != ""
	switch {
	case n.Session == 0:
		c.Client = "planted"
	case n.Marker == "__lock__" || n.Marker == "__rlock__":
		c.Client = "kazoo"
	case seqd:
		c.Client = "seqd"
	case n.Marker == "__WRIT__" || n.Marker == "__READ__" || n.Marker == "-lease-" || len(n.Data) > 0:
		c.Client = "curator"
	default:
		c.Client = "zk.Lock"
	}
	if f == api.Elections {
		// A candidate's data is its published value: seqd's look like
		// Curator's LeaderSelector's.
		c.Value = printable(n.Data)
		if c.Client != "kazoo" && c.Client != "planted" {
			c.Client = "unknown"
		}
		return c
	}
	if seqd {
		c.Owner, c.Daemon, c.Command = cd.Owner, cd.Daemon, cd.Command
		return c
	}
	c.Owner = printable(n.Data)
	return c
}

// printable is data as text if it is short printable UTF-8 (kazoo's
// identifier, Curator's address), else "".
func printable(data []byte) string {
	if len(data) == 0 || len(data) > 256 || !utf8.Valid(data) {
		return ""
	}
	s := string(data)
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return ""
	}
	return s
}

// queueLock adds the holders and the queue to a lock's status.
func (s *Service) queueLock(ctx context.Context, st *api.LockStatus) (err error) {
	st.Holding, st.Queue, st.Unread, err = s.sharedQueue(ctx, api.Locks, st.Name, st.Index)
	return err
}

// queueSemaphore adds the holders and the queue to a semaphore's status.
func (s *Service) queueSemaphore(ctx context.Context, st *api.SemaphoreStatus) (err error) {
	st.Holding, st.Queue, st.Unread, err = s.sharedQueue(ctx, api.Semaphores, st.Name, st.Index)
	if err == nil && st.Unread == 0 {
		// The queue was read after the state: its count is the newer (a
		// state read between an acquirer's limit record and its lease
		// node shows none).
		st.Holders = len(st.Holding)
	}
	return err
}

// queueElection adds the leader and the other candidates to an election's
// status.
func (s *Service) queueElection(ctx context.Context, st *api.ElectionStatus) (err error) {
	st.Holding, st.Queue, st.Unread, err = s.sharedQueue(ctx, api.Elections, st.Name, st.Index)
	return err
}

// sharedQueue is readQueue shared by the readers of one state.
func (s *Service) sharedQueue(ctx context.Context, f api.Family, name string, index uint64) ([]api.Contender, []api.Contender, int, error) {
	return s.queues.share(ctx, queueKey{f, name, index}, s.cfg.SessionTimeout, func(ctx context.Context) ([]api.Contender, []api.Contender, int, error) {
		return s.readQueue(ctx, f, name)
	})
}

package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/zklock"
)

// cycler is one client of a case: cycle takes its lock and lets it go.
type cycler interface {
	cycle(ctx context.Context) error
}

// releaseTimeout bounds a release, which runs on even when the case's
// context has ended so that no lock is left held.
const releaseTimeout = 10 * time.Second

// lockName is client w's lock name in group g.
func lockName(g Group, w int) string {
	if g.Locks == LocksHot {
		return "hot"
	}
	return "own-" + strconv.Itoa(w)
}

// setup connects g.Clients clients of kind; closeAll disconnects them (it
// may be called more than once, and while they run).
func (r *runner) setup(ctx context.Context, kind string, g Group) (cs []cycler, closeAll func(), err error) {
	cs = make([]cycler, g.Clients)
	closers := make([]func(), g.Clients)
	var (
		once   sync.Once
		shared *zklock.Session // the session case's one session
	)
	closeAll = func() {
		once.Do(func() {
			for _, c := range closers {
				if c != nil {
					c()
				}
			}
			if shared != nil {
				shared.Close()
			}
		})
	}
	if kind == KindSession {
		if shared, err = r.dialZklock(ctx); err != nil {
			return nil, closeAll, err
		}
	}
	if kind == KindRaw {
		// The parents exist before the clients start, as a lock node
		// would: the floor is the contender's create and delete.
		for w := range g.Clients {
			if err := mkdirs(r.admin, r.root+"/raw/"+lockName(g, w), r.acl); err != nil {
				return nil, closeAll, err
			}
		}
	}
	// The clients connect side by side: sixteen sessions one after the
	// other would take as long as a short case.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for w := range g.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, closer, err := r.client(ctx, kind, g, w, shared)
			mu.Lock()
			defer mu.Unlock()
			cs[w], closers[w] = c, closer
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	if first != nil {
		closeAll()
		return nil, closeAll, first
	}
	return cs, closeAll, nil
}

// dialZklock opens a zklock session as the bench's clients are configured.
func (r *runner) dialZklock(ctx context.Context) (*zklock.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer cancel()
	s, err := zklock.Dial(dctx, r.cfg.Servers, zklock.Options{
		SessionTimeout: r.cfg.SessionTimeout,
		Auth:           r.cfg.Auth,
		ACL:            r.cfg.ACL,
		TLS:            r.cfg.TLS,
	})
	if err != nil {
		return nil, unavailable{err}
	}
	return s, nil
}

// client connects client w of kind; shared is the session case's session.
func (r *runner) client(ctx context.Context, kind string, g Group, w int, shared *zklock.Session) (cycler, func(), error) {
	name := lockName(g, w)
	switch kind {
	case KindRaw:
		conn, err := r.connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		return &rawCycler{conn: conn, prefix: r.root + "/raw/" + name + "/c-", acl: r.acl}, conn.Close, nil
	case KindGoZK:
		conn, err := r.connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		return gozkCycler{zk.NewLock(conn, r.root+"/gozk/"+name, r.acl)}, conn.Close, nil
	case KindZklock:
		s, err := r.dialZklock(ctx)
		if err != nil {
			return nil, nil, err
		}
		m, err := zklock.NewMutex(s, name, zklock.WithRoot(r.root+"/zklock"))
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return zklockCycler{m}, func() { s.Close() }, nil
	case KindSession:
		// The daemon's ZooKeeper work without its HTTP: one session for
		// all clients, so that a hot lock is handed over inside it.
		m, err := zklock.NewMutex(shared, name, zklock.WithRoot(r.root+"/session"))
		if err != nil {
			return nil, nil, err
		}
		return zklockCycler{m}, func() {}, nil
	case KindHTTP:
		wait := time.Duration(0) // own locks are free: try once
		if g.Locks == LocksHot {
			wait = api.MaxWait
		}
		return &httpCycler{c: r.daemon, name: r.daemonNames + name, owner: "seqd-bench-" + strconv.Itoa(w), wait: wait}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown case %q", kind)
}

// rawCycler creates an ephemeral-sequential node and deletes it: no
// exclusion, no token, the least a ZooKeeper lock costs.
type rawCycler struct {
	conn   *zk.Conn
	prefix string
	acl    []zk.ACL
}

func (c *rawCycler) cycle(context.Context) error {
	p, err := c.conn.Create(c.prefix, nil, zk.FlagEphemeral|zk.FlagSequence, c.acl)
	if err != nil {
		return err
	}
	return c.conn.Delete(p, -1)
}

// gozkCycler locks and unlocks go-zookeeper's zk.Lock.
type gozkCycler struct{ l *zk.Lock }

func (c gozkCycler) cycle(context.Context) error {
	if err := c.l.Lock(); err != nil {
		return err
	}
	return c.l.Unlock()
}

// zklockCycler acquires a zklock.Mutex and releases the grant.
type zklockCycler struct{ m *zklock.Mutex }

func (c zklockCycler) cycle(ctx context.Context) error {
	g, err := c.m.Acquire(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return g.Release(rctx)
}

// httpCycler acquires a lease through the daemon's API and releases it.
type httpCycler struct {
	c     *client.Client
	name  string
	owner string
	wait  time.Duration
}

func (c *httpCycler) cycle(ctx context.Context) error {
	l, err := c.c.Acquire(ctx, c.name, client.Owner(c.owner), client.Wait(c.wait))
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return c.c.Release(rctx, l)
}

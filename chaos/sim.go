package chaos

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seqd/seqd/fence"
)

// Store fence modes, as `seqd store --fence` names them.
const (
	FenceFull   = "full"
	FenceWrites = "writes"
	FenceOff    = "off"
)

// SimConfig is one simulated schedule. Zero fields are drawn from Seed.
type SimConfig struct {
	Seed       uint64
	Clients    int           // 2..5
	Iterations int           // per client
	TTL        time.Duration // lease TTL on the virtual clock
	Fence      string        // the store's mode; default FenceFull
	// CachedToken makes the lease service buggy: after a session loss it
	// hands the lost lease's token to the next grant instead of a new one.
	CachedToken bool
}

// SimStats counts what a schedule exercised.
type SimStats struct {
	Pauses, Delays, SessionLosses, Expiries, Handoffs, Renewals int
}

// Simulate runs one schedule of the lock-set workload against a model of the
// lease service (a grant bumps the token, a renewal keeps it, a lease ends
// at release, at TTL without renewal, or at a loss of the daemon's session)
// and a store fenced by fence.Fence, on a virtual clock. Clients pause
// (for 0.5–3× the TTL), messages to the store are delayed, sessions are
// lost, leases expire and pass to waiters. Everything runs on one goroutine
// in the order of an event queue, so a seed replays the same history.
func Simulate(cfg SimConfig) ([]Op, SimStats) {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	if cfg.Clients <= 0 {
		cfg.Clients = 2 + r.IntN(4)
	}
	if cfg.Iterations <= 0 {
		cfg.Iterations = 5 + r.IntN(15)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Duration(1+r.IntN(5)) * time.Second
	}
	if cfg.Fence == "" {
		cfg.Fence = FenceFull
	}
	s := &sim{cfg: cfg, r: r, ttl: int64(cfg.TTL), fence: fence.New(nil)}
	s.pPause = 0.05 + 0.3*r.Float64()
	s.pDelay = 0.2 * r.Float64()
	s.pLoss = 0.05 * r.Float64()
	s.pRenew = 0.5 * r.Float64()
	for p := 0; p < cfg.Clients; p++ {
		c := &simClient{s: s, p: p, rec: &simRecorder{s: s, proc: p}}
		s.clients = append(s.clients, c)
		s.at(s.latency(), c.next)
	}
	s.active = cfg.Clients
	// Session losses arrive at random; the loop stops when the clients
	// and the final read are done, whatever is still scheduled.
	s.at(int64(float64(s.ttl)*(1+4*r.Float64())), s.maybeLoseSession)
	for len(s.q) > 0 && !s.done {
		e := heap.Pop(&s.q).(*event)
		s.now = e.at
		e.fn()
	}
	SortOps(s.ops)
	return s.ops, s.stats
}

type event struct {
	at  int64
	seq int
	fn  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type sim struct {
	cfg   SimConfig
	r     *rand.Rand
	ttl   int64
	now   int64
	seq   int
	q     eventQueue
	ops   []Op
	stats SimStats
	done  bool

	pPause, pDelay, pLoss, pRenew float64

	// the lease service
	token   uint64
	holder  *simLease
	waiters []*simWaiter
	cached  uint64 // CachedToken: the token of the lease lost with the session
	leaseN  int

	// the store
	fence *fence.Fence
	set   []int

	clients []*simClient
	active  int
}

type simLease struct {
	id      string
	token   uint64
	expires int64
	live    bool
}

type simWaiter struct {
	grant func(*simLease)
	gone  bool
}

func (s *sim) at(d int64, fn func()) {
	s.seq++
	heap.Push(&s.q, &event{at: s.now + d, seq: s.seq, fn: fn})
}

// latency is a message's one-way time: 0.1–5 ms.
func (s *sim) latency() int64 {
	return int64(100*time.Microsecond) + s.r.Int64N(int64(5*time.Millisecond))
}

// pause is a client pause or a delayed message: 0.5–3× the TTL.
func (s *sim) pause() int64 { return s.ttl/2 + s.r.Int64N(5*s.ttl/2) }

// --- the lease service ---

func (s *sim) acquire(wait int64, cb func(*simLease)) {
	if s.holder == nil {
		cb(s.grant())
		return
	}
	w := &simWaiter{grant: cb}
	s.waiters = append(s.waiters, w)
	s.at(wait, func() {
		if !w.gone {
			w.gone = true
			cb(nil)
		}
	})
}

func (s *sim) grant() *simLease {
	s.leaseN++
	tok := s.token + 1
	if s.cfg.CachedToken && s.cached > 0 {
		tok, s.cached = s.cached, 0 // the bug: a token handed out before
	} else {
		s.token = tok
	}
	l := &simLease{id: fmt.Sprintf("L%d", s.leaseN), token: tok, expires: s.now + s.ttl, live: true}
	s.holder = l
	s.armExpiry(l)
	return l
}

func (s *sim) armExpiry(l *simLease) {
	at := l.expires
	s.at(at-s.now, func() {
		if l.live && l.expires == at {
			s.stats.Expiries++
			s.end(l)
		}
	})
}

// end ends l and hands the lock to the next waiter.
func (s *sim) end(l *simLease) {
	l.live = false
	if s.holder != l {
		return
	}
	s.holder = nil
	for len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		if w.gone {
			continue
		}
		w.gone = true
		s.stats.Handoffs++
		w.grant(s.grant())
		return
	}
}

func (s *sim) renew(l *simLease) bool {
	if !l.live || s.holder != l {
		return false
	}
	s.stats.Renewals++
	l.expires = s.now + s.ttl
	s.armExpiry(l)
	return true
}

func (s *sim) maybeLoseSession() {
	if s.r.Float64() < s.pLoss*10 && s.holder != nil {
		s.stats.SessionLosses++
		s.cached = s.holder.token
		s.end(s.holder)
	}
	s.at(int64(float64(s.ttl)*(1+4*s.r.Float64())), s.maybeLoseSession)
}

// --- the store (fence.Fence in front of one key) ---

func (s *sim) storeRead(token uint64) (string, []int) {
	if s.cfg.Fence == FenceFull {
		if err := s.fence.Admit("set", token); err != nil {
			return ResultStale, nil
		}
	}
	return ResultOK, append([]int(nil), s.set...)
}

func (s *sim) storeWrite(token uint64, v []int) string {
	if s.cfg.Fence != FenceOff {
		if err := s.fence.Admit("set", token); err != nil {
			return ResultStale
		}
	}
	s.set = v
	return ResultOK
}

// --- clients ---

type simRecorder struct {
	s    *sim
	proc int
	n    int
}

func (r *simRecorder) invoke(op Op) *Op {
	r.n++
	op.Process, op.ID, op.Invoke = r.proc, r.n, r.s.now
	r.s.ops = append(r.s.ops, op)
	return &r.s.ops[len(r.s.ops)-1]
}

func (r *simRecorder) complete(id int, result string, value []int) {
	for i := len(r.s.ops) - 1; i >= 0; i-- {
		if op := &r.s.ops[i]; op.Process == r.proc && op.ID == id {
			op.Complete, op.Result = r.s.now, result
			if op.Kind == KindRead {
				op.Value = value
			}
			return
		}
	}
}

type simClient struct {
	s     *sim
	p     int
	rec   *simRecorder
	iter  int
	final bool
}

// step runs fn after a latency, or after a pause with the schedule's
// probability of one.
func (c *simClient) step(fn func()) {
	d := c.s.latency()
	if !c.final && c.s.r.Float64() < c.s.pPause {
		c.s.stats.Pauses++
		d += c.s.pause()
	}
	c.s.at(d, fn)
}

func (c *simClient) next() {
	s := c.s
	if !c.final && c.iter >= s.cfg.Iterations {
		s.active--
		if s.active == 0 {
			// Every client is done: the closing read, by a client of its
			// own, through a grant like any other.
			f := &simClient{s: s, p: len(s.clients), rec: &simRecorder{s: s, proc: len(s.clients)}, final: true}
			s.at(s.latency(), f.next)
		}
		return
	}
	c.iter++
	op := c.rec.invoke(Op{Kind: KindAcquire, Daemon: "sim"})
	id := op.ID
	wait := s.ttl
	if c.final {
		wait = 1000 * s.ttl
	}
	s.at(s.latency(), func() {
		s.acquire(wait, func(l *simLease) {
			s.at(s.latency(), func() {
				if l == nil {
					c.rec.complete(id, ResultFail, nil)
					c.s.at(s.latency(), c.next)
					return
				}
				for i := len(s.ops) - 1; i >= 0; i-- {
					if o := &s.ops[i]; o.Process == c.p && o.ID == id {
						o.Token, o.Grant = l.token, l.id
					}
				}
				c.rec.complete(id, ResultOK, nil)
				c.step(func() { c.read(l) })
			})
		})
	})
}

func (c *simClient) read(l *simLease) {
	s := c.s
	op := c.rec.invoke(Op{Kind: KindRead, Token: l.token, Grant: l.id, Final: c.final})
	id := op.ID
	s.at(s.latency(), func() {
		res, v := s.storeRead(l.token)
		s.at(s.latency(), func() {
			c.rec.complete(id, res, v)
			if c.final {
				s.done = true
				return
			}
			if res != ResultOK {
				c.release(l)
				return
			}
			think := s.r.Int64N(s.ttl / 2)
			c.s.at(think, func() {
				if s.r.Float64() < s.pRenew {
					s.renew(l) // a lost lease is not noticed: the pause case
				}
				c.step(func() { c.write(l, v) })
			})
		})
	})
}

func (c *simClient) write(l *simLease, read []int) {
	s := c.s
	x := (c.p+1)*1_000_000 + c.iter
	v := append(append([]int(nil), read...), x)
	op := c.rec.invoke(Op{Kind: KindWrite, Token: l.token, Grant: l.id, Value: v, Add: x})
	id := op.ID
	d := s.latency()
	if s.r.Float64() < s.pDelay {
		s.stats.Delays++
		d += s.pause()
	}
	s.at(d, func() {
		res := s.storeWrite(l.token, v)
		s.at(s.latency(), func() {
			c.rec.complete(id, res, nil)
			c.step(func() { c.release(l) })
		})
	})
}

func (c *simClient) release(l *simLease) {
	s := c.s
	op := c.rec.invoke(Op{Kind: KindRelease, Token: l.token, Grant: l.id})
	id := op.ID
	s.at(s.latency(), func() {
		res := ResultFail
		if l.live && s.holder == l {
			s.end(l)
			res = ResultOK
		}
		s.at(s.latency(), func() {
			c.rec.complete(id, res, nil)
			c.s.at(s.latency(), c.next)
		})
	})
}

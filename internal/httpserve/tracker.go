package httpserve

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tracker counts connections and picks one to close at the cap. Each open
// connection is quiet (new or idle: no request under way), busy (a request
// under way), protected (a priority request whose body has arrived) or
// kept (idle after a request that Options.Keep chose: the next renewal of
// a live lease comes on it): the quiet and the busy are kept in order of
// when they became so, oldest first, so that picking one costs nothing
// however many are open. Only the quiet and the busy are closed to make
// room; at most a quarter of the cap is kept.
type tracker struct {
	mu      sync.Mutex
	max     int
	open    int // accepted and not yet closed
	room    *sync.Cond
	conns   map[net.Conn]*tracked
	quiet   list.List // of *tracked, quiet the longest first
	busy    list.List // of *tracked, busy the longest first (not protected)
	kept    int       // idle connections kept
	maxKept int
	shed    int64 // busy connections closed to make room
	keep    bool  // never close a connection to make room (the control in tests)
}

// tracked is one open connection.
type tracked struct {
	c     net.Conn
	since time.Time     // when it became quiet or busy
	at    *list.Element // in quiet or busy; nil while protected or kept
	in    *list.List    // which of the two
	earns bool          // its last chosen request makes it kept while idle
	kept  bool          // idle and kept now
}

func newTracker(max int) *tracker {
	t := &tracker{max: max, maxKept: max / 4, conns: map[net.Conn]*tracked{}}
	t.room = sync.NewCond(&t.mu)
	return t
}

// moveLocked puts c's record at the back of l (nil: neither list).
func (t *tracker) moveLocked(c net.Conn, l *list.List) {
	r := t.conns[c]
	if r == nil {
		r = &tracked{c: c}
		t.conns[c] = r
	}
	if r.at != nil {
		r.in.Remove(r.at)
		r.at, r.in = nil, nil
	}
	if r.kept {
		r.kept = false
		t.kept--
	}
	r.since = time.Now()
	if l != nil {
		r.at, r.in = l.PushBack(r), l
	}
}

func (t *tracker) forgetLocked(c net.Conn) {
	if r := t.conns[c]; r != nil {
		t.moveLocked(c, nil)
		delete(t.conns, c)
	}
}

func (t *tracker) state(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateNew:
		t.moveLocked(c, &t.quiet)
	case http.StateIdle:
		if r := t.conns[c]; r != nil && r.earns && t.kept < t.maxKept {
			t.moveLocked(c, nil)
			r.kept = true
			t.kept++
			return
		}
		t.moveLocked(c, &t.quiet)
	case http.StateActive:
		t.moveLocked(c, &t.busy)
	case http.StateClosed, http.StateHijacked:
		t.forgetLocked(c)
		// A connection the cap closed was already uncounted.
		if cc, ok := c.(*countedConn); !ok || cc.uncount() {
			t.open--
			t.room.Signal()
		}
	}
}

// protect keeps c from being closed to make room until its request ends
// (unprotect): its request is a priority one, and its body has arrived.
func (t *tracker) protect(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.conns[c]; r != nil && r.in == &t.busy {
		t.moveLocked(c, nil)
	}
}

// unprotect makes c busy again, as its request ends.
func (t *tracker) unprotect(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.conns[c]; r != nil && r.at == nil {
		t.moveLocked(c, &t.busy)
	}
}

// earn makes c kept whenever it is idle from now on: it carried a request
// that Options.Keep chose.
func (t *tracker) earn(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.conns[c]; r != nil {
		r.earns = true
	}
}

// minQuiet is how long a connection may stay silent before the cap may
// close it: a client that means to send a request has sent it by then, so
// a burst of new connections cannot push out one about to be served; and
// a quiet connection with bytes waiting in its socket (a request the
// server has not read yet, on a busy machine) is passed over for up to
// maxPending. minBusy is how long a request may be under way before the
// cap may close its connection: long enough for a short request to be
// answered, so that only the long ones (blocking reads, waiting acquires,
// dribbled bodies) are shed. Under a flood, a new connection waits in the
// listen queue behind every connection that came before it, and the queue
// drains at about (the cap)/minQuiet connections a second: 50ms drained a
// flood of 1,600 connections at a cap of 272 in about half a second on a
// loaded two-core machine, where 100ms took twice that.
const (
	minQuiet   = 50 * time.Millisecond
	maxPending = 250 * time.Millisecond
	minBusy    = 250 * time.Millisecond
)

// peekScan is how many of the oldest quiet connections the cap looks at
// for one with nothing waiting to be read.
const peekScan = 16

// admit waits for room for one more connection. At the cap it closes the
// connection quiet the longest (once quiet for minQuiet), else the one busy
// the longest (once busy for minBusy); it waits only while every
// connection is younger than that, or protected.
func (t *tracker) admit() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.open >= t.max {
		victim, wait := t.victimLocked(time.Now())
		switch {
		case t.keep || (victim == nil && wait == 0):
			t.room.Wait()
		case victim == nil:
			t.mu.Unlock()
			time.Sleep(wait)
			t.mu.Lock()
		default:
			if victim.in == &t.busy {
				t.shed++
			}
			t.forgetLocked(victim.c)
			if cc, ok := victim.c.(*countedConn); ok && cc.uncount() {
				t.open--
			}
			victim.c.Close()
		}
	}
	t.open++
}

// victimLocked is the connection to close to make room at now, or, if none
// may be closed yet, how long until one may (0: none will, until a request
// ends).
func (t *tracker) victimLocked(now time.Time) (*tracked, time.Duration) {
	var wait time.Duration
	i := 0
	for e := t.quiet.Front(); e != nil && i < peekScan; e, i = e.Next(), i+1 {
		r := e.Value.(*tracked)
		age := now.Sub(r.since)
		if age < minQuiet {
			wait = minQuiet - age
			break
		}
		if age >= maxPending || !arriving(r, now) {
			return r, 0
		}
	}
	if e := t.busy.Front(); e != nil {
		r := e.Value.(*tracked)
		age := now.Sub(r.since)
		if age >= minBusy {
			return r, 0
		}
		if w := minBusy - age; wait == 0 || w < wait {
			wait = w
		}
	}
	if wait == 0 && t.quiet.Len() > 0 {
		wait = minQuiet // every old quiet one looked at has a request waiting
	}
	return nil, wait
}

// arriving reports whether a request seems to be arriving on the quiet
// connection r at now: bytes were read from it within minQuiet (the server
// is parsing them), or bytes wait in its socket (the server has not read
// them yet), or that cannot be told. A connection that sent a few header
// bytes and then nothing is not arriving.
func arriving(r *tracked, now time.Time) bool {
	c := r.c
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, ok := c.(*countedConn)
	if !ok {
		return true
	}
	return now.UnixNano()-cc.lastRead.Load() < int64(minQuiet) || pending(cc.Conn)
}

// pending reports whether c has bytes waiting to be read in its socket, or
// whether that cannot be told.
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	waiting := true
	var b [1]byte
	rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read; 0 bytes: the client closed its side.
		waiting = n > 0 || (err != nil && err != syscall.EAGAIN)
	})
	return waiting
}

// capped is a listener whose Accept waits for room under the cap.
type capped struct {
	net.Listener
	t *tracker
}

func (l *capped) Accept() (net.Conn, error) {
	l.t.admit()
	c, err := l.Listener.Accept()
	if err != nil {
		l.t.mu.Lock()
		l.t.open--
		l.t.room.Signal()
		l.t.mu.Unlock()
		return nil, err
	}
	return &countedConn{Conn: c}, nil
}

// countedConn is uncounted once, whether the cap or the server closes it,
// and knows when bytes were last read from it.
type countedConn struct {
	net.Conn
	once     sync.Once
	lastRead atomic.Int64 // when bytes were last read from it, in Unix nanoseconds
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *countedConn) uncount() (first bool) {
	c.once.Do(func() { first = true })
	return first
}

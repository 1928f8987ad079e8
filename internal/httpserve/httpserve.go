// Package httpserve builds the HTTP servers of `seqd serve` and `seqd store`
// so that a flood of connections cannot take them down: every phase of a
// request has a timeout, the number of open connections is capped below the
// process's file descriptor limit (keeping descriptors in reserve for
// ZooKeeper, logs and the store's files), and when the cap is reached the
// connection that has been idle or silent the longest is closed to make
// room, so that a client that sends requests gets served while thousands of
// connections sit open and say nothing.
package httpserve

import (
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Reserve is how many file descriptors the default cap leaves for
// everything but client connections.
const Reserve = 128

// Options sets the limits; zero values take the defaults.
type Options struct {
	// MaxConnections caps open client connections; 0 derives it from the
	// file descriptor limit (the soft RLIMIT_NOFILE less Reserve).
	MaxConnections int
	// ReadHeaderTimeout bounds reading a request's headers (default 5s),
	// ReadTimeout the whole request with its body (default 15s).
	ReadHeaderTimeout, ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer: it must exceed the longest a handler waits (an
	// acquire's wait). Default 1m.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request (default
	// 60s); under pressure the cap closes idle ones sooner.
	IdleTimeout time.Duration
}

// DefaultMaxConnections is the cap derived from the file descriptor limit.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<20 {
		return 1 << 16
	}
	return max(int(rl.Cur)-Reserve, 16)
}

// Server is an http.Server whose connections are capped.
type Server struct {
	*http.Server
	conns *tracker
}

// New returns a server for h with opts' limits.
func New(h http.Handler, opts Options) *Server {
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.ReadHeaderTimeout, 5*time.Second)
	def(&opts.ReadTimeout, 15*time.Second)
	def(&opts.WriteTimeout, time.Minute)
	def(&opts.IdleTimeout, time.Minute)
	t := newTracker(opts.MaxConnections)
	return &Server{
		Server: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: opts.ReadHeaderTimeout,
			ReadTimeout:       opts.ReadTimeout,
			WriteTimeout:      opts.WriteTimeout,
			IdleTimeout:       opts.IdleTimeout,
			ConnState:         t.state,
		},
		conns: t,
	}
}

// Serve accepts connections on l within the cap.
func (s *Server) Serve(l net.Listener) error {
	return s.Server.Serve(&capped{Listener: l, t: s.conns})
}

// ServeTLS is Serve with TLS, certFile and keyFile as for http.Server.
func (s *Server) ServeTLS(l net.Listener, certFile, keyFile string) error {
	return s.Server.ServeTLS(&capped{Listener: l, t: s.conns}, certFile, keyFile)
}

// Open is the number of connections open now.
func (s *Server) Open() int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.open
}

// tracker counts connections by state and picks one to close under
// pressure.
type tracker struct {
	mu    sync.Mutex
	max   int
	open  int // accepted and not yet closed
	room  *sync.Cond
	quiet map[net.Conn]time.Time // new or idle connections, since when
	keep  bool                   // never close a quiet connection (the control in tests)
}

func newTracker(max int) *tracker {
	t := &tracker{max: max, quiet: map[net.Conn]time.Time{}}
	t.room = sync.NewCond(&t.mu)
	return t
}

func (t *tracker) state(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		t.quiet[c] = time.Now()
	case http.StateActive:
		delete(t.quiet, c)
	case http.StateClosed, http.StateHijacked:
		delete(t.quiet, c)
		// A connection the cap closed was already uncounted.
		if cc, ok := c.(*countedConn); !ok || cc.uncount() {
			t.open--
			t.room.Signal()
		}
	}
}

// minQuiet is how long a connection may stay silent before the cap may
// close it: a client that means to send a request has sent it by then, so
// a burst of new connections cannot push out one about to be served.
const minQuiet = 100 * time.Millisecond

// admit waits for room for one more connection: at the cap it closes the
// connection quiet the longest (once quiet for minQuiet), and waits only
// while none is, each busy one being bounded by its timeouts.
func (t *tracker) admit() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.open >= t.max {
		var oldest net.Conn
		var since time.Time
		for c, at := range t.quiet {
			if oldest == nil || at.Before(since) {
				oldest, since = c, at
			}
		}
		switch {
		case oldest == nil || t.keep:
			t.room.Wait()
		case time.Since(since) < minQuiet:
			t.mu.Unlock()
			time.Sleep(minQuiet - time.Since(since))
			t.mu.Lock()
		default:
			delete(t.quiet, oldest)
			if cc, ok := oldest.(*countedConn); ok && cc.uncount() {
				t.open--
			}
			oldest.Close()
		}
	}
	t.open++
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

// countedConn is uncounted once, whether the cap or the server closes it.
type countedConn struct {
	net.Conn
	once sync.Once
}

func (c *countedConn) uncount() (first bool) {
	c.once.Do(func() { first = true })
	return first
}

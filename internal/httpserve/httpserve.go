// Package httpserve builds the HTTP servers of `seqd serve` and `seqd store`
// so that a flood of connections cannot take them down: every phase of a
// request has a timeout, a request body must arrive at a minimum rate, the
// number of open connections is capped below the process's file descriptor
// limit (keeping descriptors in reserve for ZooKeeper, logs and the store's
// files), and when the cap is reached a connection is closed to make room:
// the one idle or silent the longest, else the one busy the longest with a
// request that is not a priority (Options.Priority: a lease's renewal).
// So a client that sends a priority request is served whatever the other
// connections do: sit open and say nothing, dribble their headers or
// bodies, or wait for long answers.
package httpserve

import (
	"net"
	"net/http"
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
	// MinBodyRate is the least rate, in bytes a second, at which a request
	// body must arrive after the first BodyGrace: a body that falls behind
	// is cut, and the handler's read of it fails with an error that says
	// so. Default DefaultMinBodyRate and DefaultBodyGrace.
	MinBodyRate int
	BodyGrace   time.Duration
	// Priority picks the requests served ahead of all others: once such a
	// request's body has arrived, its connection is never closed to make
	// room, and the others are closed for it. nil: none.
	Priority func(*http.Request) bool
	// Keep says whether a request r answered status proves its client
	// worth a connection kept for it: while idle, the connection is from
	// then on not closed to make room (up to a quarter of the cap; the idle
	// timeout still closes it), so that the client's next priority request
	// needs no new connection, which would queue behind every other
	// connection the listener holds. It should be true only for what a
	// flooding client does not get for free (a lease granted or renewed);
	// a client that does can at most hold the quarter. nil: none.
	Keep func(r *http.Request, status int) bool
}

// DefaultMinBodyRate and DefaultBodyGrace: a request body must arrive at
// 4 KiB a second after its first second. A client sends its body with its
// headers, in one or two writes: a 64 kbit/s link (8 KB/s) passes with room
// to spare, and the grace covers a body sent a round trip after the
// headers. A connection that means to hold its place by dribbling must
// send 4 KiB a second for it, so that holding the whole cap becomes a
// bandwidth flood rather than a few bytes a second per connection.
const (
	DefaultMinBodyRate = 4 << 10
	DefaultBodyGrace   = time.Second
)

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
	def(&opts.BodyGrace, DefaultBodyGrace)
	if opts.MinBodyRate <= 0 {
		opts.MinBodyRate = DefaultMinBodyRate
	}
	t := newTracker(opts.MaxConnections)
	return &Server{
		Server: &http.Server{
			Handler:           serve(h, t, opts),
			ReadHeaderTimeout: opts.ReadHeaderTimeout,
			ReadTimeout:       opts.ReadTimeout,
			WriteTimeout:      opts.WriteTimeout,
			IdleTimeout:       opts.IdleTimeout,
			ConnState:         t.state,
			ConnContext:       withConn,
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

// Shed is the number of busy connections closed to make room so far.
func (s *Server) Shed() int64 {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.shed
}

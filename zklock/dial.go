package zklock

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is the session timeout asked of ZooKeeper.
const DefaultSessionTimeout = 10 * time.Second

// Options configures Dial. The zero value is usable.
type Options struct {
	// SessionTimeout asked of ZooKeeper (it may negotiate another within its
	// min/max; the negotiated one is what counts). Default 10s.
	SessionTimeout time.Duration
	// LossMargin: a grant is declared lost once ZooKeeper has not answered
	// for SessionTimeout-LossMargin, so that it is lost before ZooKeeper can
	// expire the session and grant the lock to someone else. Default 1/4 of
	// the session timeout.
	LossMargin time.Duration
	// Heartbeat is how often the session proves ZooKeeper is still there
	// when nothing else is talking to it. Default 1/6 of the session
	// timeout.
	Heartbeat time.Duration
	// Logger receives the session's events; default discards.
	Logger *slog.Logger
	// Observer is told of grants, waits, losses, token regressions,
	// connectivity and expiry; nil tells nobody.
	Observer Observer
	// Clock drives loss deadlines; default the wall clock.
	Clock Clock
	// Guard is the token regression guard; share one across the sessions of
	// a process so that it outlives a session. Default a new one.
	Guard *Guard
	// Auth, if set, authenticates the session with the digest scheme before
	// it makes any other request (and again after every reconnect).
	Auth *DigestAuth
	// ACL is the ACL policy of the nodes the session creates. Default
	// ACLCreator with Auth, ACLOpen without.
	ACL ACLPolicy
	// TLS, if set, connects to ZooKeeper's secure client port with it.
	TLS *tls.Config
	// TokenFloor is the floor a root gets when the session records its
	// token mark (a root that records none yet): its tokens are
	// TokenFloor + zxid (or + version). At most MaxTokenFloor.
	TokenFloor uint64
	// Floors, if set, records every token the session issues (durably, if
	// it has a file) before the grant is declared, and the session refuses
	// to grant on a root whose tokens would fall below those recorded
	// before it was dialled (a ZooKeeper restored or rebuilt): a
	// *FloorError until the root's floor is raised. Share one across the
	// sessions of a process.
	Floors *Floors

	// plainReads reads the connection without a buffer (for the benchmark
	// that measures what the buffer saves).
	plainReads bool
	// wire, if set, wraps every connection the session dials, above TLS:
	// the tests that count the requests the session writes see them there.
	wire func(net.Conn) net.Conn
}

// Dial connects to ZooKeeper (servers are host:port) and waits until a
// session is established or ctx ends.
func Dial(ctx context.Context, servers []string, opts Options) (*Session, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no servers given", ErrUnavailable)
	}
	opts = opts.withDefaults()
	s, err := newSession(opts)
	if err != nil {
		return nil, err
	}
	if err := s.connect(ctx, servers, opts); err != nil {
		return nil, err
	}
	if !s.timeout.await(time.Second) {
		s.log.Warn("could not read the negotiated session timeout; assuming the requested one", "timeout", opts.SessionTimeout)
	}
	s.id.Store(s.conn.SessionID())
	s.log.Info("session established", "session", fmt.Sprintf("0x%x", s.conn.SessionID()), "timeout", s.Timeout())
	s.spawn(s.run)
	s.spawn(s.watchSilence)
	s.spawn(s.runMonitor)
	return s, nil
}

// withDefaults fills in what o leaves zero.
func (opts Options) withDefaults() Options {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = WallClock()
	}
	if opts.Guard == nil {
		opts.Guard = NewGuard()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	return opts
}

// newSession makes the Session opts describe, not connected yet.
func newSession(opts Options) (*Session, error) {
	acl, err := aclFor(opts.ACL, opts.Auth)
	if err != nil {
		return nil, err
	}
	if opts.TokenFloor > MaxTokenFloor {
		return nil, fmt.Errorf("zklock: token floor %d is above the highest allowed, %d", opts.TokenFloor, uint64(MaxTokenFloor))
	}
	s := &Session{
		log:        opts.Logger.With("component", "zklock"),
		obs:        opts.Observer,
		clock:      opts.Clock,
		guard:      opts.Guard,
		floors:     opts.Floors,
		freshFloor: opts.TokenFloor,
		issued:     opts.Floors.All(),
		acl:        acl,
		anonymous:  opts.Auth == nil,
		margin:     opts.LossMargin,
		heartbeat:  opts.Heartbeat,
		lookEvery:  lookEvery,
		done:       make(chan struct{}),
		connClosed: make(chan struct{}),
		granted:    grantedSet{paths: map[string]struct{}{}},
		blocked:    grantedSet{paths: map[string]struct{}{}},
	}
	s.timeout.init(opts.SessionTimeout)
	s.janitor.init()
	s.mon.init()
	// The session cannot be older than this moment: a safe first "heard".
	s.base = s.clock.Now()
	return s, nil
}

// connect opens the connection and waits for its ZooKeeper session (and
// its authentication), or for ctx to end.
func (s *Session) connect(ctx context.Context, servers []string, opts Options) error {
	established := make(chan struct{})
	var estOnce sync.Once
	dialer := zk.Dialer(net.DialTimeout)
	if opts.TLS != nil {
		dialer = TLSDialer(opts.TLS)
	}
	if !opts.plainReads {
		dialer = bufferedDialer(dialer)
	}
	if opts.wire != nil {
		dialer = wrappedDialer(dialer, opts.wire)
	}
	conn, _, err := zk.Connect(servers, opts.SessionTimeout,
		zk.WithLogger(zkLogger{s}),
		zk.WithDialer(dialer),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				s.mon.event(ev)
				return
			}
			s.onState(ev.State)
			if ev.State == zk.StateHasSession {
				estOnce.Do(func() { close(established) })
			}
		}))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s.conn = conn
	select {
	case <-established:
	case <-ctx.Done():
		conn.Close()
		return fmt.Errorf("%w: no session with %s: %v", ErrUnavailable, strings.Join(servers, ","), ctx.Err())
	}
	if opts.Auth != nil {
		// Before anything else uses the connection: every request, and
		// every node created, must carry the identity.
		if err := s.authenticate(ctx, *opts.Auth); err != nil {
			conn.Close()
			return err
		}
	}
	return nil
}

// TLSDialer dials ZooKeeper's secure client port: TCP, then a TLS
// handshake within the same timeout. It is what Options.TLS uses, for
// go-zookeeper connections of one's own (zk.WithDialer) to the same servers.
func TLSDialer(cfg *tls.Config) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return d.DialContext(ctx, network, addr)
	}
}

// readBuffer is the size of a connection's read buffer: ZooKeeper's answers
// to lock requests are tens of bytes, so it holds a burst of them.
const readBuffer = 4096

// bufferedDialer dials with d and reads each connection through a buffer.
// go-zookeeper reads an answer in two reads, its length and then its body,
// each a system call; through the buffer, one call takes in every answer
// that has arrived.
func bufferedDialer(d zk.Dialer) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := d(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer)}, nil
	}
}

// wrappedDialer dials with d and wraps each connection with wrap.
func wrappedDialer(d zk.Dialer, wrap func(net.Conn) net.Conn) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := d(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
}

// bufferedConn is a connection whose reads go through r. Deadlines, writes
// and Close are the connection's own: a read that finds the buffer empty
// waits under the read deadline as the connection's own read would.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// authenticate adds the digest identity to the connection; go-zookeeper
// sends it again after every reconnect, before any queued request.
func (s *Session) authenticate(ctx context.Context, auth DigestAuth) error {
	res := make(chan error, 1)
	go func() { res <- s.conn.AddAuth("digest", []byte(auth.User+":"+auth.Password)) }() // answered or failed by go-zookeeper's own deadline
	select {
	case err := <-res:
		if err != nil {
			return fmt.Errorf("%w: digest auth as %q: %v", ErrUnavailable, auth.User, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: digest auth as %q: %v", ErrUnavailable, auth.User, ctx.Err())
	}
}

package testenv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// Direction names one way through a Proxy.
type Direction int

// Directions, seen from the proxy: ToTarget carries what the dialing side
// sends, FromTarget the answers.
const (
	ToTarget Direction = iota + 1
	FromTarget
)

func (d Direction) String() string {
	switch d {
	case ToTarget:
		return "to-target"
	case FromTarget:
		return "from-target"
	}
	return "none"
}

// Proxy is a loopback TCP proxy for network faults. It has one or more
// routes, each a listener on 127.0.0.1 forwarding to one target, and one
// state that applies to all of them:
//
//   - Pass forwards both ways;
//   - Cut closes every connection and blackholes new ones: they are accepted
//     and held, nothing is forwarded, and they are closed when the proxy
//     passes again;
//   - Delay forwards both ways, each chunk d after it was read;
//   - Drop forwards one direction and silently discards the other.
//
// A connection that lost bytes to Drop carries a broken stream, so it is
// closed when the proxy passes again and both ends reconnect, as they would
// once a real partition heals and their timeouts fire. A Proxy holds at most
// MaxConns connections (SetMaxConns; new ones beyond are closed at once). Close stops it
// and waits for every goroutine it started.
type Proxy struct {
	name     string
	maxConns int

	mu     sync.Mutex
	state  proxyState
	conns  map[*proxyConn]struct{}
	lns    []net.Listener
	routes []string // listen addresses, in the order the routes were added
	closed bool
	stats  ProxyStats

	done chan struct{} // closed by Close
	wg   sync.WaitGroup
}

type proxyState struct {
	cut      bool
	delay    time.Duration
	delayDir Direction // the one direction delay holds; 0: both
	drop     Direction
}

// ProxyStats counts what a Proxy did.
type ProxyStats struct {
	Accepted     int   // connections accepted
	Blackholed   int   // connections accepted while cut
	Refused      int   // connections closed at once (over MaxConns, or closing)
	Closed       int   // forwarded connections closed by a fault or a heal
	DroppedBytes int64 // bytes discarded by Drop or Cut
}

// MaxConns bounds a Proxy's connections.
const MaxConns = 64

// hello rewrites the first message a dialer sends, before anything else is
// forwarded.
type hello func(r io.Reader, w io.Writer) error

// NewProxy returns a proxy with no route, in the Pass state. name is for
// messages.
func NewProxy(name string) *Proxy {
	return &Proxy{name: name, maxConns: MaxConns, conns: map[*proxyConn]struct{}{}, done: make(chan struct{})}
}

// SetMaxConns changes how many connections p forwards at once (default
// MaxConns); connections already open stay.
func (p *Proxy) SetMaxConns(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxConns = n
}

// Forward adds a route to target and returns the address it listens on.
func (p *Proxy) Forward(target string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("testenv: proxy %s: %w", p.name, err)
	}
	if err := p.serve(l, target, nil); err != nil {
		return "", err
	}
	return l.Addr().String(), nil
}

// serve starts accepting on l, forwarding to target. It owns l.
func (p *Proxy) serve(l net.Listener, target string, h hello) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return fmt.Errorf("testenv: proxy %s is closed", p.name)
	}
	p.lns = append(p.lns, l)
	p.routes = append(p.routes, l.Addr().String())
	p.wg.Add(1)
	go func() { // owned by p: ends when Close closes l
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.accept(c, target, h)
		}
	}()
	return nil
}

func (p *Proxy) accept(c net.Conn, target string, h hello) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.conns) >= p.maxConns {
		p.stats.Refused++
		c.Close()
		return
	}
	p.stats.Accepted++
	pc := &proxyConn{client: c, closed: make(chan struct{})}
	p.conns[pc] = struct{}{}
	if p.state.cut {
		p.stats.Blackholed++
		pc.held = true // nothing reads it: the dialer's writes pile up unanswered
		return
	}
	p.wg.Add(1)
	go func() { // owned by p: ends when the connection is closed
		defer p.wg.Done()
		p.forward(pc, target, h)
	}()
}

// forward dials target and copies both ways until either side ends or the
// connection is closed by a fault.
func (p *Proxy) forward(pc *proxyConn, target string, h hello) {
	defer p.remove(pc)
	server, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		pc.close()
		return
	}
	if !pc.setServer(server) {
		server.Close()
		return
	}
	if h != nil {
		pc.client.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := h(pc.client, server); err != nil {
			pc.close()
			return
		}
		pc.client.SetReadDeadline(time.Time{})
	}
	p.wg.Add(1)
	go func() { // owned by p: ends with the connection
		defer p.wg.Done()
		p.copy(pc, pc.client, server, FromTarget)
	}()
	p.copy(pc, server, pc.client, ToTarget)
}

// copy forwards src to dst in one direction. The state is read as each
// chunk arrives: a cut or a drop discards it; a delay holds it for d before
// it is written, as a delay line (a writer goroutine delivers each chunk d
// after it was read while the next ones are being read, so that a busy
// connection sees d, not d per chunk queued ahead of it).
func (p *Proxy) copy(pc *proxyConn, dst, src net.Conn, dir Direction) {
	defer pc.close()
	line := make(chan delayed, 256)
	written := make(chan struct{})
	go func() { // owned by copy: ends when line is closed or the connection is
		defer close(written)
		for c := range line {
			if wait := time.Until(c.due); wait > 0 && !p.sleep(pc, wait) {
				return
			}
			if _, err := dst.Write(c.b); err != nil {
				pc.close()
				return
			}
		}
	}()
	defer func() {
		close(line)
		<-written
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			st := p.current()
			if st.cut || st.drop == dir {
				pc.taint()
				p.dropped(n)
			} else {
				due := time.Now()
				if st.delayDir == 0 || st.delayDir == dir {
					due = due.Add(st.delay)
				}
				select {
				case line <- delayed{b: bytes.Clone(buf[:n]), due: due}:
				case <-written: // the writer failed
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// delayed is a chunk on its way through a delay line.
type delayed struct {
	b   []byte
	due time.Time
}

// sleep waits d unless the connection or the proxy closes first.
func (p *Proxy) sleep(pc *proxyConn, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-pc.closed:
	case <-p.done:
	}
	return false
}

func (p *Proxy) current() proxyState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

func (p *Proxy) dropped(n int) {
	p.mu.Lock()
	p.stats.DroppedBytes += int64(n)
	p.mu.Unlock()
}

func (p *Proxy) remove(pc *proxyConn) {
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// Pass forwards everything again. Connections held by a cut and connections
// that lost bytes are closed.
func (p *Proxy) Pass() { p.set(proxyState{}) }

// Cut closes every connection and blackholes new ones until the next Pass,
// Delay or Drop.
func (p *Proxy) Cut() { p.set(proxyState{cut: true}) }

// Delay forwards both ways, holding each chunk for d (0 is Pass): a
// delay line, so a connection's round trip grows by 2d however busy it is.
func (p *Proxy) Delay(d time.Duration) { p.set(proxyState{delay: d}) }

// DelayOneWay forwards both ways, holding what travels in dir for d and
// nothing else. A round trip then grows by d: Go's timers wake no sooner
// than about a millisecond after they are set on some hosts, so a round
// trip of 1ms is one delay of 1ms, where Delay(500µs) would add two of
// them.
func (p *Proxy) DelayOneWay(dir Direction, d time.Duration) {
	p.set(proxyState{delay: d, delayDir: dir})
}

// Drop forwards dir's opposite and discards what travels in dir.
func (p *Proxy) Drop(dir Direction) { p.set(proxyState{drop: dir}) }

func (p *Proxy) set(st proxyState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = st
	for pc := range p.conns {
		switch {
		case pc.held && !st.cut:
			pc.close()
			delete(p.conns, pc) // it has no goroutine of its own to do it
		case !pc.held && (st.cut || (st.drop == 0 && pc.isTainted())):
			p.stats.Closed++
			pc.close()
		}
	}
}

// Conns is the number of connections being forwarded (held ones excluded).
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pc := range p.conns {
		if !pc.held {
			n++
		}
	}
	return n
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the listeners, closes every connection and waits for the
// proxy's goroutines. It is safe to call more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
		for _, l := range p.lns {
			l.Close()
		}
		for pc := range p.conns {
			pc.close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxyConn is one accepted connection and, once dialed, its upstream.
type proxyConn struct {
	client net.Conn
	held   bool // accepted during a cut, never forwarded

	mu      sync.Mutex
	server  net.Conn
	tainted bool
	done    bool
	closed  chan struct{}
}

// setServer records the upstream connection, unless pc was closed while it
// was being dialed.
func (pc *proxyConn) setServer(s net.Conn) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.done {
		return false
	}
	pc.server = s
	return true
}

func (pc *proxyConn) taint() {
	pc.mu.Lock()
	pc.tainted = true
	pc.mu.Unlock()
}

func (pc *proxyConn) isTainted() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.tainted
}

func (pc *proxyConn) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.done {
		return
	}
	pc.done = true
	close(pc.closed)
	pc.client.Close()
	if pc.server != nil {
		pc.server.Close()
	}
}

// electionHello rewrites the first message of a ZooKeeper leader-election
// connection so that it advertises advertise as the dialer's election
// address. A member that receives a connection from a member with a lower
// id closes it and connects back to the address that message advertises:
// without the rewrite, that connection would go straight to the dialer's
// real port and around the proxies. The message is: protocol version
// (int64, negative for the versions that carry an address), server id
// (int64), length (int32) and that many bytes of "host:port" addresses
// separated by '|'.
func electionHello(advertise string) hello {
	return func(r io.Reader, w io.Writer) error {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		if int64(binary.BigEndian.Uint64(head[:])) >= 0 { // the oldest protocol: just the id
			_, err := w.Write(head[:])
			return err
		}
		var rest [12]byte
		if _, err := io.ReadFull(r, rest[:]); err != nil {
			return err
		}
		n := int32(binary.BigEndian.Uint32(rest[8:]))
		if n < 0 || n > 4096 {
			return errors.New("testenv: election hello: bad address length")
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return err
		}
		out := make([]byte, 0, 20+len(advertise))
		out = append(out, head[:]...)
		out = append(out, rest[:8]...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(advertise)))
		out = append(out, advertise...)
		_, err := w.Write(out)
		return err
	}
}

// AddedRTT is what the proxy at via adds to a round trip with the server
// at direct: the median time of nine probes through it less that of nine
// straight to the server; 0 when a probe fails. probe makes one round
// trip to the server at addr, on a new connection (whose handshake a
// Proxy does not delay).
func AddedRTT(via, direct string, probe func(addr string) error) time.Duration {
	median := func(addr string) (time.Duration, bool) {
		ds := make([]time.Duration, 0, 9)
		for range 9 {
			t0 := time.Now()
			if err := probe(addr); err != nil {
				return 0, false
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], true
	}
	v, ok1 := median(via)
	d, ok2 := median(direct)
	if !ok1 || !ok2 {
		return 0
	}
	return max(v-d, 0)
}

package httpserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// start serves an "ok" handler on loopback with opts and returns its URL.
func start(t *testing.T, opts Options, keep bool) (*Server, string) {
	t.Helper()
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), opts)
	s.conns.keep = keep
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		s.Close()
		<-done
	})
	return s, "http://" + l.Addr().String()
}

// flood opens n connections that say nothing (or, with dribble, send a
// header byte now and then) and keeps them until the test ends.
func flood(t *testing.T, url string, n int, dribble bool) {
	t.Helper()
	addr := url[len("http://"):]
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); wg.Wait() })
	for range n {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue // the backlog is full: the flood is as large as it gets
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if dribble {
				c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if dribble {
						if _, err := c.Write([]byte("X")); err != nil {
							return
						}
					}
				}
			}
		}()
	}
}

// full waits until s has n connections open.
func full(t *testing.T, s *Server, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Open() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open after 10s waiting for %s, want %d", s.Open(), what, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// get asks for / on a new connection and reports how long the answer took.
func get(t *testing.T, url string, within time.Duration) (time.Duration, error) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: within}
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		return time.Since(start), err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	return time.Since(start), nil
}

// TestIdleFloodDoesNotStarveRequests: hundreds of connections that never
// send a byte fill the cap; a client that sends a request is still served
// at once, and the open connections never pass the cap. The control keeps
// quiet connections open at the cap, and the request is starved.
func TestIdleFloodDoesNotStarveRequests(t *testing.T) {
	const maxConns = 20
	s, url := start(t, Options{MaxConnections: maxConns}, false)
	flood(t, url, 300, false)
	for i := range 10 {
		took, err := get(t, url, 3*time.Second)
		if err != nil {
			t.Fatalf("request %d during the flood: %v", i, err)
		}
		t.Logf("request %d answered in %v", i, took.Round(time.Millisecond))
		if n := s.Open(); n > maxConns {
			t.Fatalf("%d connections open, over the cap of %d", n, maxConns)
		}
	}

	_, ctlURL := start(t, Options{MaxConnections: maxConns}, true)
	flood(t, ctlURL, 300, false)
	if _, err := get(t, ctlURL, time.Second); err == nil {
		t.Fatal("with quiet connections kept at the cap, a request was still served: the control shows nothing")
	}
}

// TestSlowHeadersAreCut: connections that dribble their headers hold their
// place only until the header timeout, so a real request gets through
// within about that long.
func TestSlowHeadersAreCut(t *testing.T) {
	const maxConns = 10
	_, url := start(t, Options{MaxConnections: maxConns, ReadHeaderTimeout: 300 * time.Millisecond}, false)
	flood(t, url, maxConns, true)
	took, err := get(t, url, 5*time.Second)
	if err != nil {
		t.Fatalf("request behind slow-header connections: %v", err)
	}
	t.Logf("answered after %v behind %d slow-header connections", took.Round(time.Millisecond), maxConns)
}

func TestDefaultMaxConnectionsLeavesAReserve(t *testing.T) {
	if n := DefaultMaxConnections(); n < 16 {
		t.Fatalf("DefaultMaxConnections() = %d", n)
	}
}

// TestSlowBodyIsCut: a body sent a byte at a time falls behind the minimum
// rate and is cut soon after the grace, with an error that says so; a body
// sent at once is read whole, and a handler that then waits long is not cut
// by the body's deadline (its request context lives on).
func TestSlowBodyIsCut(t *testing.T) {
	type read struct {
		n        int
		err      error
		took     time.Duration
		ctxAlive bool
	}
	reads := make(chan read, 2)
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		b, err := io.ReadAll(r.Body)
		rd := read{n: len(b), err: err, took: time.Since(start)}
		if err == nil {
			// Past the body's deadline: a read deadline left on the
			// connection (set in real time on the net.Conn, which no
			// injected clock reaches) fires 200ms after the handler began
			// and would cancel the request's context; a second is five
			// times that.
			time.Sleep(time.Second)
			rd.ctxAlive = r.Context().Err() == nil
		}
		reads <- rd
		io.WriteString(w, "ok")
	}), Options{MinBodyRate: 1000, BodyGrace: 200 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	go func() {
		for range 100 {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	rd := <-reads
	t.Logf("a body sent at 20 bytes a second: %d bytes read in %v: %v", rd.n, rd.took.Round(time.Millisecond), rd.err)
	if !errors.Is(rd.err, ErrBodyTooSlow) || rd.took > 2*time.Second {
		t.Fatalf("slow body: %v after %v, want ErrBodyTooSlow soon after the 200ms grace", rd.err, rd.took)
	}

	resp, err := http.Post("http://"+l.Addr().String(), "text/plain", strings.NewReader(strings.Repeat("y", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rd := <-reads; rd.err != nil || rd.n != 1000 || !rd.ctxAlive {
		t.Fatalf("a body sent at once: %d bytes, %v, request context alive afterwards %v; want 1000 bytes, nil, true", rd.n, rd.err, rd.ctxAlive)
	}
}

// TestBusyConnectionsAreShedForPriority: long requests (a blocking read's
// shape) fill the cap; a priority request still gets through, because the
// busy connection that waited the longest is closed for it, and the open
// connections never pass the cap. A connection kept after a priority
// request stays open through a flood of idle ones. The control closes no
// busy connection: the priority request starves.
func TestBusyConnectionsAreShedForPriority(t *testing.T) {
	const maxConns = 20
	long := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/long" {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}
	opts := Options{
		MaxConnections: maxConns,
		Priority:       func(r *http.Request) bool { return r.URL.Path == "/renew" },
		Keep:           func(r *http.Request, status int) bool { return status == http.StatusOK },
	}
	serveLong := func(keep bool) (*Server, string) {
		s := New(http.HandlerFunc(long), opts)
		s.conns.keep = keep
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		t.Cleanup(func() { s.Close() })
		return s, "http://" + l.Addr().String()
	}
	busy := func(url string, n int) {
		addr := url[len("http://"):]
		stop := make(chan struct{})
		var wg sync.WaitGroup
		t.Cleanup(func() { close(stop); wg.Wait() })
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c, err := net.DialTimeout("tcp", addr, time.Second)
					if err == nil {
						io.WriteString(c, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n")
						done := make(chan struct{})
						go func() { c.Read(make([]byte, 1)); close(done) }()
						select {
						case <-stop:
						case <-done:
						}
						c.Close()
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
		}
	}
	renew := func(c *http.Client, url string) (time.Duration, error) {
		start := time.Now()
		resp, err := c.Post(url+"/renew", "application/json", strings.NewReader("{}"))
		if err != nil {
			return time.Since(start), err
		}
		io.ReadAll(resp.Body) // read whole, so that the connection can be used again
		resp.Body.Close()
		return time.Since(start), nil
	}

	s, url := serveLong(false)
	kept := &http.Client{Timeout: 3 * time.Second}
	if _, err := renew(kept, url); err != nil {
		t.Fatal(err)
	}
	busy(url, 3*maxConns)
	flood(t, url, 3*maxConns, false)
	fresh := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		full(t, s, maxConns, "the floods to fill the cap again")
		took, err := renew(fresh, url)
		if err != nil {
			t.Fatalf("priority request %d on a new connection: %v", i, err)
		}
		keptTook, err := renew(kept, url)
		if err != nil {
			t.Fatalf("priority request %d on the kept connection: %v", i, err)
		}
		t.Logf("priority request %d answered in %v on a new connection, %v on the kept one", i, took.Round(time.Millisecond), keptTook.Round(time.Millisecond))
		if n := s.Open(); n > maxConns {
			t.Fatalf("%d connections open, over the cap of %d", n, maxConns)
		}
	}
	if s.Shed() == 0 {
		t.Error("no busy connection was closed: the floods did not fill the cap")
	}

	ctl, ctlURL := serveLong(true)
	busy(ctlURL, 3*maxConns)
	// Every connection under the cap now waits on a /long request that
	// never ends, and none is closed to make room: the priority request
	// can never be served, and the second it is given only bounds the test.
	full(t, ctl, maxConns, "the busy connections to fill the control's cap")
	short := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := renew(short, ctlURL); err == nil {
		t.Fatal("with busy connections kept at the cap, a priority request was still served: the control shows nothing")
	}
}

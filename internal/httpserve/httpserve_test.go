package httpserve

import (
	"context"
	"io"
	"net"
	"net/http"
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

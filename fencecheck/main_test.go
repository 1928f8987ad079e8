package fencecheck_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fencecheck"
	"github.com/seqd/seqd/internal/clockstep"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/testenv"
)

// The tests and the example run against a real daemon: one ZooKeeper
// (testenv) and one Service serving its HTTP API on loopback, at
// daemonAddr.
var daemonAddr string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	clockstep.Watch()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start ZooKeeper:", err)
		return 1
	}
	defer zk.Stop()
	svc := sequencer.New(sequencer.Config{Servers: zk.Servers(), Root: "/fencecheck-test", SessionTimeout: 4 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err := svc.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "start the daemon:", err)
		return 1
	}
	defer svc.Close(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: httpapi.NewHandler(svc, httpapi.HandlerOptions{})}
	go srv.Serve(ln)
	defer srv.Close()
	daemonAddr = "http://" + ln.Addr().String()
	return m.Run()
}

// daemon is a Grantor over the test's daemon.
func daemon(t testing.TB) *client.Client {
	c, err := client.New(daemonAddr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kv is a small fenced key-value resource, the kind a user tests: PUT,
// GET and DELETE on /kv/{key}, the token in the Fencing-Token header, each
// checked by a fence.Fence. Its fence and values live outside the server,
// so that a restart (a new server on the same address) keeps them, as a
// store's disk would.
type kv struct {
	// strictLess is the classic mistake: a token must be above the max,
	// so that the holder's own second write is refused.
	strictLess bool

	mu    sync.Mutex
	fence *fence.Fence
	vals  map[string]string
	addr  string
	srv   *http.Server
}

func (s *kv) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Path[len("/kv/"):]
	tok, err := fence.ParseToken(r.Header.Get("Fencing-Token"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.strictLess && tok <= s.fence.Max(key) {
		http.Error(w, "stale token", http.StatusConflict)
		return
	}
	if err := s.fence.Admit(key, tok); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	switch r.Method {
	case http.MethodPut:
		var b [256]byte
		n, _ := r.Body.Read(b[:])
		s.vals[key] = string(b[:n])
	case http.MethodGet:
		fmt.Fprint(w, s.vals[key])
	case http.MethodDelete:
		delete(s.vals, key)
	}
}

// start serves s on a free loopback port, or on its address again after a
// restart.
func (s *kv) start() error {
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.addr, s.srv = ln.Addr().String(), &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return nil
}

// restart stops the server and starts a new one on the same address.
func (s *kv) restart(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return err
	}
	return s.start()
}

func startKV(t testing.TB, s *kv) *kv {
	s.fence, s.vals = fence.New(nil), map[string]string{}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// config describes s to a run.
func (s *kv) config(c *client.Client) fencecheck.Config {
	u := "http://" + s.addr + "/kv/{key}"
	return fencecheck.Config{
		Write:       fencecheck.Request{URL: u, Body: "{value}"},
		Read:        fencecheck.Request{URL: u},
		Delete:      fencecheck.Request{URL: u},
		TokenHeader: "Fencing-Token",
		Grants:      fencecheck.Daemon(c),
		Restart:     s.restart,
	}
}

func newFence() *fence.Fence { return fence.New(nil) }

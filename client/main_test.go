package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/clockstep"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/testenv"
)

// The tests and examples of this package run against a real daemon: one
// ZooKeeper (testenv) and one Service serving its HTTP API on loopback,
// whose address is in SEQD_ADDR, as a sidecar's would be.
var daemon struct {
	addr string
	zk   *testenv.Cluster
	svc  *sequencer.Service
}

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
	svc := sequencer.New(sequencer.Config{Servers: zk.Servers(), SessionTimeout: 4 * time.Second, Logger: slog.New(slog.DiscardHandler)})
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
	daemon.addr, daemon.zk, daemon.svc = "http://"+ln.Addr().String(), zk, svc
	for _, v := range []string{"SEQD_API_TOKEN_FILE", "SEQD_CACERT", "SEQD_CERT", "SEQD_KEY"} {
		os.Unsetenv(v)
	}
	os.Setenv("SEQD_ADDR", daemon.addr)
	return m.Run()
}

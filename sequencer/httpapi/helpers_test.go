package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/testenv/zktest"
)

// One standalone ZooKeeper for the package's tests. The daemon's tests
// through HTTP (in package sequencer_test) have their own: these are the
// ones that need the handler's insides.
var sharedZK zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	sharedZK.Close()
	os.Exit(code)
}

// rootOf is the lock root of the test's Service.
func rootOf(tb testing.TB) string {
	return "/seqd-test/httpapi/" + strings.ReplaceAll(tb.Name(), "/", "_")
}

// startService starts a Service on the shared ZooKeeper, under the test's
// own root (rootOf), closed at cleanup.
func startService(tb testing.TB) *sequencer.Service {
	tb.Helper()
	svc := sequencer.New(sequencer.Config{
		Servers: sharedZK.Get(tb).Servers(),
		Root:    rootOf(tb),
		Metrics: metrics.New(prometheus.NewRegistry(), metrics.Options{}),
	})
	if err := svc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// discard is a logger that keeps nothing.
var discard = slog.New(slog.DiscardHandler)

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// httpDoWith is httpDo with headers ("Host" sets the request's Host).
func httpDoWith(t testing.TB, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	return httptry.Do(t, method, url, body, headers)
}

// serve is the URL of a test server of a handler over svc with opts.
func serve(tb testing.TB, svc *sequencer.Service, opts HandlerOptions) string {
	srv := httptest.NewServer(NewHandler(svc, opts))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// zkChildren lists a node's children with a plain go-zookeeper
// connection of its own.
func zkChildren(tb testing.TB, path string) []string {
	tb.Helper()
	conn, _, err := zk.Connect(sharedZK.Get(tb).Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	ch, _, err := conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		tb.Fatal(err)
	}
	return ch
}

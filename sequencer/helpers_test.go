package sequencer_test

// Helpers shared by the package's tests and benchmarks.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// One standalone ZooKeeper for the tests that do not break it.
var sharedZK zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	sharedZK.Close()
	os.Exit(code)
}

// daemon is a Service with its HTTP API on a test server.
type daemon struct {
	svc    tsvc
	reg    *prometheus.Registry
	srv    *httptest.Server
	client *tclient
}

type daemonOpts struct {
	servers []string
	clock   zklock.Clock
	mode    zklock.TokenMode
	timeout time.Duration
	root    string
	reg     *prometheus.Registry // default a bare registry
	mopts   metrics.Options
	logger  *slog.Logger // default the test log
	signer  *fence.Signer
	// campaigns are the daemon's own; their elections live under
	// <root>.elections (semaphores under <root>.semaphores).
	campaigns []sequencer.Candidate
	identity  string
	zkAuth    *zklock.DigestAuth
	zkTLS     *tls.Config
	delay     time.Duration // the daemon's lock-delay
	// apiToken and adminToken are the handler's; audit the service's
	// audit log.
	apiToken, adminToken string
	audit                *sequencer.AuditLog
	// authority names callers and holds the policy; default one with
	// adminToken alone.
	authority *policy.Authority
}

func startDaemon(t testing.TB, o daemonOpts) *daemon {
	t.Helper()
	if o.reg == nil {
		o.reg = prometheus.NewRegistry()
	}
	if o.timeout == 0 {
		o.timeout = 10 * time.Second
	}
	if o.root == "" {
		o.root = "/seqd-test/" + strings.ReplaceAll(t.Name(), "/", "_")
	}
	if o.logger == nil {
		o.logger = testLogger(t)
	}
	if o.authority == nil && o.adminToken != "" {
		o.authority = policy.NewAuthority(policy.AuthorityOptions{AdminToken: o.adminToken})
	}
	svc := sequencer.New(sequencer.Config{
		Servers:        o.servers,
		Root:           o.root,
		SessionTimeout: o.timeout,
		TokenMode:      o.mode,
		Metrics:        metrics.New(o.reg, o.mopts),
		Clock:          o.clock,
		Logger:         o.logger,
		Signer:         o.signer,
		SemaphoreRoot:  o.root + ".semaphores",
		ElectionRoot:   o.root + ".elections",
		Campaigns:      o.campaigns,
		Identity:       o.identity,
		ZKAuth:         o.zkAuth,
		ZKTLS:          o.zkTLS,
		LockDelay:      o.delay,
		Audit:          o.audit,
		Authority:      o.authority,
	})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.HandlerOptions{Gatherer: o.reg, APIToken: o.apiToken}))
	t.Cleanup(func() {
		srv.Close()
		svc.Close(context.Background())
	})
	return &daemon{svc: tsvc{svc}, reg: o.reg, srv: srv, client: newTClient(srv.URL)}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// counter reads one series of a counter vector from the registry.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// counterWant is one series of a counter vector and its expected value.
type counterWant struct {
	name   string
	labels map[string]string
	want   float64
}

// wantCounters checks each series' value in the registry.
func wantCounters(t testing.TB, reg *prometheus.Registry, ws []counterWant) {
	t.Helper()
	for _, c := range ws {
		if got := counter(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func wantConflict(t testing.TB, err error, code string, current uint64) {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != code {
		t.Fatalf("got %v, want 409 %s", err, code)
	}
	if current != 0 && (ae.CurrentToken == nil || *ae.CurrentToken != current) {
		t.Fatalf("current_token = %v, want %d", ae.CurrentToken, current)
	}
}

// zkConn is a plain go-zookeeper connection with a session, closed at
// cleanup.
func zkConn(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	conn, ev, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session with %v within 30s", servers)
		}
	}
}

// zkChildren lists a node's children with a plain go-zookeeper connection.
func zkChildren(t testing.TB, servers []string, path string) []string {
	t.Helper()
	ch, _, err := zkConn(t, servers).Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return ch
}

// wantStaleEverywhere has c renew, release and check old after the lock has
// moved on to current: each must be a 409 stale_token naming current. It
// returns the check's answer.
func wantStaleEverywhere(t testing.TB, ctx context.Context, c *tclient, old Lease, current uint64) CheckResponse {
	t.Helper()
	_, err := c.Renew(ctx, old.Name, old.LeaseID, old.Token, 0)
	wantConflict(t, err, CodeStaleToken, current)
	err = c.Release(ctx, old.Name, old.LeaseID, old.Token)
	wantConflict(t, err, CodeStaleToken, current)
	res, err := c.Check(ctx, old.Name, old.Token)
	wantConflict(t, err, CodeStaleToken, current)
	return res
}

// newFakeClock is a fake clock at a fixed instant, for tests that replay
// time.
func newFakeClock() *clock.Fake {
	return clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// httpDo sends one request and returns status and body.
func httpDo(t testing.TB, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func isStatus(err error, status int) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Status == status
}

// testLogger sends logs to t.Log (kept only for failing tests).
func testLogger(t testing.TB) *slog.Logger {
	w := &tWriter{t: t}
	// go-zookeeper's goroutines may log after the session is closed: stop
	// passing lines to t once the test is over.
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func httpTestServer(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// httpDoWith is httpDo with headers ("Host" sets the request's Host).
func httpDoWith(t testing.TB, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	return httptry.Do(t, method, url, body, headers)
}

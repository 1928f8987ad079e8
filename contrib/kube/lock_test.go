package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/contrib/kube"
)

// Timers long enough that client-go's own never end a leadership during a
// test: what ends it is the seqd lease.
const (
	slowLease = 20 * time.Second
	slowRenew = 15 * time.Second
)

// leadership runs an elector on lock and returns the context its
// OnStartedLeading got, and a function that stops the elector and waits for
// its Run to return.
type leadership struct {
	ctx     context.Context
	stopped chan struct{} // closed when Run has returned
	stop    func()
}

func lead(t *testing.T, lock *kube.Lock, retry time.Duration) *leadership {
	t.Helper()
	leading := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: slowLease, RenewDeadline: slowRenew, RetryPeriod: retry, ReleaseOnCancel: true,
		Callbacks: lock.Callbacks(leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading <- ctx
				<-ctx.Done()
			},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &leadership{stopped: make(chan struct{})}
	go func() {
		defer close(l.stopped)
		le.Run(ctx)
	}()
	l.stop = func() {
		cancel()
		<-l.stopped
	}
	t.Cleanup(l.stop)
	select {
	case l.ctx = <-leading:
	case <-time.After(30 * time.Second):
		t.Fatal("not leading within 30s")
	}
	return l
}

func newLock(t *testing.T, c *client.Client, cfg kube.Config) *kube.Lock {
	t.Helper()
	cfg.Client = c
	lock, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// TestLeadershipEndsWhenTheDaemonEndsIt: an operator breaks the leader's
// seqd lease; the leader's context ends with that as its cause while
// client-go's elector, whose timers are long, still runs. The elector's
// next run campaigns again and leads in a higher term.
func TestLeadershipEndsWhenTheDaemonEndsIt(t *testing.T) {
	const adminToken = "kube-test-admin-token-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := startDaemon(t, "--admin-token-file", tokenFile)
	c, err := client.New(daemon, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	operator, err := client.New(daemon, client.WithoutEnv(), client.WithAPIToken(adminToken))
	if err != nil {
		t.Fatal(err)
	}
	const election = "kube-broken"
	lock := newLock(t, c, kube.Config{Election: election, Identity: "pod-0", TTL: slowLease})
	l := lead(t, lock, 300*time.Millisecond)
	term, ok := kube.TermFrom(l.ctx)
	if !ok || term.Number == 0 || term.Identity != "pod-0" || term.Election != election || !strings.HasPrefix(term.Sequencer, "election:"+election+"@") {
		t.Fatalf("the leader's term: %+v, %v", term, ok)
	}
	if got, _ := lock.Term(); got != term {
		t.Errorf("lock.Term() = %+v, want the callback's %+v", got, term)
	}
	if _, err := operator.Break(context.Background(), api.Elections, election, "kube test", term.Number); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.ctx.Done():
	case <-l.stopped:
		t.Fatal("the elector stopped before the leader's context ended")
	case <-time.After(slowRenew):
		t.Fatal("the leader's context did not end after its lease was broken")
	}
	if cause := context.Cause(l.ctx); !errors.Is(cause, client.ErrBroken) {
		t.Errorf("the leader's context ended with %v, want the broken lease (client.ErrBroken)", cause)
	}
	select {
	case <-l.stopped:
		t.Error("client-go's elector had stopped already: the test shows nothing about the seqd lease")
	default:
	}
	if _, ok := lock.Term(); ok {
		t.Error("lock.Term() still reports a term after the lease was broken")
	}
	l.stop()

	again := lead(t, lock, 300*time.Millisecond)
	next, _ := kube.TermFrom(again.ctx)
	if next.Number <= term.Number {
		t.Errorf("the next run leads in term %d after term %d: terms must rise", next.Number, term.Number)
	}
}

// TestLeadershipEndsAtTheLeaseDeadline: on the Lock's clock the seqd lease's
// TTL passes with no renewal confirmed (the elector renews every 10s); the
// leader's context ends with ErrExpired, although the daemon, on its own
// clock, still names it the leader: it stops before anyone else can lead.
func TestLeadershipEndsAtTheLeaseDeadline(t *testing.T) {
	c, err := client.New(startDaemon(t), client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	const election = "kube-deadline"
	clk := clocktesting.NewFakeClock(time.Now())
	lock := newLock(t, c, kube.Config{Election: election, Identity: "pod-0", TTL: slowLease, Clock: clk})
	l := lead(t, lock, 10*time.Second)
	term, _ := kube.TermFrom(l.ctx)

	clk.Step(slowLease - time.Millisecond)
	if l.ctx.Err() != nil {
		t.Fatalf("the leader's context ended before its TTL passed: %v", context.Cause(l.ctx))
	}
	clk.Step(time.Millisecond)
	select {
	case <-l.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's context did not end once the TTL had passed on the Lock's clock")
	}
	if cause := context.Cause(l.ctx); !errors.Is(cause, kube.ErrExpired) {
		t.Errorf("the leader's context ended with %v, want kube.ErrExpired", cause)
	}
	st, err := c.Election(context.Background(), election)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader == nil || st.Leader.Term != term.Number {
		t.Errorf("the daemon's leader: %+v, want still term %d: the leader must stop first", st.Leader, term.Number)
	}
}

// TestLockRefusesWhatItCannotDo: a Lock writes only its own identity, and
// New refuses a config it cannot run.
func TestLockRefusesWhatItCannotDo(t *testing.T) {
	c, err := client.New("http://127.0.0.1:1", client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  kube.Config
		want string
	}{
		{kube.Config{Identity: "a"}, "names no election"},
		{kube.Config{Election: "e"}, "Identity is empty"},
		{kube.Config{Election: "e", Identity: "a", TTL: 100 * time.Millisecond}, "outside"},
	} {
		tc.cfg.Client = c
		if _, err := kube.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	lock := newLock(t, c, kube.Config{Election: "e", Identity: "a"})
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "b"}); err == nil {
		t.Error("the lock of a made b the leader")
	}
	if got := lock.Describe(); got != "seqd election e at http://127.0.0.1:1" {
		t.Errorf("Describe() = %q", got)
	}
}

// TestTransportStampsTheTerm: a request is sent with its context's term in
// Fencing-Sequencer, the caller's request left as it was; a request whose
// context carries no term is not sent at all.
func TestTransportStampsTheTerm(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(kube.HeaderSequencer)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: kube.Transport(nil)}
	term := kube.Term{Election: "e", Identity: "a", Number: 12, Sequencer: "election:e@12"}

	req, _ := http.NewRequestWithContext(kube.WithTerm(context.Background(), term), http.MethodPut, srv.URL, strings.NewReader("v"))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-got; h != "election:e@12" {
		t.Errorf("the resource got %s: %q, want election:e@12", kube.HeaderSequencer, h)
	}
	if req.Header.Get(kube.HeaderSequencer) != "" {
		t.Error("Transport changed the caller's request")
	}

	req, _ = http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("v"))
	if _, err := hc.Do(req); !errors.Is(err, kube.ErrNoTerm) {
		t.Errorf("a request without a term: %v, want kube.ErrNoTerm", err)
	}
	select {
	case h := <-got:
		t.Errorf("a request without a term reached the resource (with %q)", h)
	default:
	}

	h := http.Header{}
	kube.StampToken(h, term)
	if h.Get(kube.HeaderToken) != "12" {
		t.Errorf("StampToken: %v", h)
	}
}

// lyingProxy stands between a Lock and its daemon and makes every lease
// last an hour: it rewrites the ttl of each request and answer to 1h (the
// request too, so that the daemon's own lease outlives the test). It counts
// the answers it rewrote.
func lyingProxy(t *testing.T, daemon string) (addr string, lies *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(daemon)
	if err != nil {
		t.Fatal(err)
	}
	lies = new(atomic.Int64)
	rewrite := func(body io.ReadCloser) ([]byte, bool) {
		raw, _ := io.ReadAll(body)
		body.Close()
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m["ttl"] == nil {
			return raw, false
		}
		m["ttl"] = "1h0m0s"
		if _, ok := m["expires_at"]; ok {
			m["expires_at"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
		}
		out, _ := json.Marshal(m)
		return out, true
	}
	p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		if r := pr.Out; r.Body != nil {
			b, _ := rewrite(r.Body)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
	}}
	p.ModifyResponse = func(resp *http.Response) error {
		b, lied := rewrite(resp.Body)
		if lied {
			lies.Add(1)
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL, lies
}

// TestTermEndsAtItsOwnTTLWhateverTheDaemonSays: a daemon (here a proxy)
// answers a 2s campaign and its renewal with ttl 1h; the term still ends 2s
// after each was sent, on the Lock's clock, as it would with an honest
// daemon: a lie cannot keep an old leader's context live beside the next.
func TestTermEndsAtItsOwnTTLWhateverTheDaemonSays(t *testing.T) {
	proxy, lies := lyingProxy(t, startDaemon(t))
	c, err := client.New(proxy, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "pod-0"}
	lease := func(t *testing.T, election string) (*clocktesting.FakeClock, *kube.Lock, context.Context) {
		clk := clocktesting.NewFakeClock(time.Now())
		lock := newLock(t, c, kube.Config{Election: election, Identity: "pod-0", TTL: ttl, Clock: clk})
		if err := lock.Update(context.Background(), mine); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := lock.Leading(context.Background())
		t.Cleanup(cancel)
		return clk, lock, ctx
	}
	ends := func(t *testing.T, clk *clocktesting.FakeClock, ctx context.Context, after time.Duration) {
		t.Helper()
		clk.Step(after - time.Millisecond)
		if ctx.Err() != nil {
			t.Fatalf("the term ended %v early: %v", time.Millisecond, context.Cause(ctx))
		}
		clk.Step(time.Millisecond)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the term outlived its own TTL of %v on the Lock's clock: it took the daemon's 1h", ttl)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, kube.ErrExpired) {
			t.Errorf("the term ended with %v, want kube.ErrExpired", cause)
		}
	}
	t.Run("campaign", func(t *testing.T) {
		clk, _, ctx := lease(t, "kube-lie-campaign")
		ends(t, clk, ctx, ttl)
	})
	t.Run("renewal", func(t *testing.T) {
		clk, lock, ctx := lease(t, "kube-lie-renewal")
		clk.Step(ttl / 2)
		if err := lock.Update(context.Background(), mine); err != nil {
			t.Fatal(err)
		}
		ends(t, clk, ctx, ttl)
	})
	if lies.Load() < 3 {
		t.Fatalf("the proxy rewrote %d answers, want the 2 campaigns and the renewal", lies.Load())
	}
}

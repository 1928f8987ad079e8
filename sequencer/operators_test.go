package sequencer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv/zktest"
)

const (
	testAPIToken   = "api-token-0123456789abcdef"
	testAdminToken = "admin-token-0123456789abcdef"
)

// auditLog is an audit log's writer that a test reads.
type auditLog struct{ zktest.Buffer }

func (b *auditLog) events(t *testing.T) []sequencer.AuditEvent {
	t.Helper()
	var out []sequencer.AuditEvent
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var e sequencer.AuditEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// kazooWaiter is kazoo's Lock waiting on path (zklock/testdata/kazoo_lock.py
// in hold mode): it holds once granted, until the test ends.
func kazooWaiter(t *testing.T, hosts, path string) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Fatalf("kazoo not installed (%v %s); apt-get install python3-kazoo, as make test does", err, out)
	}
	cmd := exec.Command("/usr/bin/python3", "../zklock/testdata/kazoo_lock.py", "hold", hosts, path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // drain
		s := bufio.NewScanner(out)
		for s.Scan() {
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("kazoo stderr: %s", stderr.String())
		}
	})
}

// The queue shows seqd's waiters and kazoo's in the order they queued,
// behind the holder, with their owners and clients.
func TestQueueInOrderAcrossClients(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	cl, _ := client.New(d.srv.URL, client.WithoutEnv())
	const name = "queue/mixed"
	holder, err := cl.Acquire(ctx, name, client.Owner("holder"), client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	queued := func(n int) api.LockStatus {
		t.Helper()
		var st api.LockStatus
		zktest.Eventually(t, 20*time.Second, "waiters queued", func() bool {
			st, err = cl.Status(ctx, name)
			return err == nil && len(st.Queue) == n
		})
		return st
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	waitFor := func(owner string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.Acquire(wctx, name, client.Owner(owner), client.TTL(time.Minute), client.Wait(time.Minute))
		}()
	}
	waitFor("first")
	queued(1)
	kazooWaiter(t, zkc.ConnectString(), "/seqd-test/"+strings.ReplaceAll(t.Name(), "/", "_")+"/"+name)
	queued(2)
	waitFor("third")
	st := queued(3)

	if len(st.Holding) != 1 || st.Holding[0].Owner != "holder" || st.Holding[0].Token != holder.Token || st.Holding[0].Client != "seqd" || st.Holding[0].ExpiresAt == nil {
		t.Fatalf("holding = %+v, want the holder with token %d and its expiry", st.Holding, holder.Token)
	}
	want := []struct{ owner, client string }{{"first", "seqd"}, {"kazoo-interop", "kazoo"}, {"third", "seqd"}}
	for i, w := range want {
		q := st.Queue[i]
		if q.Owner != w.owner || q.Client != w.client || q.Mode != api.ModeExclusive || q.Token != 0 {
			t.Errorf("queue[%d] = %+v, want owner %q client %q mode exclusive, no token", i, q, w.owner, w.client)
		}
		if i > 0 && q.Since.Before(st.Queue[i-1].Since) {
			t.Errorf("queue[%d] queued at %v, before queue[%d] at %v", i, q.Since, i-1, st.Queue[i-1].Since)
		}
		if (q.Client == "seqd") != (q.Daemon != "") {
			t.Errorf("queue[%d] daemon %q: seqd's waiters name their daemon, kazoo's none", i, q.Daemon)
		}
	}
}

// A break needs the admin token: the API token gets 403, a daemon without
// an admin token refuses every break; with it the holder's contender goes,
// its renew answers broken with the reason, the next holder's token is
// higher, and the audit log holds the grant, the break and the release.
func TestBreak(t *testing.T) {
	zkc := sharedZK.Get(t)
	var audit auditLog
	reg := prometheus.NewRegistry()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), apiToken: testAPIToken, adminToken: testAdminToken, audit: sequencer.NewAuditLog(&audit, nil), reg: reg, identity: "daemon-1"})
	ctx := ctxT(t, time.Minute)
	userc, _ := client.New(d.srv.URL, client.WithoutEnv(), client.WithAPIToken(testAPIToken))
	admin, _ := client.New(d.srv.URL, client.WithoutEnv(), client.WithAPIToken(testAdminToken))
	const name = "break/me"

	held, err := userc.Acquire(ctx, name, client.Owner("stuck"), client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan api.Lease, 1)
	go func() {
		l, err := userc.Acquire(ctx, name, client.Owner("next"), client.TTL(time.Minute), client.Wait(time.Minute))
		if err != nil {
			t.Errorf("the waiter: %v", err)
		}
		next <- l
	}()
	zktest.Eventually(t, 20*time.Second, "the waiter queued", func() bool {
		st, err := userc.Status(ctx, name)
		return err == nil && len(st.Queue) == 1
	})

	_, err = userc.Break(ctx, api.Locks, name, "stuck", 0)
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != api.CodeForbidden || !strings.Contains(ae.Message, "admin token") {
		t.Fatalf("break with the API token: %v, want 403 forbidden naming the admin token", err)
	}
	_, err = admin.Break(ctx, api.Locks, name, "", 0)
	if !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("break without a reason: %v, want 400", err)
	}
	_, err = admin.Break(ctx, api.Locks, name, "stuck", held.Token+1000)
	if !errors.As(err, &ae) || ae.Code != api.CodeNotHeld || ae.CurrentToken == nil || *ae.CurrentToken != held.Token {
		t.Fatalf("break of another token: %v, want 409 not_held with current token %d", err, held.Token)
	}
	if st, _ := userc.Status(ctx, name); !st.Held || st.Token != held.Token {
		t.Fatalf("a refused break changed the lock: %+v", st)
	}

	res, err := admin.Break(ctx, api.Locks, name, "stuck for an hour, ticket 42", held.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Broken || res.Token != held.Token || res.Holder.Owner != "stuck" {
		t.Fatalf("break answered %+v, want the holder with token %d", res, held.Token)
	}
	got := <-next
	if got.Token <= held.Token {
		t.Fatalf("next token %d, want above the broken %d", got.Token, held.Token)
	}
	_, err = userc.Renew(ctx, held, 0)
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != api.CodeBroken || ae.Reason != "stuck for an hour, ticket 42" {
		t.Fatalf("renew of the broken lease: %v, want 409 broken with the reason", err)
	}
	if !errors.Is(err, api.ErrLost) || !errors.Is(err, api.ErrBroken) {
		t.Errorf("renew error %v matches neither ErrLost nor ErrBroken", err)
	}
	if err := userc.Release(ctx, got); err != nil {
		t.Fatal(err)
	}

	var lines []string
	for _, e := range audit.events(t) {
		lines = append(lines, strings.TrimSpace(e.Event+" "+e.Owner+" "+e.Reason))
		if e.Name != name || e.Kind != "lock" || e.Daemon != "daemon-1" || e.Time.IsZero() {
			t.Errorf("audit event %+v: want lock %q on daemon-1 with a time", e, name)
		}
		switch {
		case e.Owner == "stuck" && e.Token != held.Token, e.Owner == "next" && e.Token != got.Token:
			t.Errorf("audit event %+v has the wrong token", e)
		}
	}
	want := map[string]bool{"grant stuck": true, "grant next": true, "break stuck stuck for an hour, ticket 42": true, "release next": true}
	for _, l := range lines {
		delete(want, l)
	}
	if len(want) != 0 || len(lines) != 4 {
		t.Errorf("audit lines %q, missing %v", lines, want)
	}

	// Histograms: both grants waited, and both holds ended.
	if n := testutil.CollectAndCount(reg, "seqd_lock_wait_seconds", "seqd_lock_hold_seconds"); n != 2 {
		t.Errorf("%d histogram series, want 2 (one lock each)", n)
	}
	wantSamples(t, reg, "seqd_lock_wait_seconds", name, 2)
	wantSamples(t, reg, "seqd_lock_hold_seconds", name, 2)
	if problems, err := testutil.GatherAndLint(reg, "seqd_lock_wait_seconds", "seqd_lock_hold_seconds"); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	// A daemon without an admin token refuses every break.
	bare := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	cl, _ := client.New(bare.srv.URL, client.WithoutEnv(), client.WithAPIToken(testAdminToken))
	_, err = cl.Break(ctx, api.Locks, name, "stuck", 0)
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, "--admin-token-file") {
		t.Fatalf("break on a daemon without an admin token: %v, want 403 naming --admin-token-file", err)
	}
}

// wantSamples checks the sample count of a histogram's series for lock.
func wantSamples(t *testing.T, reg *prometheus.Registry, metric, lock string, n uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "lock" && l.GetValue() == lock {
					if got := m.GetHistogram().GetSampleCount(); got != n {
						t.Errorf("%s{lock=%q} observed %d times, want %d", metric, lock, got, n)
					}
					return
				}
			}
		}
	}
	t.Errorf("%s{lock=%q} missing", metric, lock)
}

// The overview lists every lock under the root with its holder, and a
// blocking overview answers when a lock is released.
func TestOverview(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	cl, _ := client.New(d.srv.URL, client.WithoutEnv())
	a, err := cl.Acquire(ctx, "ov/a", client.Owner("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Acquire(ctx, "ov/deeper/b", client.Owner("b")); err != nil {
		t.Fatal(err)
	}
	o, err := cl.Overview(ctx, api.Locks, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Locks) != 2 || o.Locks[0].Name != "ov/a" || o.Locks[1].Name != "ov/deeper/b" || !o.Locks[0].Held || o.Locks[0].Holding[0].Owner != "a" || o.Index == 0 {
		t.Fatalf("overview %+v, want ov/a and ov/deeper/b held", o)
	}
	// Blocking: settle on an index, then release and see it change. A
	// blocking overview answers once its locks' states are read and its
	// index differs from the one given: given one no overview has (1), it
	// answers the settled index as soon as there is one.
	if o, err = cl.Overview(ctx, api.Locks, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	done := make(chan api.Overview, 1)
	go func() {
		got, err := cl.Overview(ctx, api.Locks, o.Index, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	if err := cl.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got.Index == o.Index {
			t.Fatalf("blocking overview answered the same index %d", got.Index)
		}
		for _, st := range got.Locks {
			if st.Name == "ov/a" && st.Held {
				t.Fatalf("ov/a still held after its release: %+v", got)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking overview did not answer the release")
	}
	code, body := httpDo(t, http.MethodGet, d.srv.URL+"/v1/locks?all=2", "")
	if code != http.StatusBadRequest || !strings.Contains(body, "all takes the value 1") {
		t.Errorf("?all=2: %d %s", code, body)
	}
	code, body = httpDo(t, http.MethodGet, d.srv.URL+"/ui/", "")
	if code != http.StatusOK || !strings.Contains(body, "<title>seqd status</title>") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Errorf("/ui/: %d, want the page with no external assets", code)
	}
}

// A blocking overview's wait runs on the service's clock: held still, it
// has not answered after more real time than the wait; moved past the wait,
// it answers with the index it was given.
func TestBlockingOverviewWaitsOnTheServiceClock(t *testing.T) {
	zkc := sharedZK.Get(t)
	clk := newFakeClock()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), clock: clk})
	ctx := ctxT(t, time.Minute)
	cl, _ := client.New(d.srv.URL, client.WithoutEnv())
	if _, err := cl.Acquire(ctx, "ovclock/a", client.Owner("a")); err != nil {
		t.Fatal(err)
	}
	o, err := cl.Overview(ctx, api.Locks, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const wait = time.Second
	done := make(chan error, 1)
	var got api.Overview
	go func() {
		var err error
		got, err = cl.Overview(ctx, api.Locks, o.Index, wait)
		done <- err
	}()
	// The clock is held still, so the overview's wait ends exactly wait
	// from now: once a timer is due then, it has listed and is waiting.
	armed := make(chan bool, 1)
	go func() { armed <- clk.WaitTimerAt(clk.Now().Add(wait), ctx.Done()) }()
	select {
	case err := <-done:
		t.Fatalf("the blocking overview answered (%v, index %d) with the clock held still", err, got.Index)
	case ok := <-armed:
		if !ok {
			t.Fatal("the blocking overview set no timer on the service clock for its wait")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the blocking overview answered (%v, index %d) with the clock held still", err, got.Index)
	default:
	}
	clk.Advance(wait)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if got.Index != o.Index {
			t.Errorf("nothing changed, yet the overview answered index %d, not %d", got.Index, o.Index)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking overview did not answer once the clock passed its wait")
	}
}

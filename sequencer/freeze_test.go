package sequencer_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestBlockingReadDuringFreeze: ZooKeeper stops answering (SIGSTOP). A
// blocking read that was waiting when it froze, and blocking reads opened
// during the freeze (on the watched name, and on a name nobody watched), and
// a blocking overview of every lock,
// answer 503 within a quarter of the session timeout, not when ZooKeeper
// comes back with a state nobody could vouch for meanwhile; one opened once
// the freeze is known answers at once. After the thaw they are answered
// again.
func TestBlockingReadDuringFreeze(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	const timeout = 4 * time.Second
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), timeout: timeout})
	ctx := ctxT(t, 60*time.Second)
	if _, err := d.svc.Acquire(ctx, "frozen", "A", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	st, err := d.svc.Status(ctx, "frozen")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		what   string
		status int
		body   string
		start  time.Time
		end    time.Time
	}
	answers := make(chan answer, 6)
	var frozen time.Time
	get := func(what, path string) {
		start := time.Now()
		url := d.srv.URL + path
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		a := answer{what: what, start: start}
		if err != nil {
			a.body = err.Error()
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.status, a.body = resp.StatusCode, string(b)
		}
		a.end = time.Now()
		answers <- a
	}
	read := func(what, name string, index uint64) {
		get(what, fmt.Sprintf("/v1/locks/%s?index=%d&wait=60s", name, index))
	}
	check := func(n int) {
		t.Helper()
		for range n {
			select {
			case a := <-answers:
				// From the freeze, or from the read's start if later.
				took := a.end.Sub(a.start)
				if a.start.Before(frozen) {
					took = a.end.Sub(frozen)
				}
				ratio := float64(took) / float64(timeout)
				t.Logf("%s: %d in %v (%.2f of the session timeout) %s", a.what, a.status, took.Round(time.Millisecond), ratio, a.body)
				if a.status != http.StatusServiceUnavailable || ratio > 0.25 {
					t.Errorf("%s: %d after %.2f of the session timeout, want 503 within 0.25", a.what, a.status, ratio)
				}
			case <-time.After(3 * timeout):
				t.Fatalf("blocking reads still open %v into the freeze (session timeout %v)", time.Since(frozen).Round(time.Millisecond), timeout)
			}
		}
	}
	go read("opened before the freeze", "frozen", st.Index)
	// A blocking overview (?all=1) is a blocking read like the others.
	o, err := d.svc.Overview(ctx, api.Locks, true, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	go get("overview opened before the freeze", fmt.Sprintf("/v1/locks?all=1&index=%d&wait=60s", o.Index))
	zktest.Eventually(t, 10*time.Second, "the blocking reads waiting on a state", func() bool {
		// Both subscribed to the lock's state: the overview has listed.
		return d.svc.WatchWaiting() == 2 && d.svc.WatchHasState(fence.KindLock, "frozen") && d.svc.WatchSubscribers(fence.KindLock, "frozen") == 2
	})

	if err := zkc.Members[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer zkc.Members[0].Resume()
	frozen = time.Now()
	go read("opened during the freeze", "frozen", st.Index)
	go read("opened during the freeze, on a name nobody watched", "frozen-other", 0)
	// Its wait ends before the state is read: the plain read it falls
	// back to gets no longer than the watched states do.
	go get("opened during the freeze with a 100ms wait, on a name nobody watched", "/v1/locks/frozen-short?index=0&wait=100ms")
	check(5)
	// ZooKeeper is now known not to answer: a new read need not wait.
	frozen = time.Now()
	go read("opened once the freeze was known", "frozen", st.Index)
	check(1)

	// ZooKeeper thaws: blocking reads are answered again.
	if err := zkc.Members[0].Resume(); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 3*timeout, "a blocking read answered after the thaw", func() bool {
		_, err := d.svc.WaitLock(ctx, "frozen", 0, time.Second)
		return err == nil
	})
}

package sequencer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/client"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

func TestElectionBadInput(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, 30*time.Second)
	held, err := d.client.Campaign(ctx, "e", "A", "v", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	u := d.srv.URL
	lease := func(extra string) string {
		return fmt.Sprintf(`{"lease_id":%q,"token":%d%s}`, held.LeaseID, held.Token, extra)
	}
	long := strings.Repeat("v", MaxValueBytes+1)
	for _, tc := range []struct {
		name, method, url, body string
		status                  int
		want                    string
	}{
		{"invalid name", "POST", u + "/v1/elections/a/../b/campaign", `{"owner":"B"}`, 400, `".." segment`},
		{"missing owner", "POST", u + "/v1/elections/x/campaign", `{}`, 400, "owner is required"},
		{"ttl out of range", "POST", u + "/v1/elections/x/campaign", `{"owner":"B","ttl":"2h"}`, 400, "ttl 2h0m0s is out of range"},
		{"wait out of range", "POST", u + "/v1/elections/x/campaign", `{"owner":"B","wait":"11m"}`, 400, "wait 11m0s is out of range"},
		{"unknown field", "POST", u + "/v1/elections/x/campaign", `{"owner":"B","colour":"red"}`, 400, `unknown field "colour"`},
		{"value too long", "POST", u + "/v1/elections/x/campaign", fmt.Sprintf(`{"owner":"B","value":%q}`, long), 400, "longer than 4096"},
		{"proclaim without lease", "POST", u + "/v1/elections/e/proclaim", `{"value":"x"}`, 400, "lease_id is required"},
		{"proclaim too long", "POST", u + "/v1/elections/e/proclaim", lease(fmt.Sprintf(`,"value":%q`, long)), 400, "longer than 4096"},
		{"proclaim unknown field", "POST", u + "/v1/elections/e/proclaim", lease(`,"ttl":"5s"`), 400, `unknown field "ttl"`},
		{"resign with ttl", "POST", u + "/v1/elections/e/resign", lease(`,"ttl":"5s"`), 400, "a release takes no ttl"},
		{"lock lease on an election", "POST", u + "/v1/locks/e/release", lease(""), 400, `is for election "e", not lock "e"`},
		{"leadership of another election", "POST", u + "/v1/elections/f/resign", lease(""), 400, `is for election "e"`},
		{"bad index", "GET", u + "/v1/elections/e?index=abc", "", 400, "must be a decimal integer"},
		{"negative index", "GET", u + "/v1/locks/e?index=-1", "", 400, "must be a decimal integer"},
		{"wait without index", "GET", u + "/v1/elections/e?wait=1s", "", 400, "wait needs an index"},
		{"wait too long", "GET", u + "/v1/elections/e?index=1&wait=11m", "", 400, "wait 11m0s is out of range"},
		{"wait zero", "GET", u + "/v1/locks/e?index=1&wait=0s", "", 400, "out of range"},
		{"wait not a duration", "GET", u + "/v1/locks/e?index=1&wait=5", "", 400, "is not a duration"},
		{"unknown parameter", "GET", u + "/v1/elections/e?index=1&colour=red", "", 400, `unknown query parameter "colour"`},
		{"repeated parameter", "GET", u + "/v1/elections/e?index=1&index=2", "", 400, "appears more than once"},
		{"unknown action", "POST", u + "/v1/elections/e/abdicate", lease(""), 405, `POST needs an action`},
		{"wrong method", "PUT", u + "/v1/elections/e", "", 405, "method PUT is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := httpDo(t, tc.method, tc.url, tc.body)
			var eb ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil {
				t.Fatalf("body %q is not an error object: %v", body, err)
			}
			if status != tc.status || !strings.Contains(eb.Error, tc.want) || eb.Code == "" {
				t.Fatalf("got %d %q, want %d with a sentence containing %q", status, body, tc.status, tc.want)
			}
		})
	}
	// Nothing changed: the one leader with its value and term, the one
	// candidate, no election x.
	st, err := d.client.Election(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if st.Leader == nil || st.Leader.Term != held.Term || st.Leader.Value != "v" || st.Candidates != 1 || !st.Self {
		t.Fatalf("election after bad input = %+v", st)
	}
	if x, err := d.client.Election(ctx, "x"); err != nil || x.Candidates != 0 || x.Leader != nil {
		t.Fatalf("election x after bad input = %+v, %v", x, err)
	}
}

// blockingRead runs a blocking read of an election in the background.
func blockingRead(c *tclient, name string, index uint64, wait time.Duration) <-chan ElectionStatus {
	out := make(chan ElectionStatus, 1)
	go func() {
		st, _ := c.WaitElection(context.Background(), name, index, wait)
		out <- st
	}()
	return out
}

func TestBlockingReadsWake(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	other := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	st, err := d.client.Election(ctx, "wake")
	if err != nil {
		t.Fatal(err)
	}

	// A leader elected through another daemon wakes the reader.
	woke := blockingRead(d.client, "wake", st.Index, 30*time.Second)
	awaitWatching(t, d, 1)
	l, err := other.client.Campaign(ctx, "wake", "B", "10.0.0.2:80", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	elected := time.Now()
	got := <-woke
	wakeLeader := time.Since(elected)
	if got.Leader == nil || got.Leader.Term != l.Term || got.Self || got.Index == st.Index {
		t.Fatalf("woken by the election with %+v", got)
	}

	// So does a proclaimed value, with the term kept.
	woke = blockingRead(d.client, "wake", got.Index, 30*time.Second)
	time.Sleep(50 * time.Millisecond) // let the read block; a read that came late answers at once all the same
	if _, err := other.client.Proclaim(ctx, "wake", l.LeaseID, l.Token, "10.0.0.2:81"); err != nil {
		t.Fatal(err)
	}
	proclaimed := time.Now()
	got = <-woke
	wakeProclaim := time.Since(proclaimed)
	if got.Leader == nil || got.Leader.Value != "10.0.0.2:81" || got.Leader.Term != l.Term {
		t.Fatalf("woken by the proclaim with %+v", got.Leader)
	}

	// Nothing changes: the read answers when its wait passes, with the same
	// state.
	start := time.Now()
	same, err := d.client.WaitElection(ctx, "wake", got.Index, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond || waited > 5*time.Second {
		t.Errorf("a read with wait 300ms answered after %v", waited)
	}
	if same.Index != got.Index || same.Leader == nil || same.Leader.Value != "10.0.0.2:81" {
		t.Fatalf("timed-out read = %+v, want the same state %+v", same, got)
	}
	// The header carries the index.
	resp, err := http.Get(d.srv.URL + "/v1/elections/wake")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get(IndexHeader); h == "" {
		t.Errorf("no %s header", IndexHeader)
	}

	// Locks: a grant through another daemon wakes a blocked status read.
	ls, err := d.client.Status(ctx, "wake-lock")
	if err != nil {
		t.Fatal(err)
	}
	lockWoke := make(chan LockStatus, 1)
	go func() {
		st, _ := d.client.WaitStatus(context.Background(), "wake-lock", ls.Index, 30*time.Second)
		lockWoke <- st
	}()
	awaitWatching(t, d, 2)
	g, err := other.client.Acquire(ctx, "wake-lock", "C", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	lst := <-lockWoke
	wakeLock := time.Since(granted)
	if !lst.Held || lst.Token != g.Token || lst.Owner != "C" {
		t.Fatalf("lock read woken with %+v", lst)
	}
	t.Logf("blocking-read wake-up latency: leader elected %v, value proclaimed %v, lock granted %v", wakeLeader, wakeProclaim, wakeLock)
}

// awaitWatching waits until the daemon watches n names.
func awaitWatching(t *testing.T, d *daemon, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d watched names", n), func() bool { return d.svc.WatchWatching() >= n })
	time.Sleep(20 * time.Millisecond) // the read is subscribed; give its first state a moment
}

// zkReceived is the server's count of requests received.
func zkReceived(t *testing.T, addr string) int64 {
	t.Helper()
	out, err := testenv.FourLetter(addr, "srvr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Received: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	t.Fatalf("no Received: in srvr output %q", out)
	return 0
}

// 1,000 readers blocked on one election cost one watch, not a ZooKeeper
// request each; readers that go away leave nothing behind.
func TestBlockedReadersCost(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	d.svc.SetWatchLinger(100 * time.Millisecond)
	ctx := ctxT(t, 2*time.Minute)
	st, err := d.client.Election(ctx, "crowd")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2000}}
	cc, err := client.New(d.srv.URL, client.WithoutEnv(), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	c := &tclient{cc}
	const readers = 1000
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()
	zkBefore := zkReceived(t, zkc.Servers()[0])

	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.WaitElection(rctx, "crowd", st.Index, 5*time.Minute)
		}()
	}
	zktest.Eventually(t, 30*time.Second, "1000 blocked readers", func() bool {
		return runtime.NumGoroutine()-goroutinesBefore >= 3*readers
	})
	time.Sleep(time.Second)
	zkBlocked := zkReceived(t, zkc.Servers()[0]) - zkBefore
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	goroutinesDuring := runtime.NumGoroutine()
	if n := d.svc.WatchWatching(); n != 1 {
		t.Fatalf("%d names watched for one election's readers, want 1", n)
	}

	// One change wakes them all, for a few requests.
	zkBefore = zkReceived(t, zkc.Servers()[0])
	start := time.Now()
	l, err := d.client.Campaign(ctx, "crowd", "A", "", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	wakeAll := time.Since(start)
	zkWake := zkReceived(t, zkc.Servers()[0]) - zkBefore
	cancel()
	if err := d.client.Resign(ctx, "crowd", l.LeaseID, l.Token); err != nil {
		t.Fatal(err)
	}

	// Readers that went away: the watch ends after its linger and nothing
	// is asked of ZooKeeper any more.
	rctx2, cancel2 := context.WithCancel(ctx)
	var wg2 sync.WaitGroup
	for range 100 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			c.WaitElection(rctx2, "crowd", 0, 5*time.Minute)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	cancel2()
	wg2.Wait()
	zktest.Eventually(t, 10*time.Second, "no name watched once the readers left", func() bool { return d.svc.WatchWatching() == 0 })
	hc.CloseIdleConnections()
	zkIdle := zkReceived(t, zkc.Servers()[0])
	time.Sleep(time.Second)
	if n := zkReceived(t, zkc.Servers()[0]) - zkIdle; n > 3 { // the session's heartbeat at most
		t.Errorf("%d ZooKeeper requests in a second after the readers left", n)
	}
	zktest.Eventually(t, 10*time.Second, "the readers' goroutines to end", func() bool {
		return runtime.NumGoroutine() <= goroutinesBefore+10
	})
	t.Logf("1000 blocked readers: %d ZooKeeper requests while blocked (1s), %.1f KiB heap and %.1f goroutines per reader (client and server side); one change woke all in %v for %d requests",
		zkBlocked, float64(int64(during.HeapAlloc)-int64(before.HeapAlloc))/readers/1024, float64(goroutinesDuring-goroutinesBefore)/readers, wakeAll, zkWake)
}

// Three daemons campaign for themselves: sampled continuously, never two
// report self at once; each Close (a resignation) hands over at once, with
// a higher term.
func TestOwnCampaignsOneSelf(t *testing.T) {
	zkc := sharedZK.Get(t)
	const n = 3
	ds := make([]*daemon, n)
	for i := range ds {
		ds[i] = startDaemon(t, daemonOpts{servers: zkc.Servers(), identity: fmt.Sprintf("d%d", i),
			campaigns: []sequencer.Candidate{{Name: "sidecar", Value: fmt.Sprintf("pod-%d", i)}}})
	}
	s := newSelfSampler(ds, "sidecar")
	defer s.stop()
	ctx := ctxT(t, time.Minute)
	var (
		lastTerm uint64
		alive    = append([]*daemon(nil), ds...)
	)
	for len(alive) > 0 {
		var leader *daemon
		zktest.Eventually(t, 20*time.Second, "a leader", func() bool {
			for _, d := range alive {
				if st, err := d.svc.ElectionStatus(ctx, "sidecar"); err == nil && st.Self {
					leader = d
					return true
				}
			}
			return false
		})
		st, _ := leader.svc.ElectionStatus(ctx, "sidecar")
		if st.Leader.Term <= lastTerm {
			t.Fatalf("term %d after %d", st.Leader.Term, lastTerm)
		}
		lastTerm = st.Leader.Term
		time.Sleep(300 * time.Millisecond) // samples while it leads
		start := time.Now()
		leader.svc.Close(ctx)
		rest := alive[:0]
		for _, d := range alive {
			if d != leader {
				rest = append(rest, d)
			}
		}
		alive = rest
		if len(alive) == 0 {
			break
		}
		zktest.Eventually(t, 20*time.Second, "the next leader", func() bool {
			for _, d := range alive {
				if st, err := d.svc.ElectionStatus(ctx, "sidecar"); err == nil && st.Self {
					return true
				}
			}
			return false
		})
		t.Logf("hand-over after the leader's daemon closed (resigned): %v (session timeout 10s)", time.Since(start))
	}
	if v := s.violations(); v != "" {
		t.Fatal(v)
	}
	t.Logf("%d samples of self", s.samples())
}

// selfSampler asks every daemon "am I leader" continuously and finds
// overlapping runs of self=true.
type selfSampler struct {
	ds   []*daemon
	name string
	done chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	runs [][][2]time.Time // per daemon, the runs of self=true: [first, last] sample time
	open []bool
	n    int
}

func newSelfSampler(ds []*daemon, name string) *selfSampler {
	s := &selfSampler{ds: ds, name: name, done: make(chan struct{}), runs: make([][][2]time.Time, len(ds)), open: make([]bool, len(ds))}
	for i, d := range ds {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				select {
				case <-s.done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				before := time.Now()
				st, err := d.svc.ElectionStatus(ctx, name)
				cancel()
				s.record(i, before, time.Now(), err == nil && st.Self)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return s
}

// record notes a sample of daemon i taken between from and to: a true
// sample extends its run from from to to.
func (s *selfSampler) record(i int, from, to time.Time, self bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	switch {
	case self && s.open[i]:
		s.runs[i][len(s.runs[i])-1][1] = from
	case self:
		s.runs[i] = append(s.runs[i], [2]time.Time{to, to})
		s.open[i] = true
	default:
		s.open[i] = false
	}
}

func (s *selfSampler) stop() {
	close(s.done)
	s.wg.Wait()
}

func (s *selfSampler) samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// violations describes two daemons' runs of self=true that overlap.
func (s *selfSampler) violations() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.runs {
		for j := i + 1; j < len(s.runs); j++ {
			for _, a := range s.runs[i] {
				for _, b := range s.runs[j] {
					if a[0].Before(b[1]) && b[0].Before(a[1]) {
						return fmt.Sprintf("daemons %d and %d both self: %v–%v and %v–%v", i, j, a[0], a[1], b[0], b[1])
					}
				}
			}
		}
	}
	return ""
}

package sequencer_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestWatchesReturnToBaseline: blocking reads on 15,000 names that come and
// go (each read once, briefly) while a few readers wait on held locks all
// along. ZooKeeper's watch count (wchs) stays bounded during the churn and,
// once the churning readers have left, returns to within a constant of
// where it was with only the staying readers, whose reads keep working
// throughout. Before, every name read left a watch on the server for good.
func TestWatchesReturnToBaseline(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	d.svc.SetWatchLinger(100 * time.Millisecond)
	const maxReads = 600 // the churn's 500 readers and the staying ones fit
	d.svc.SetWatchMax(maxReads)
	ctx := ctxT(t, 120*time.Second)
	addr := zkc.Servers()[0]
	before := totalWatches(t, addr)

	// Readers that stay: each waits on a held lock for the whole test.
	const stay = 5
	stayCtx, stopStaying := context.WithCancel(ctx)
	var stayed sync.WaitGroup
	stayErrs := make(chan error, stay)
	for i := range stay {
		name := fmt.Sprintf("stay-%d", i)
		if _, err := d.svc.Acquire(ctx, name, "A", time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		st, err := d.svc.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		stayed.Add(1)
		go func() {
			defer stayed.Done()
			for stayCtx.Err() == nil {
				got, err := d.svc.WaitLock(stayCtx, name, st.Index, time.Minute)
				if stayCtx.Err() != nil {
					return
				}
				if err != nil || got.Index != st.Index {
					stayErrs <- fmt.Errorf("reader of %s: index %d, %v; want its state unchanged (%d)", name, got.Index, err, st.Index)
					return
				}
			}
		}()
	}
	defer func() { stopStaying(); stayed.Wait() }()
	zktest.Eventually(t, 10*time.Second, "the staying readers waiting", func() bool { return d.svc.WatchWaiting() == stay })
	waiting := totalWatches(t, addr)

	// The churn: 15,000 names, each read once for a moment.
	const names, parallel = 15000, 500
	var (
		next   atomic.Int64
		failed atomic.Int64
		unread atomic.Int64
		peak   atomic.Int64
		wg     sync.WaitGroup
	)
	sampled := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			n := totalWatches(t, addr)
			if int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
			select {
			case <-churned:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= names; i = next.Add(1) {
				_, err := d.svc.WaitLock(ctx, fmt.Sprintf("churn/%d", i), 0, 200*time.Millisecond)
				var ue *sequencer.UnavailableError
				switch {
				case errors.As(err, &ue):
					unread.Add(1) // not read within the wait: a 503, as under any load
				case err != nil && failed.Add(1) == 1:
					t.Errorf("a churning read: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	close(churned)
	<-sampled
	t.Logf("%d blocking reads on new names in %v (%d unavailable: not read within their wait)", names, time.Since(start).Round(time.Millisecond), unread.Load())

	// The churning readers have left: their watches must go.
	const slack = 3 * sequencer.RecycleMin // names left behind, too few to replace the session for
	var after int
	deadline := time.Now().Add(30 * time.Second)
	for {
		after = totalWatches(t, addr)
		if after <= waiting+slack || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ZooKeeper's watches: %d before, %d with %d readers waiting, %d at the peak of the churn, %d after", before, waiting, stay, peak.Load(), after)
	// At most maxReads names are watched, and as many again left behind
	// (at least sequencer.RecycleMin) before the watch session is replaced: three
	// watches a name at most.
	if bound := waiting + 3*(2*maxReads+sequencer.RecycleMin); peak.Load() > int64(bound) {
		t.Errorf("%d watches at the peak of the churn, want at most %d", peak.Load(), bound)
	}
	if after > waiting+slack {
		t.Errorf("%d watches 30s after the churn, want at most %d (%d with the staying readers, plus %d)", after, waiting+slack, waiting, slack)
	}
	select {
	case err := <-stayErrs:
		t.Error(err)
	default:
	}
	if d.svc.WatchWaiting() != stay {
		t.Errorf("%d readers waiting after the churn, want the %d staying ones", d.svc.WatchWaiting(), stay)
	}
}

var totalWatchesRE = regexp.MustCompile(`Total watches:(\d+)`)

// totalWatches is ZooKeeper's count of watches (the wchs four-letter word).
func totalWatches(t testing.TB, addr string) int {
	t.Helper()
	out, err := testenv.FourLetter(addr, "wchs", 5*time.Second)
	if err != nil {
		t.Errorf("wchs: %v", err)
		return 0
	}
	m := totalWatchesRE.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("wchs answered %q", out)
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

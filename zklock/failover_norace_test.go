//go:build !race

package zklock

// Leader failover with sessions of this process reconnecting: go-zookeeper
// v1.0.4 reads its last zxid (sendSetWatches) while its receive loop writes
// it, unsynchronized, when a session with watches reconnects, and the race
// detector flags that in go-zookeeper's own code. These tests run without
// it: make test runs them in a second, race-free pass.

import (
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// Kill the leader in the middle of two streams of grants (one per token
// mode): grants resume after the election and every token is above every
// earlier one of its lock.
func TestFailoverKeepsTokensRising(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3})
	modes := []TokenMode{TokenZxid, TokenVersion}
	const before, after = 30, 30

	type run struct {
		grants chan grantRecord
		err    chan error
		got    []grantRecord
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runs := make([]*run, len(modes))
	for i, mode := range modes {
		a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
		r := &run{grants: make(chan grantRecord, 4096), err: make(chan error, 1)}
		runs[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err <- stream(mode, a, b, "failover/"+mode.String(), stop, r.grants)
		}()
	}
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopAll()

	// collect waits until stream i has want[i] grants, or fails.
	collect := func(want []int, d time.Duration) {
		t.Helper()
		deadline := time.After(d)
		for i, r := range runs {
			n := want[i]
			for len(r.got) < n {
				select {
				case g := <-r.grants:
					r.got = append(r.got, g)
				case err := <-r.err:
					stopAll()
					t.Fatalf("%v stream ended: %v", modes[i], err)
				case <-deadline:
					stopAll()
					t.Fatalf("%v stream: %d grants within %v, want %d", modes[i], len(r.got), d, n)
				}
			}
		}
	}
	collect([]int{before, before}, 30*time.Second)

	ctx := ctxT(t, 10*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.Kill()
	t.Logf("killed leader zk%d at %s", leader.ID, killed.Format("15:04:05.000"))
	// Wait for `after` more grants per stream than were made by now (the
	// grants' own times tell which came after the kill).
	want := make([]int, len(runs))
	for i, r := range runs {
		for len(r.grants) > 0 {
			r.got = append(r.got, <-r.grants)
		}
		want[i] = len(r.got) + after
	}
	collect(want, 60*time.Second)
	stopAll()
	for i, r := range runs {
		for len(r.grants) > 0 {
			r.got = append(r.got, <-r.grants)
		}
		select {
		case err := <-r.err:
			if err != nil {
				t.Fatalf("%v stream: %v", modes[i], err)
			}
		default:
		}
	}

	timeout := 4 * time.Second // dial's default
	for i, r := range runs {
		var maxGap time.Duration
		resumed := -1
		for j := 1; j < len(r.got); j++ {
			if r.got[j].token <= r.got[j-1].token {
				t.Errorf("%v: grant %d token %d not above grant %d token %d", modes[i], j, r.got[j].token, j-1, r.got[j-1].token)
			}
			if r.got[j].at.After(killed) && resumed < 0 {
				resumed = j
			}
			if gap := r.got[j].at.Sub(r.got[j-1].at); gap > maxGap {
				maxGap = gap
			}
		}
		if resumed < 0 {
			t.Fatalf("%v: no grant after the kill", modes[i])
		}
		first := r.got[resumed]
		t.Logf("%v: %d grants, %d after the kill; first grant %v after the kill (%.2f of the %v session timeout); longest pause between grants %v (%.2f); tokens %#x … %#x",
			modes[i], len(r.got), len(r.got)-resumed, first.at.Sub(killed).Round(time.Millisecond),
			float64(first.at.Sub(killed))/float64(timeout), timeout, maxGap.Round(time.Millisecond),
			float64(maxGap)/float64(timeout), r.got[0].token, r.got[len(r.got)-1].token)
		if modes[i] == TokenZxid && r.got[len(r.got)-1].token>>32 == r.got[0].token>>32 {
			t.Errorf("zxid: epoch did not change across the failover (%#x → %#x)", r.got[0].token, r.got[len(r.got)-1].token)
		}
	}
}

package sequencer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A daemon with group commit serves concurrent clients on their own locks
// and on one shared lock: every acquire granted, tokens of a lock rising,
// every release accepted, and the shared lock never held twice.
func TestGroupCommitDaemon(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers(), groupCommit: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		last   = map[string]uint64{}
		inHot  int
		wg     sync.WaitGroup
		errs   = make(chan error, 32)
		report = func(err error) {
			select {
			case errs <- err:
			default:
			}
		}
	)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("gc/own-%d", w)
			if w%4 == 0 {
				name = "gc/hot"
			}
			for range 10 {
				l, err := d.client.Acquire(ctx, name, fmt.Sprint("worker-", w), time.Minute, time.Minute)
				if err != nil {
					report(fmt.Errorf("worker %d: acquire: %w", w, err))
					return
				}
				mu.Lock()
				if l.Token <= last[name] {
					report(fmt.Errorf("%s: token %d after %d", name, l.Token, last[name]))
				}
				last[name] = l.Token
				if name == "gc/hot" {
					if inHot++; inHot != 1 {
						report(fmt.Errorf("%d holders of gc/hot", inHot))
					}
				}
				mu.Unlock()
				mu.Lock()
				if name == "gc/hot" {
					inHot--
				}
				mu.Unlock()
				if err := d.client.Release(ctx, name, l.LeaseID, l.Token); err != nil {
					report(fmt.Errorf("worker %d: release: %w", w, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if len(last) != 13 {
		t.Fatalf("%d locks were granted, want 13", len(last))
	}
}

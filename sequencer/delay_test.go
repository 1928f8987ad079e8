package sequencer_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A lease with a lock-delay that expires on one daemon keeps the lock from
// an acquire waiting on another daemon until the delay has passed since the
// expiry; a release hands over at once, as does an expiry without a delay.
// The daemon's own lock-delay applies to acquires that name none.
func TestLockDelayAcrossDaemons(t *testing.T) {
	zk := sharedZK.Get(t)
	const delay = 1500 * time.Millisecond
	for _, tc := range []struct {
		name        string
		daemonDelay time.Duration
		opts        []AcquireOption
		release     bool
		delayed     bool
	}{
		{"expired with lock_delay", 0, []AcquireOption{WithLockDelay(delay)}, false, true},
		{"expired with the daemon's delay", delay, nil, false, true},
		{"released with lock_delay", 0, []AcquireOption{WithLockDelay(delay)}, true, false},
		{"expired, lock_delay 0 over the daemon's", delay, []AcquireOption{WithLockDelay(0)}, false, false},
		{"expired without a delay", 0, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startDaemon(t, daemonOpts{servers: zk.Servers(), delay: tc.daemonDelay})
			b := startDaemon(t, daemonOpts{servers: zk.Servers()})
			name := fmt.Sprintf("delayed-%d", time.Now().UnixNano())
			held, err := a.client.Acquire(ctxT(t, 10*time.Second), name, "a", time.Second, 0, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ended := held.ExpiresAt
			if tc.release {
				if err := a.client.Release(ctxT(t, 10*time.Second), name, held.LeaseID, held.Token); err != nil {
					t.Fatal(err)
				}
				ended = time.Now()
			}
			got, err := b.client.Acquire(ctxT(t, 30*time.Second), name, "b", 5*time.Second, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Since(ended)
			t.Logf("granted on the other daemon %v after the lease ended", after.Round(time.Millisecond))
			if got.Token <= held.Token {
				t.Fatalf("token %d, want above %d", got.Token, held.Token)
			}
			if tc.delayed && after < delay-100*time.Millisecond {
				t.Fatalf("granted %v after an expiry, want at least the delay %v", after, delay)
			}
			if !tc.delayed && after > delay/2+300*time.Millisecond {
				t.Fatalf("granted %v after the lease ended, want at once", after)
			}
		})
	}
}

func TestLockDelayOutOfRange(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	for _, body := range []string{
		`{"owner":"o","lock_delay":"61s"}`,
		`{"owner":"o","lock_delay":"-1s"}`,
	} {
		status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/locks/x/acquire", body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, status, resp)
		}
	}
	status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/locks/x/acquire", `{"owner":"o","lock_delay":"60s"}`)
	if status != http.StatusOK {
		t.Fatalf("lock_delay 60s: %d %s, want 200", status, resp)
	}
}

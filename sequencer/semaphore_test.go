package sequencer_test

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// Two daemons share a semaphore of two: a third acquire is held, on either
// daemon, until a slot is released or its lease expires; tokens rise; the
// status counts holders across daemons; renew and release need the lease.
func TestSemaphoreAcrossDaemons(t *testing.T) {
	zk := sharedZK.Get(t)
	a := startDaemon(t, daemonOpts{servers: zk.Servers()})
	b := startDaemon(t, daemonOpts{servers: zk.Servers()})
	ctx := ctxT(t, 60*time.Second)
	const name, limit = "pool", 2
	l1, err := a.client.AcquireSemaphore(ctx, name, "one", limit, 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := b.client.AcquireSemaphore(ctx, name, "two", limit, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token <= l1.Token || l1.Limit != limit {
		t.Fatalf("leases %+v, %+v: want rising tokens and limit %d", l1, l2, limit)
	}
	if st, err := a.client.SemaphoreStatus(ctx, name); err != nil || st.Holders != 2 {
		t.Fatalf("status %+v (%v), want 2 holders", st, err)
	}
	_, err = a.client.AcquireSemaphore(ctx, name, "three", limit, 10*time.Second, 0)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != CodeHeld {
		t.Fatalf("third acquire of a full semaphore: %v, want 409 held", err)
	}
	// The second lease expires without renewal: its slot goes to a waiter.
	start := time.Now()
	l3, err := a.client.AcquireSemaphore(ctx, name, "three", limit, 10*time.Second, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a slot came free %v after the wait began (the expiring lease's TTL 1s)", time.Since(start).Round(time.Millisecond))
	if l3.Token <= l2.Token {
		t.Fatalf("token %d, want above %d", l3.Token, l2.Token)
	}
	if _, err := a.client.RenewSemaphore(ctx, name, l1.LeaseID, l1.Token, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.RenewSemaphore(ctx, name, l2.LeaseID, l2.Token, 0); !errors.As(err, &ae) || ae.Code != CodeLost {
		t.Fatalf("renew of an expired lease: %v, want 409 lost", err)
	}
	if err := a.client.Release(ctx, name, l1.LeaseID, l1.Token); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("a semaphore lease released as a lock: %v, want 400", err)
	}
	if err := a.client.ReleaseSemaphore(ctx, name, l1.LeaseID, l1.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.AcquireSemaphore(ctx, name, "four", limit, 10*time.Second, 0); err != nil {
		t.Fatalf("acquire after a release: %v", err)
	}
	// Grants are counted under the semaphore's name, not its inner mutex's.
	if got := counter(t, a.reg, "seqd_grants_total", map[string]string{"lock": name}); got != 2 {
		t.Errorf("seqd_grants_total{lock=%q} = %v on the first daemon, want 2", name, got)
	}
	if got := counter(t, a.reg, "seqd_grants_total", map[string]string{"lock": name + "/locks"}); got != 0 {
		t.Errorf("seqd_grants_total{lock=%q} = %v, want 0: the inner mutex is not a lock of its own", name+"/locks", got)
	}
}

func TestSemaphoreBadRequests(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	for _, body := range []string{
		`{"owner":"o"}`,
		`{"owner":"o","limit":0}`,
		`{"owner":"o","limit":-2}`,
		`{"owner":"o","limit":2,"lock_delay":"1s"}`,
		`{"limit":2}`,
	} {
		status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/semaphores/s/acquire", body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, status, resp)
		}
	}
	if status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/semaphores/s/acquire", `{"owner":"o","limit":2}`); status != http.StatusOK {
		t.Fatalf("a good acquire: %d %s", status, resp)
	}
}

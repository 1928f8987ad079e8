package sequencer_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
)

// Shared leases on two daemons hold one lock together; an exclusive acquire
// waits for both and then holds alone with a higher token; a shared acquire
// behind the queued exclusive one is held (no starvation of writers). The
// control: a shared acquire with no exclusive one queued is granted at once.
func TestSharedLeasesAcrossDaemons(t *testing.T) {
	zk := sharedZK.Get(t)
	a := startDaemon(t, daemonOpts{servers: zk.Servers()})
	b := startDaemon(t, daemonOpts{servers: zk.Servers()})
	ctx := ctxT(t, 60*time.Second)
	const name = "shared"
	r1, err := a.client.Acquire(ctx, name, "r1", 10*time.Second, 0, WithShared())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.client.Acquire(ctx, name, "r2", 10*time.Second, 0, WithShared())
	if err != nil {
		t.Fatalf("a second shared lease: %v", err)
	}
	if r1.Mode != ModeShared {
		t.Fatalf("lease mode %q, want %q", r1.Mode, ModeShared)
	}
	var ae *APIError
	if _, err := a.client.Acquire(ctx, name, "w", 10*time.Second, 0); !errors.As(err, &ae) || ae.Code != CodeHeld {
		t.Fatalf("exclusive acquire while shared leases hold: %v, want 409 held", err)
	}
	type result struct {
		l   Lease
		err error
	}
	wdone := make(chan result, 1)
	go func() {
		l, err := a.client.Acquire(ctx, name, "w", 10*time.Second, 30*time.Second)
		wdone <- result{l, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(zkChildren(t, zk.Servers(), "/seqd-test/"+t.Name()+"/"+name)) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the exclusive acquire never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := b.client.Acquire(ctx, name, "r3", 10*time.Second, 0, WithShared()); !errors.As(err, &ae) || ae.Code != CodeHeld {
		t.Fatalf("shared acquire behind a queued exclusive one: %v, want 409 held", err)
	}
	if err := a.client.Release(ctx, name, r1.LeaseID, r1.Token); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Release(ctx, name, r2.LeaseID, r2.Token); err != nil {
		t.Fatal(err)
	}
	w := <-wdone
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.l.Token <= r1.Token || w.l.Token <= r2.Token || w.l.Mode != "" {
		t.Fatalf("exclusive lease %+v after shared tokens %d, %d", w.l, r1.Token, r2.Token)
	}
}

func TestSharedBadRequests(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	for _, body := range []string{
		`{"owner":"o","mode":"bogus"}`,
		`{"owner":"o","mode":"shared","lock_delay":"1s"}`,
	} {
		status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/locks/x/acquire", body)
		if status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, status, resp)
		}
	}
	for _, body := range []string{`{"owner":"o","mode":"shared"}`, `{"owner":"p","mode":"shared"}`} {
		if status, resp := httpDo(t, http.MethodPost, d.srv.URL+"/v1/locks/x/acquire", body); status != http.StatusOK {
			t.Fatalf("%s: %d %s, want 200", body, status, resp)
		}
	}
}

// A reader's token does not pass for a writer's: asked in the exclusive
// form ({"name","token"} or name@token), check answers that the token does
// not hold the lock exclusively, while the shared form (shared:name@token)
// answers valid. The control: a writer's token in the exclusive form is
// valid.
func TestCheckReaderTokenIsNoWriter(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	ctx := ctxT(t, 30*time.Second)
	const name = "readers"
	r, err := d.client.Acquire(ctx, name, "r", 10*time.Second, 0, WithShared())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := d.client.CheckSequencer(ctx, r.Sequencer); err != nil || !res.Valid {
		t.Fatalf("check %s: %+v, %v; want valid", r.Sequencer, res, err)
	}
	exclusive := fence.Sequencer{Name: name, Token: r.Token}.String()
	for form, check := range map[string]func() (CheckResponse, error){
		`{"name","token"}`: func() (CheckResponse, error) { return d.client.Check(ctx, name, r.Token) },
		exclusive:          func() (CheckResponse, error) { return d.client.CheckSequencer(ctx, exclusive) },
	} {
		res, err := check()
		var ae *APIError
		if res.Valid || !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != CodeNotHeld {
			t.Errorf("check %s of a reader's token: %+v, %v; want 409 %s", form, res, err, CodeNotHeld)
		}
	}
	if err := d.client.Release(ctx, name, r.LeaseID, r.Token); err != nil {
		t.Fatal(err)
	}
	w, err := d.client.Acquire(ctx, name, "w", 10*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := d.client.Check(ctx, name, w.Token); err != nil || !res.Valid {
		t.Fatalf("check of the writer's token: %+v, %v; want valid", res, err)
	}
}

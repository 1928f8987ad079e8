package sequencer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// A multi-lock lease over HTTP: one grant of every lock, each with its own
// exclusive sequencer that check and status accept as a single holder's;
// the idempotent retry; renew, the listing and the status read; release
// of every lock at once; and the answers to a lease that has ended.
func TestMultiLockLease(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	c := d.client
	ctx := ctxT(t, 60*time.Second)
	names := []string{"acct/1", "acct/2", "acct/3"}
	id := api.NewLeaseID()
	grant := []client.MultiOption{client.Owner("mover"), client.LeaseID(id), client.TTL(10 * time.Second)}
	l, err := c.AcquireMulti(ctx, names, grant...)
	if err != nil {
		t.Fatal(err)
	}
	if l.LeaseID != id || len(l.Locks) != 3 {
		t.Fatalf("lease %+v, want id %s and 3 locks", l, id)
	}
	for i, lk := range l.Locks {
		if lk.Name != names[i] || lk.Token != l.Locks[0].Token || lk.Sequencer != fmt.Sprintf("%s@%d", lk.Name, lk.Token) {
			t.Errorf("lock %d = %+v, want %s with the set's one zxid token and its own sequencer", i, lk, names[i])
		}
		st, err := c.Status(ctx, lk.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Held || st.Token != lk.Token || st.Owner != "mover" {
			t.Errorf("status of %s = %+v, want held by mover with token %d", lk.Name, st, lk.Token)
		}
		if _, err := c.CheckSequencer(ctx, lk.Sequencer); err != nil {
			t.Errorf("check %s: %v", lk.Sequencer, err)
		}
	}
	if _, err := c.Acquire(ctx, names[1], "other", 0, 0); !errors.Is(err, api.ErrHeld) {
		t.Errorf("a single acquire of %s while the set holds it = %v, want held", names[1], err)
	}

	// The retry: the same request is the same lease; another is a 400
	// naming what differs, and changes nothing.
	if again, err := c.AcquireMulti(ctx, names, grant...); err != nil || again.Locks[0].Token != l.Locks[0].Token {
		t.Errorf("retry = %+v, %v; want the same lease", again, err)
	}
	for _, tc := range []struct {
		names []string
		opts  []client.MultiOption
		field string
	}{
		{[]string{"acct/2", "acct/1", "acct/3"}, grant, "names"},
		{names[:2], grant, "names"},
		{names, append(grant[1:], client.Owner("thief")), "owner"},
		{names, append(grant, client.LockDelay(5*time.Second)), "lock_delay"},
	} {
		_, err := c.AcquireMulti(ctx, tc.names, tc.opts...)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "whose "+tc.field+" differs") {
			t.Errorf("retry with another %s = %v, want a 400 naming it", tc.field, err)
		}
	}

	// The listing shows the lease without its id; the status read gives
	// it to its holder, and a blocking read wakes when it is renewed.
	list, err := c.MultiLeases(ctx)
	if err != nil || len(list) != 1 || list[0].LeaseID != "" || list[0].Locks[2].Name != names[2] {
		t.Errorf("listing = %+v, %v; want the one lease, without its id", list, err)
	}
	st, err := c.MultiLockStatus(ctx, id)
	if err != nil || st.LeaseID != id || st.SafeForMS <= 0 {
		t.Fatalf("status = %+v, %v; want the live lease", st, err)
	}
	woke := make(chan api.MultiLockStatus, 1)
	go func() {
		next, _ := c.WaitMultiLock(ctx, id, st.Index, 30*time.Second)
		woke <- next
	}()
	if _, err := c.RenewMulti(ctx, l, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case next := <-woke:
		if next.Index == st.Index || time.Duration(next.TTL) != 20*time.Second {
			t.Errorf("blocking read after a renewal = %+v, want a new index and the new TTL", next)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a blocking read did not wake at the renewal")
	}

	// Release frees every lock; the ended lease is lost; a new lease gets
	// higher tokens, and the old tokens are stale.
	if err := c.ReleaseMulti(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if st, err := c.Status(ctx, name); err != nil || st.Held {
			t.Errorf("status of %s after release = %+v, %v; want free", name, st, err)
		}
	}
	_, err = c.RenewMulti(ctx, l, 0)
	wantConflict(t, err, CodeLost, 0)
	wantConflict(t, c.ReleaseMulti(ctx, l), CodeLost, 0)
	_, err = c.MultiLockStatus(ctx, id)
	wantConflict(t, err, CodeLost, 0)
	next, err := c.AcquireMulti(ctx, names[1:], client.Owner("next"))
	if err != nil {
		t.Fatal(err)
	}
	if next.Locks[0].Token <= l.Locks[1].Token {
		t.Errorf("next token %d, want above %d", next.Locks[0].Token, l.Locks[1].Token)
	}
	_, err = c.RenewMulti(ctx, l, 0)
	wantConflict(t, err, CodeStaleToken, next.Locks[0].Token)
	if !strings.Contains(err.Error(), names[1]) {
		t.Errorf("stale renew = %v, want it to name %s", err, names[1])
	}
	c.ReleaseMulti(ctx, next)
}

// A multi-lock lease's signed sequencers are each lock's own: a resource
// guarding one lock verifies them as a single holder's.
func TestMultiLockSignedSequencers(t *testing.T) {
	zkc := sharedZK.Get(t)
	signer, verifier := newSigner(t, "k1")
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer})
	ctx := ctxT(t, 30*time.Second)
	l, err := d.client.AcquireMulti(ctx, []string{"signed/a", "signed/b"}, client.Owner("o"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lk := range l.Locks {
		seq, err := verifier.Verify(lk.Sequencer)
		if err != nil || seq != (fence.Sequencer{Name: lk.Name, Token: lk.Token}) {
			t.Errorf("verify %s = %+v, %v; want the exclusive lock %s@%d", lk.Sequencer, seq, err, lk.Name, lk.Token)
		}
	}
	list, err := d.client.MultiLeases(ctx)
	if err != nil || len(list) != 1 || strings.Count(list[0].Locks[0].Sequencer, ".") != 0 {
		t.Errorf("listing = %+v, %v; want unsigned sequencers", list, err)
	}
}

// Requests the multi-lock routes refuse, before anything changes.
func TestMultiLockRefuses(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	u := d.srv.URL + "/v1/multilocks"
	const id = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/acquire", `{"owner":"o"}`, 400, "names is required"},
		{"POST", "/acquire", `{"names":[],"owner":"o"}`, 400, "names is required"},
		{"POST", "/acquire", `{"names":["a","b","a"],"owner":"o"}`, 400, "twice"},
		{"POST", "/acquire", `{"names":["a","b/../c"],"owner":"o"}`, 400, "invalid name"},
		{"POST", "/acquire", `{"names":["a"]}`, 400, "owner is required"},
		{"POST", "/acquire", `{"names":["a"],"owner":"o","mode":"shared"}`, 400, "mode"},
		{"POST", "/acquire", `{"names":["a"],"owner":"o","lock_delay":"2m"}`, 400, "lock_delay"},
		{"POST", "/acquire", `{"names":"a","owner":"o"}`, 400, ""},
		{"POST", "/renew", `{"lease_id":"` + id + `"}`, 400, "locks is required"},
		{"POST", "/renew", `{"lease_id":"` + id + `","locks":[{"name":"a"}]}`, 400, "token"},
		{"POST", "/renew", `{"lease_id":"x","locks":[{"name":"a","token":1}]}`, 400, "lease_id"},
		{"POST", "/release", `{"lease_id":"` + id + `","locks":[{"name":"a","token":1}],"ttl":"5s"}`, 400, "no ttl"},
		{"POST", "/release", `{"lease_id":"` + id + `","locks":[{"name":"a","token":1,"x":1}]}`, 400, ""},
		{"GET", "/not-an-id", "", 400, "lease id"},
		{"GET", "/" + id + "?lease_id=" + id, "", 400, "in the path"},
		{"GET", "/" + id, "", 409, "no live multi-lock lease"},
		{"GET", "?index=1", "", 400, "no query"},
		{"POST", "/" + id, `{}`, 405, "/v1/multilocks/{acquire|release|renew}"},
		{"POST", "/a/acquire", `{}`, 405, ""},
		{"PUT", "/acquire", "", 405, ""},
	} {
		status, body := httpDo(t, tc.method, u+tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %s = %d %s, want %d containing %q", tc.method, tc.path, tc.body, status, body, tc.status, tc.want)
		}
	}
	if ch := zkChildren(t, zkc.Servers(), "/seqd-test/"+t.Name()); len(ch) != 0 {
		t.Errorf("refused requests created lock nodes: %v", ch)
	}
}

// The wire contract's limits and the lock library's agree: the daemon
// refuses at the API what zklock would refuse later.
func TestLimitsAgreeWithZklock(t *testing.T) {
	for _, c := range []struct {
		name      string
		api, lock int64
	}{
		{"MaxMultiLocks", api.MaxMultiLocks, zklock.MaxMultiLocks},
		{"MaxSemaphoreLimit", api.MaxSemaphoreLimit, zklock.MaxSemaphoreLimit},
		{"MaxLockDelay", int64(api.MaxLockDelay), int64(zklock.MaxLockDelay)},
		{"MaxQueueRead", api.MaxQueueRead, zklock.MaxQueueRead},
		{"MaxNameBytes", api.MaxNameBytes, zklock.MaxNameLen},
	} {
		if c.api != c.lock {
			t.Errorf("api.%s is %d, zklock.%s %d", c.name, c.api, c.name, c.lock)
		}
	}
}

// TestMultiLockAudit: a multi-lock lease writes one audit line per lock at
// its grant and at its release, each with the lock's own name and token.
func TestMultiLockAudit(t *testing.T) {
	zkc := sharedZK.Get(t)
	var audit auditLog
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), audit: sequencer.NewAuditLog(&audit, nil)})
	ctx := ctxT(t, 30*time.Second)
	l, err := d.client.Client.AcquireMulti(ctx, []string{"audit/a", "audit/b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.client.Client.ReleaseMulti(ctx, l); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, lt := range l.Locks {
		want["grant "+lt.Name+" "+fmt.Sprint(lt.Token)] = true
		want["release "+lt.Name+" "+fmt.Sprint(lt.Token)] = true
	}
	for _, e := range audit.events(t) {
		delete(want, e.Event+" "+e.Name+" "+fmt.Sprint(e.Token))
	}
	if len(want) != 0 {
		t.Fatalf("audit log %v lacks %v", audit.events(t), want)
	}
}

// A multi-lock lease of one lock bears that lock's name: a status read and
// an overview of the lock on the daemon that holds it answer, with the
// lease's token (they once read the lease as a single lock's, whose grant
// it has not, and the overview's reader took the daemon down).
func TestStatusOfALockHeldByAOneLockMultiLock(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	ctx := ctxT(t, time.Minute)
	ml, err := d.svc.Service.AcquireMulti(ctx, api.MultiAcquireRequest{Names: []string{"one/m"}, Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.svc.Service.Status(ctx, "one/m")
	if err != nil || !st.Held || st.Token != ml.Locks[0].Token {
		t.Fatalf("status: %+v %v, want held with token %d", st, err, ml.Locks[0].Token)
	}
	o, err := d.svc.Service.Overview(ctx, api.Locks, false, 0, 0)
	if err != nil || len(o.Locks) != 1 || o.Locks[0].Token != ml.Locks[0].Token {
		t.Fatalf("overview: %+v %v", o, err)
	}
}

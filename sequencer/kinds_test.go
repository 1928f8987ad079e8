package sequencer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// testFamily is one family of the API as the tests drive it over HTTP.
type testFamily struct {
	name  string // the path segment
	grant string // the grant action
	end   string // the end action
	extra string // the grant body's fields beyond owner (a semaphore's limit)
	kind  fence.Kind
}

var testFamilies = []testFamily{
	{"locks", "acquire", "release", "", fence.KindLock},
	{"semaphores", "acquire", "release", `,"limit":2`, fence.KindSemaphore},
	{"elections", "campaign", "resign", `,"value":"v1"`, fence.KindElection},
}

// grantOver grants name in f over HTTP with body fields extra (after the
// family's own), failing the test unless the answer is 200.
func grantOver(t *testing.T, d *daemon, f testFamily, name, fields string) api.Lease {
	t.Helper()
	code, body := httpDo(t, "POST", d.srv.URL+"/v1/"+f.name+"/"+name+"/"+f.grant, `{"owner":"o"`+f.extra+fields+`}`)
	if code != 200 {
		t.Fatalf("%s %s: %d %s", f.grant, name, code, body)
	}
	var l api.Lease
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestEveryFamilyRefusesTheSameAttacks sends each attack found against one
// family to every family: the answer is the same refusal (status, code and
// a sentence naming the kind), and nothing changes: the lease is still the
// holder's, with its token and TTL.
func TestEveryFamilyRefusesTheSameAttacks(t *testing.T) {
	zkc := sharedZK.Get(t)
	signer, verifier := newSigner(t, "k1")
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer})
	for _, f := range testFamilies {
		t.Run(f.name, func(t *testing.T) {
			u := d.srv.URL + "/v1/" + f.name
			l := grantOver(t, d, f, "attacked", `,"ttl":"40s"`)
			lease := func(extra string) string {
				return fmt.Sprintf(`{"lease_id":%q,"token":%d%s}`, l.LeaseID, l.Token, extra)
			}
			retry := func(fields string) string {
				return fmt.Sprintf(`{"owner":"o","lease_id":%q%s}`, l.LeaseID, fields)
			}
			other := map[string]string{"locks": "elections", "semaphores": "locks", "elections": "semaphores"}[f.name]
			otherLease := grantOver(t, d, testFamilies[map[string]int{"locks": 0, "semaphores": 1, "elections": 2}[other]], "other", "")
			cases := []attack{
				{"POST to a status", "POST", u + "/attacked", `{}`, 405, "POST needs an action"},
				{"POST to an unknown action", "POST", u + "/attacked/steal", `{}`, 405, "POST needs an action"},
				{"PUT to an action", "PUT", u + "/attacked/" + f.grant, `{}`, 405, "method PUT is not allowed"},
				{"DELETE the listing", "DELETE", u, "", 405, "method DELETE is not allowed"},
				{"unknown query parameter", "GET", u + "/attacked?bogus=1&index=zz", "", 400, "unknown query parameter"},
				{"malformed index", "GET", u + "/attacked?index=zz", "", 400, "must be a decimal integer"},
				{"wait without index", "GET", u + "/attacked?wait=5s", "", 400, "wait needs an index"},
				{"repeated parameter", "GET", u + "/attacked?index=1&index=2", "", 400, "appears more than once"},
				{"query on the listing", "GET", u + "?index=1", "", 400, "takes no query"},
				{"repeated key", "POST", u + "/x/" + f.grant, `{"owner":"a","owner":"b"` + f.extra + `}`, 400, `the key "owner" appears twice`},
				{"key in another case", "POST", u + "/x/" + f.grant, `{"OWNER":"a"}`, 400, `must be spelt "owner"`},
				{"unknown field", "POST", u + "/x/" + f.grant, `{"owner":"a","colour":"red"` + f.extra + `}`, 400, `unknown field "colour"`},
				{"repeated key in a renew", "POST", u + "/attacked/renew", lease(fmt.Sprintf(`,"token":%d`, l.Token)), 400, `the key "token" appears twice`},
				{"a lease of another family", "POST", u + "/other/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, otherLease.LeaseID, otherLease.Token), 400, `is for ` + sequencer.Noun(kindOfFamily(other))},
				{"retry as another owner", "POST", u + "/attacked/" + f.grant, fmt.Sprintf(`{"owner":"thief","lease_id":%q%s}`, l.LeaseID, f.extra), 400, "whose owner differs"},
				{"retry of another name", "POST", u + "/elsewhere/" + f.grant, retry(f.extra), 400, "whose name differs"},
				{"retry with another family's lease id", "POST", u + "/other/" + f.grant, fmt.Sprintf(`{"owner":"o","lease_id":%q%s}`, otherLease.LeaseID, f.extra), 400, "differs"},
			}
			switch f.name {
			case "locks":
				cases = append(cases,
					attack{"retry in another mode", "POST", u + "/attacked/acquire", retry(`,"mode":"shared"`), 400, "whose mode differs"},
					attack{"retry with another lock_delay", "POST", u + "/attacked/acquire", retry(`,"lock_delay":"5s"`), 400, "whose lock_delay differs"},
				)
			case "semaphores":
				cases = append(cases,
					attack{"retry with another limit", "POST", u + "/attacked/acquire", retry(`,"limit":100`), 400, "whose limit differs"},
					attack{"a name reaching the bookkeeping", "POST", u + "/attacked/leases/acquire", `{"owner":"o","limit":2}`, 400, `segment "leases"`},
					attack{"a limit other than the recorded one", "POST", u + "/attacked/acquire", `{"owner":"p","limit":100}`, 409, "has limit 2"},
				)
			case "elections":
				cases = append(cases, attack{"retry with another value", "POST", u + "/attacked/campaign", retry(`,"value":"v2"`), 400, "whose value differs"})
			}
			for _, c := range cases {
				code, body := httpDo(t, c.method, c.url, c.body)
				var eb api.ErrorBody
				json.Unmarshal([]byte(body), &eb)
				if code != c.status || !strings.Contains(eb.Error, c.want) {
					t.Errorf("%s: %s %s: got %d %s, want %d with %q", c.name, c.method, c.url, code, body, c.status, c.want)
				}
				if code == 405 && w405Allow(t, c.method, c.url) == "" {
					t.Errorf("%s: 405 without Allow", c.name)
				}
			}
			// Nothing changed: the lease is the holder's, same token and
			// TTL, and renews.
			renewed := renewOver(t, d, f, l)
			if renewed.Token != l.Token || time.Duration(renewed.TTL) != 40*time.Second {
				t.Fatalf("after the attacks the lease is %+v, want token %d ttl 40s", renewed, l.Token)
			}
			// The listing shows the lease without its capability.
			code, body := httpDo(t, "GET", u, "")
			var list api.LeaseList
			if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || list.Family != f.name {
				t.Fatalf("listing: %d %s (%v), want the %s", code, body, err, f.name)
			}
			listed := false
			for _, got := range list.Leases {
				if got.LeaseID != "" || strings.Count(got.Sequencer, ".") > strings.Count(got.Name, ".") {
					t.Fatalf("listed %+v: a listing carries neither lease ids nor signed sequencers", got)
				}
				listed = listed || got.Sequencer == (fence.Sequencer{Kind: f.kind, Name: "attacked", Token: l.Token}).String()
			}
			if !listed {
				t.Fatalf("listing %s lacks the attacked lease's unsigned %s sequencer", body, f.kind)
			}
			if _, err := verifier.Verify(l.Sequencer); err != nil {
				t.Fatalf("the holder's own sequencer %q does not verify: %v", l.Sequencer, err)
			}
			// A retry that repeats the grant, without a ttl, returns the
			// lease and keeps its TTL.
			again := grantOver(t, d, f, "attacked", fmt.Sprintf(`,"lease_id":%q`, l.LeaseID))
			if again.Token != l.Token || time.Duration(again.TTL) != 40*time.Second {
				t.Fatalf("a faithful retry without a ttl = %+v, want token %d and the lease's 40s", again, l.Token)
			}
		})
	}
}

// attack is one request of an attack and the refusal it must get.
type attack struct {
	name, method, url, body string
	status                  int
	want                    string // in the error's sentence
}

func kindOfFamily(f string) fence.Kind {
	return map[string]fence.Kind{"locks": fence.KindLock, "semaphores": fence.KindSemaphore, "elections": fence.KindElection}[f]
}

// w405Allow repeats a request that answered 405 and returns its Allow.
func w405Allow(t *testing.T, method, url string) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Allow")
}

func renewOver(t *testing.T, d *daemon, f testFamily, l api.Lease) api.Lease {
	t.Helper()
	code, body := httpDo(t, "POST", d.srv.URL+"/v1/"+f.name+"/"+l.Name+"/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, l.LeaseID, l.Token))
	if code != 200 {
		t.Fatalf("renew: %d %s", code, body)
	}
	var out api.Lease
	json.Unmarshal([]byte(body), &out)
	return out
}

// TestRefusalsNameTheKind: a grant not made within the wait says what
// refused it: a held lock, a full semaphore, a led election, a lock in its
// lock-delay.
func TestRefusalsNameTheKind(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	if _, err := d.client.Acquire(ctx, "held", "a", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := d.client.AcquireSemaphore(ctx, "full", "a", 2, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.client.Campaign(ctx, "led", "a", "", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	delayed, err := d.svc.Acquire(ctx, "delayed", "a", time.Second, 0, WithLockDelay(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// An unclean end: the contender deleted by someone else.
	if err := zkConn(t, zkc.Servers()).Delete(d.svc.Config().Root+"/delayed/"+pathBase(d, "delayed", delayed.Token), -1); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the deleted lease to be lost", func() bool {
		_, err := d.svc.Renew(ctx, "delayed", delayed.LeaseID, delayed.Token, 0)
		return err != nil
	})
	for _, c := range []struct {
		what string
		do   func() error
		want string
	}{
		{"a held lock", func() error { _, err := d.client.Acquire(ctx, "held", "b", time.Minute, 0); return err }, `lock "held" is held`},
		{"a full semaphore", func() error { _, err := d.client.AcquireSemaphore(ctx, "full", "b", 2, time.Minute, 0); return err }, `semaphore "full" is full`},
		{"a led election", func() error { _, err := d.client.Campaign(ctx, "led", "b", "", time.Minute, 0); return err }, `election "led" has another leader`},
		{"a lock in its lock-delay", func() error { _, err := d.client.Acquire(ctx, "delayed", "b", time.Minute, 0); return err }, `lock "delayed" is free but within its lock-delay`},
	} {
		err := c.do()
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Code != api.CodeHeld || !strings.Contains(ae.Message, c.want) {
			t.Errorf("%s: %v, want 409 held saying %q", c.what, err, c.want)
		}
	}
}

// pathBase is the contender node of the lease with token on the lock name.
func pathBase(d *daemon, name string, token uint64) string {
	p := d.svc.LeasePath(name, token)
	return p[strings.LastIndexByte(p, '/')+1:]
}

// TestSemaphoreLimitIsRecorded: the first acquirer records the limit; an
// acquirer naming another is refused with the recorded one (409
// limit_mismatch) and takes no slot, and the status counts holders
// exactly.
func TestSemaphoreLimitIsRecorded(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	for range 2 {
		if _, err := d.client.AcquireSemaphore(ctx, "pool", "a", 2, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		_, err := d.client.AcquireSemaphore(ctx, "pool", "greedy", 100, time.Minute, 0)
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Code != api.CodeLimitMismatch || ae.Limit == nil || *ae.Limit != 2 {
			t.Fatalf("a limit-100 acquire of a limit-2 semaphore: %v, want 409 limit_mismatch with limit 2", err)
		}
		if !errors.Is(err, api.ErrLimitMismatch) {
			t.Fatalf("%v does not match client.ErrLimitMismatch", err)
		}
	}
	st, err := d.client.SemaphoreStatus(ctx, "pool")
	if err != nil || st.Holders != 2 || st.Limit != 2 {
		t.Fatalf("status = %+v, %v; want 2 holders of limit 2", st, err)
	}
	// A third acquirer of the right limit waits; meanwhile it is no holder.
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := d.client.AcquireSemaphore(wctx, "pool", "third", 2, time.Minute, time.Minute)
		done <- err
	}()
	zktest.Eventually(t, 30*time.Second, "the waiter's lease node", func() bool {
		return len(zkChildren(t, zkc.Servers(), d.svc.Config().SemaphoreRoot+"/pool/leases")) == 3
	})
	if st, err := d.client.SemaphoreStatus(ctx, "pool"); err != nil || st.Holders != 2 {
		t.Fatalf("status with a waiter = %+v, %v; want 2 holders", st, err)
	}
	cancel()
	<-done
}

// TestSemaphoreBlockingRead: a semaphore's status is a blocking read like
// the others: it answers when a holder comes or goes.
func TestSemaphoreBlockingRead(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	st, err := d.client.SemaphoreStatus(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan api.SemaphoreStatus, 1)
	go func() {
		// A client follows the index from change to change (the limit's
		// record is one, the holder's node another) until it sees a holder.
		s := st
		for s.Holders == 0 && ctx.Err() == nil {
			next, err := d.client.WaitSemaphore(ctx, "watched", s.Index, 30*time.Second)
			if err != nil || next.Index == s.Index {
				break
			}
			s = next
		}
		got <- s
	}()
	// Whether the read blocks before the grant or starts after it, it
	// answers with the new state: its index is not st's.
	if _, err := d.client.AcquireSemaphore(ctx, "watched", "a", 3, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.Holders != 1 || s.Limit != 3 || s.Index == st.Index {
			t.Fatalf("blocking reads answered %+v, want 1 holder of 3 and a new index", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking read did not answer the grant")
	}
}

// TestNestedRootsAreRefused: roots of which one reaches another's nodes
// refuse to start (with --root /seqd the lock "elections/x" would be the
// election "x").
func TestNestedRootsAreRefused(t *testing.T) {
	zkc := sharedZK.Get(t)
	svc := sequencer.New(sequencer.Config{Servers: zkc.Servers(), Root: "/seqd-nest", ElectionRoot: "/seqd-nest/elections", SemaphoreRoot: "/seqd-nest-sem", Logger: testLogger(t)})
	err := svc.Start(ctxT(t, 10*time.Second))
	if err == nil {
		svc.Close(context.Background())
	}
	if !errors.Is(err, zklock.ErrNestedRoots) {
		t.Fatalf("Start with nested roots = %v, want ErrNestedRoots", err)
	}
	if kids := zkChildren(t, zkc.Servers(), "/"); contains(kids, "seqd-nest") {
		t.Fatal("a refused start created nodes")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestOpenRootIsRefusedUnderCreatorACL: an election root that someone else
// made, open to all, would let any client delete a candidate and plant its
// own; a daemon with the creator ACL refuses to start on it, with a
// sentence naming the fix.
func TestOpenRootIsRefusedUnderCreatorACL(t *testing.T) {
	zkc := sharedZK.Get(t)
	root := "/seqd-open-" + strings.ReplaceAll(t.Name(), "/", "_")
	conn := zkConn(t, zkc.Servers())
	if _, err := conn.Create(root+"-elections", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	svc := sequencer.New(sequencer.Config{Servers: zkc.Servers(), Root: root, SemaphoreRoot: root + "-semaphores", ElectionRoot: root + "-elections",
		ZKAuth: &zklock.DigestAuth{User: "seqd", Password: "pw-0123456789"}, ZKACL: zklock.ACLCreator, Logger: testLogger(t)})
	err := svc.Start(ctxT(t, 10*time.Second))
	if err == nil {
		svc.Close(context.Background())
	}
	var oe *zklock.OpenRootError
	if !errors.As(err, &oe) || oe.Root != root+"-elections" || !strings.Contains(err.Error(), "setAcl") {
		t.Fatalf("Start on an open election root under the creator ACL = %v, want an OpenRootError naming the fix", err)
	}
}

// TestVersionModeElectionRootRefusal: a daemon whose token mode differs
// from what its election root records refuses to start, naming both modes,
// instead of answering every campaign 503.
func TestVersionModeElectionRootRefusal(t *testing.T) {
	zkc := sharedZK.Get(t)
	root := "/seqd-test/" + t.Name()
	startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root}) // records zxid on root.elections
	svc := sequencer.New(sequencer.Config{Servers: zkc.Servers(), Root: root + "-v", SemaphoreRoot: root + "-v.semaphores", ElectionRoot: root + ".elections", TokenMode: zklock.TokenVersion, Logger: testLogger(t)})
	err := svc.Start(ctxT(t, 10*time.Second))
	if err == nil {
		svc.Close(context.Background())
	}
	var me *zklock.TokenModeError
	if !errors.As(err, &me) || me.Root != root+".elections" {
		t.Fatalf("a version daemon on a zxid election root: Start = %v, want a TokenModeError on the election root", err)
	}
	// On roots of its own, a version daemon campaigns.
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), root: root + "-own", mode: zklock.TokenVersion})
	l, err := d.client.Campaign(ctxT(t, 10*time.Second), "e", "me", "", 10*time.Second, 0)
	if err != nil || l.Term != 1 {
		t.Fatalf("a version daemon's campaign on its own roots = %+v, %v; want term 1", l, err)
	}
}

// TestCheckEveryKind: POST /v1/check answers for a sequencer of every
// kind: valid while its grant holds, and refused once it ended.
func TestCheckEveryKind(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
	ctx := ctxT(t, time.Minute)
	shared, err := d.client.Acquire(ctx, "k/shared", "r", time.Minute, 0, WithShared())
	if err != nil {
		t.Fatal(err)
	}
	sem, err := d.client.AcquireSemaphore(ctx, "k/sem", "s", 2, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	lead, err := d.client.Campaign(ctx, "k/el", "e", "", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := d.client.Acquire(ctx, "k/lock", "l", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []api.Lease{shared, sem, lead, lock} {
		if r, err := d.client.CheckSequencer(ctx, l.Sequencer); err != nil || !r.Valid {
			t.Fatalf("check of the live %q: %+v, %v; want valid", l.Sequencer, r, err)
		}
		if err := d.client.Client.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		r, err := d.client.CheckSequencer(ctx, l.Sequencer)
		if r.Valid || !errors.Is(err, api.ErrNotHeld) && !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("check of the released %q: %+v, %v; want refused", l.Sequencer, r, err)
		}
	}
}

package sequencer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"
	"github.com/seqd/seqd/testenv/zktest"
)

// Every verb judges its caller itself, whoever calls it: these tests call
// the Service in process, as a program that links it would, under a
// policy that denies everything.

const denyAll = "deny * * * *\n"

// gated is a daemon whose policy file starts allowing everything, so
// that leases of every kind can be taken, and is then reloaded to deny
// everything.
type gated struct {
	d     *daemon
	pfile string
	pol   *policy.Watched[policy.Policy]
	admin context.Context
}

func startGated(t *testing.T, o daemonOpts) *gated {
	t.Helper()
	pfile := filepath.Join(t.TempDir(), "policy")
	writeFile(t, pfile, "allow * * * *\n")
	pol, err := policy.WatchPolicy(pfile)
	if err != nil {
		t.Fatal(err)
	}
	o.servers = sharedZK.Get(t).Servers()
	o.authority = policy.NewAuthority(policy.AuthorityOptions{Policy: pol, AdminToken: "admin-0123456789abcdef"})
	return &gated{d: startDaemon(t, o), pfile: pfile, pol: pol,
		admin: policy.WithCaller(context.Background(), policy.Caller{ID: policy.Admin, Via: policy.ViaAdmin})}
}

// denyAll reloads the policy file as deny-all.
func (g *gated) denyAll(t *testing.T) {
	t.Helper()
	writeFile(t, g.pfile, denyAll)
	if changed, err := g.pol.Reload(); !changed || err != nil {
		t.Fatalf("reloading the deny-all policy: %v %v", changed, err)
	}
}

// What each verb answers an anonymous caller under deny-all.
const (
	refused   = "refused: forbidden, and nothing changes"
	empty     = "answered with nothing in it"
	byLease   = "answered by the lease id, as without a policy"
	notJudged = "outside the table: not a caller's verb"
)

func TestEveryVerbUnderDenyAll(t *testing.T) {
	g := startGated(t, daemonOpts{})
	svc := g.d.svc.Service
	ctx := context.Background() // names nobody: anonymous
	lock, err := svc.Acquire(ctx, "g/lock", api.AcquireRequest{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := svc.AcquireSemaphore(ctx, "g/sem", api.SemaphoreAcquireRequest{Owner: "o", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	lead, err := svc.Campaign(ctx, "g/el", api.CampaignRequest{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	multi, err := svc.AcquireMulti(ctx, api.MultiAcquireRequest{Names: []string{"g/m1", "g/m2"}, Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	g.denyAll(t)

	forbidden := func(err error) error {
		if !errors.Is(err, api.ErrForbidden) {
			return fmt.Errorf("got %v, want forbidden", err)
		}
		return nil
	}
	ok := func(err error) error { return err }
	ttl := api.Duration(20 * time.Second)
	lockRefs := []api.LockRef{{Name: "g/m1", Token: multi.Locks[0].Token}, {Name: "g/m2", Token: multi.Locks[1].Token}}
	rows := []struct {
		verb   string
		expect string
		call   func() error
	}{
		{"Acquire", refused, func() error {
			_, err := svc.Acquire(ctx, "g/new", api.AcquireRequest{Owner: "o"})
			return forbidden(err)
		}},
		{"AcquireSemaphore", refused, func() error {
			_, err := svc.AcquireSemaphore(ctx, "g/sem", api.SemaphoreAcquireRequest{Owner: "o", Limit: 2})
			return forbidden(err)
		}},
		{"Campaign", refused, func() error {
			_, err := svc.Campaign(ctx, "g/el2", api.CampaignRequest{Owner: "o"})
			return forbidden(err)
		}},
		{"AcquireMulti", refused, func() error {
			_, err := svc.AcquireMulti(ctx, api.MultiAcquireRequest{Names: []string{"g/m3"}, Owner: "o"})
			return forbidden(err)
		}},
		{"Break", refused, func() error {
			_, err := svc.Break(ctx, api.Locks, "g/lock", api.BreakRequest{Reason: "r", Token: lock.Token}, "test")
			return forbidden(err)
		}},
		{"Check", refused, func() error {
			_, err := svc.Check(ctx, fence.Sequencer{Name: "g/lock", Token: lock.Token})
			return forbidden(err)
		}},
		{"Status", refused, func() error { _, err := svc.Status(ctx, "g/lock"); return forbidden(err) }},
		{"SemaphoreStatus", refused, func() error { _, err := svc.SemaphoreStatus(ctx, "g/sem"); return forbidden(err) }},
		{"ElectionStatus", refused, func() error { _, err := svc.ElectionStatus(ctx, "g/el"); return forbidden(err) }},
		{"WaitLock", refused, func() error { _, err := svc.WaitLock(ctx, "g/lock", 1, time.Minute); return forbidden(err) }},
		{"WaitSemaphore", refused, func() error { _, err := svc.WaitSemaphore(ctx, "g/sem", 1, time.Minute); return forbidden(err) }},
		{"WaitElection", refused, func() error { _, err := svc.WaitElection(ctx, "g/el", 1, time.Minute); return forbidden(err) }},
		{"SafeFor", refused, func() error {
			if _, known := svc.SafeFor(ctx, api.Locks, "g/lock", lock.LeaseID); known {
				return errors.New("it answered for a name the caller may not read")
			}
			return nil
		}},
		{"Leases", empty, func() error {
			if ls := svc.Leases(ctx, api.Locks); len(ls) != 0 {
				return fmt.Errorf("it lists %v", ls)
			}
			return nil
		}},
		{"MultiLeases", empty, func() error {
			if ls := svc.MultiLeases(ctx); len(ls) != 0 {
				return fmt.Errorf("it lists %v", ls)
			}
			return nil
		}},
		{"Overview", empty, func() error {
			o, err := svc.Overview(ctx, api.Locks, false, 0, 0)
			if err == nil && len(o.Locks)+len(o.Semaphores)+len(o.Elections) != 0 {
				return fmt.Errorf("it shows %+v", o)
			}
			return err
		}},
		{"Renew", byLease, func() error {
			_, err := svc.Renew(ctx, api.Locks, "g/lock", api.LeaseRequest{LeaseID: lock.LeaseID, Token: lock.Token, TTL: &ttl})
			return ok(err)
		}},
		{"RenewMany", byLease, func() error {
			_, errs, err := svc.RenewMany(ctx, api.RenewManyRequest{Leases: []api.RenewItem{{Name: "g/lock", LeaseID: lock.LeaseID, Token: lock.Token}}})
			if err == nil {
				err = errs[0]
			}
			return ok(err)
		}},
		{"RenewMulti", byLease, func() error {
			_, err := svc.RenewMulti(ctx, api.MultiLeaseRequest{LeaseID: multi.LeaseID, Locks: lockRefs})
			return ok(err)
		}},
		{"MultiLockStatus", byLease, func() error { _, err := svc.MultiLockStatus(ctx, multi.LeaseID, false, 0, 0); return ok(err) }},
		{"Proclaim", byLease, func() error {
			_, err := svc.Proclaim(ctx, "g/el", api.ProclaimRequest{LeaseID: lead.LeaseID, Token: lead.Token, Value: "v2"})
			return ok(err)
		}},
		{"Release", byLease, func() error {
			if err := svc.Release(ctx, api.Semaphores, "g/sem", api.LeaseRequest{LeaseID: sem.LeaseID, Token: sem.Token}); err != nil {
				return err
			}
			if err := svc.Release(ctx, api.Elections, "g/el", api.LeaseRequest{LeaseID: lead.LeaseID, Token: lead.Token}); err != nil {
				return err
			}
			return svc.Release(ctx, api.Locks, "g/lock", api.LeaseRequest{LeaseID: lock.LeaseID, Token: lock.Token})
		}},
		{"ReleaseMulti", byLease, func() error {
			_, err := svc.ReleaseMulti(ctx, api.MultiLeaseRequest{LeaseID: multi.LeaseID, Locks: lockRefs})
			return ok(err)
		}},
		{"Authority", notJudged, nil},
		{"Ready", notJudged, nil},
		{"ParseSequencer", notJudged, nil}, // parses; Check judges
		{"Start", notJudged, nil},
		{"Close", notJudged, nil},
	}
	// Every exported method of *Service has a row: a new verb cannot be
	// missed.
	var have []string
	for _, r := range rows {
		have = append(have, r.verb)
	}
	for _, m := range serviceMethods(t) {
		if !slices.Contains(have, m) {
			t.Errorf("*sequencer.Service has the verb %s, which this table does not say what deny-all answers", m)
		}
	}
	for _, r := range rows {
		if r.call == nil {
			continue
		}
		if err := r.call(); err != nil {
			t.Errorf("%s (want %s): %v", r.verb, r.expect, err)
		}
	}
	// Nothing refused changed anything: the admin sees no lease left.
	if ls := svc.Leases(g.admin, api.Locks); len(ls) != 0 {
		t.Errorf("leases left after the table: %+v", ls)
	}
	if ls := svc.MultiLeases(g.admin); len(ls) != 0 {
		t.Errorf("multi-lock leases left after the table: %+v", ls)
	}
}

// The daemon's own actions run below the verbs: under deny-all a lease
// still expires, and shutdown still releases what is held.
func TestDaemonsOwnActionsUnderDenyAll(t *testing.T) {
	clk := newFakeClock()
	g := startGated(t, daemonOpts{clock: clk, timeout: 30 * time.Second})
	svc := g.d.svc.Service
	ctx := context.Background()
	ttl := api.Duration(2 * time.Second)
	if _, err := svc.Acquire(ctx, "g/expires", api.AcquireRequest{Owner: "o", TTL: &ttl}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Acquire(ctx, "g/held", api.AcquireRequest{Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	g.denyAll(t)
	clk.Set(clk.Now().Add(3 * time.Second))
	zktest.Eventually(t, 30*time.Second, "the lease to expire under deny-all", func() bool {
		return counter(t, g.d.reg, "seqd_releases_total", map[string]string{"lock": "g/expires", "reason": "expired"}) == 1
	})
	if ls := svc.Leases(g.admin, api.Locks); len(ls) != 1 || ls[0].Name != "g/held" {
		t.Fatalf("after the expiry the daemon holds %+v, want g/held alone", ls)
	}
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := counter(t, g.d.reg, "seqd_releases_total", map[string]string{"lock": "g/held", "reason": "released"}); got != 1 {
		t.Fatalf("shutdown under deny-all released g/held %v times, want 1", got)
	}
	if n := len(zkChildren(t, sharedZK.Get(t).Servers(), g.d.svc.Config().Root+"/g/held")); n != 0 {
		t.Fatalf("g/held keeps %d contenders after shutdown", n)
	}
}

// The control of the table: without a policy the same anonymous caller is
// granted, reads and lists; without the admin it still breaks nothing.
func TestVerbsWithoutPolicy(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers(), adminToken: "admin-0123456789abcdef"})
	svc := d.svc.Service
	ctx := context.Background()
	l, err := svc.Acquire(ctx, "g/lock", api.AcquireRequest{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Status(ctx, "g/lock"); err != nil || st.Token != l.Token {
		t.Fatalf("status: %+v %v", st, err)
	}
	if ls := svc.Leases(ctx, api.Locks); len(ls) != 1 {
		t.Fatalf("leases: %+v", ls)
	}
	_, err = svc.Break(ctx, api.Locks, "g/lock", api.BreakRequest{Reason: "r", Token: l.Token}, "test")
	if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("an anonymous in-process break: %v, want forbidden naming the admin token", err)
	}
	admin := policy.WithCaller(ctx, policy.Caller{ID: policy.Admin, Via: policy.ViaAdmin})
	if _, err := svc.Break(admin, api.Locks, "g/lock", api.BreakRequest{Reason: "r", Token: l.Token}, "test"); err != nil {
		t.Fatalf("the admin's break: %v", err)
	}
}

// serviceMethods are the exported methods of *Service in the package's
// own files (its tests' hooks aside).
func serviceMethods(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Service" {
					out = append(out, fd.Name.Name)
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d methods of *Service: the parse is wrong", len(out))
	}
	return out
}

// Every HTTP route under deny-all, enumerated from the handler's route
// table: grants, break, check and status reads are 403; listings and the
// overview 200 with nothing in them; what a lease id authorizes (renew,
// release, resign, proclaim, a multi-lock's status) is answered as
// without a policy. /healthz, /readyz, /metrics and the page are outside
// the table: they name no lock and take no caller.
func TestEveryRouteUnderDenyAll(t *testing.T) {
	g := startGated(t, daemonOpts{})
	svc := g.d.svc.Service
	ctx := context.Background()
	leases := map[api.Family]api.Lease{}
	var err error
	if leases[api.Locks], err = svc.Acquire(ctx, "g/x", api.AcquireRequest{Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	if leases[api.Semaphores], err = svc.AcquireSemaphore(ctx, "g/x", api.SemaphoreAcquireRequest{Owner: "o", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if leases[api.Elections], err = svc.Campaign(ctx, "g/x", api.CampaignRequest{Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	multi, err := svc.AcquireMulti(ctx, api.MultiAcquireRequest{Names: []string{"g/m"}, Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	g.denyAll(t)

	leaseBody := func(f api.Family) string {
		l := leases[f]
		return fmt.Sprintf(`{"lease_id":%q,"token":%d}`, l.LeaseID, l.Token)
	}
	multiBody := fmt.Sprintf(`{"lease_id":%q,"locks":[{"name":"g/m","token":%d}]}`, multi.LeaseID, multi.Locks[0].Token)
	type row struct {
		name, body string
		status     int
		empty      string // the JSON list that must be empty
	}
	rows := map[string]func(f api.Family) row{
		"POST /v1/check": func(api.Family) row {
			return row{"", fmt.Sprintf(`{"name":"g/x","token":%d}`, leases[api.Locks].Token), 403, ""}
		},
		"POST /v1/renew": func(api.Family) row {
			l := leases[api.Locks]
			return row{"", fmt.Sprintf(`{"leases":[{"name":"g/x","lease_id":%q,"token":%d}]}`, l.LeaseID, l.Token), 200, ""}
		},
		"GET list":     func(f api.Family) row { return row{"", "", 200, string(f)} },
		"GET overview": func(f api.Family) row { return row{"", "", 200, "locks"} },
		"GET status": func(f api.Family) row {
			if f == api.MultiLocks {
				return row{multi.LeaseID, "", 200, ""}
			}
			return row{"g/x", "", 403, ""}
		},
		"POST acquire": func(f api.Family) row {
			if f == api.Semaphores {
				return row{"g/new", `{"owner":"o","limit":2}`, 403, ""}
			}
			return row{"g/new", `{"owner":"o"}`, 403, ""}
		},
		"POST campaign": func(api.Family) row { return row{"g/new", `{"owner":"o"}`, 403, ""} },
		"POST break": func(f api.Family) row {
			return row{"g/x", fmt.Sprintf(`{"reason":"r","token":%d}`, leases[f].Token), 403, ""}
		},
		"POST renew": func(f api.Family) row { return row{"g/x", leaseBody(f), 200, ""} },
		"POST proclaim": func(f api.Family) row {
			return row{"g/x", `{"lease_id":"` + leases[f].LeaseID + `","token":` + fmt.Sprint(leases[f].Token) + `,"value":"v"}`, 200, ""}
		},
		"POST release": func(f api.Family) row { return row{"g/x", leaseBody(f), 200, ""} },
		"POST resign":  func(f api.Family) row { return row{"g/x", leaseBody(f), 200, ""} },
	}
	multiRows := map[string]row{
		"POST acquire": {"", `{"names":["g/n"],"owner":"o"}`, 403, ""},
		"POST renew":   {"", multiBody, 200, ""},
		"POST release": {"", multiBody, 200, ""},
	}
	var ends []httpapi.Route // releases and resigns go last
	var routes []httpapi.Route
	for _, r := range httpapi.Routes() {
		if r.Action == "release" || r.Action == "resign" {
			ends = append(ends, r)
		} else {
			routes = append(routes, r)
		}
	}
	for _, r := range append(routes, ends...) {
		key := r.Method + " " + r.Action
		if r.Family == "" {
			key = r.Method + " " + r.Path
		}
		mk, ok := rows[key]
		if !ok {
			t.Errorf("the route %s %s has no row: say what it answers under deny-all", r.Method, r.Path)
			continue
		}
		want := mk(r.Family)
		if m, ok := multiRows[r.Method+" "+r.Action]; ok && r.Family == api.MultiLocks {
			want = m
		}
		url := g.d.srv.URL + strings.Replace(r.Path, "{name}", want.name, 1)
		status, body := httptry.Do(t, r.Method, url, want.body, map[string]string{"Content-Type": "application/json"})
		if status != want.status {
			t.Errorf("%s %s: %d %s, want %d", r.Method, url, status, body, want.status)
			continue
		}
		if status == 403 && !strings.Contains(body, `"code":"forbidden"`) {
			t.Errorf("%s %s: %s, want the code forbidden", r.Method, url, body)
		}
		if want.empty != "" {
			var list map[string]any
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatalf("%s %s: %s: %v", r.Method, url, body, err)
			}
			if items, _ := list[want.empty].([]any); len(items) != 0 {
				t.Errorf("%s %s shows %v, want nothing", r.Method, url, items)
			}
		}
	}
	if ls := svc.Leases(g.admin, api.Locks); len(ls) != 0 {
		t.Errorf("leases left after the table: %+v", ls)
	}
}

// A grant refused as held after a wait says how long it waited, and does
// not suggest the lease-id retry, which is for an owner asking again at
// once; one that tried once still suggests it.
func TestHeldAfterAWaitSaysItWaited(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers(), clock: newFakeClock()})
	svc := d.svc.Service
	ctx := ctxT(t, time.Minute)
	if _, err := svc.Acquire(ctx, "w/x", api.AcquireRequest{Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Acquire(ctx, "w/x", api.AcquireRequest{Owner: "b"})
	if !errors.Is(err, api.ErrHeld) || !strings.Contains(err.Error(), "lease_id") || strings.Contains(err.Error(), "waited") {
		t.Fatalf("tried once: %v, want held suggesting the lease_id retry", err)
	}
	wait := api.Duration(time.Millisecond)
	_, err = svc.Acquire(ctx, "w/x", api.AcquireRequest{Owner: "b", Wait: &wait})
	if !errors.Is(err, api.ErrHeld) || strings.Contains(err.Error(), "lease_id") || !strings.Contains(err.Error(), "waited 1ms") {
		t.Fatalf("after a wait: %v, want held saying it waited 1ms, with no lease_id retry", err)
	}
}

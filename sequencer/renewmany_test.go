package sequencer_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"
)

// One POST /v1/renew renews many leases, each answered as its own renew
// would be: the live ones extended with their token unchanged, a released
// one 409 lost, a superseded one 409 stale_token with the current token.
// A malformed item refuses the whole batch and renews nothing.
func TestRenewMany(t *testing.T) {
	d := startDaemon(t, daemonOpts{servers: sharedZK.Get(t).Servers()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var items []RenewItem
	var live []Lease
	for i := range 20 {
		l, err := d.client.Acquire(ctx, fmt.Sprintf("many/%d", i), "me", 2*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, l)
		items = append(items, RenewItem{Name: l.Name, LeaseID: l.LeaseID, Token: l.Token})
	}
	// many/0 released; many/1 released and granted to someone else.
	if err := d.client.Release(ctx, "many/0", live[0].LeaseID, live[0].Token); err != nil {
		t.Fatal(err)
	}
	if err := d.client.Release(ctx, "many/1", live[1].LeaseID, live[1].Token); err != nil {
		t.Fatal(err)
	}
	other, err := d.client.Acquire(ctx, "many/1", "other", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}

	before := time.Now()
	res, err := d.client.RenewMany(ctx, items, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		switch {
		case r.Name != items[i].Name:
			t.Errorf("result %d is for %s, want %s", i, r.Name, items[i].Name)
		case i == 0:
			if r.Status != http.StatusConflict || r.Code != CodeLost {
				t.Errorf("released lease: %+v, want 409 lost", r)
			}
		case i == 1:
			if r.Status != http.StatusConflict || r.Code != CodeStaleToken || r.CurrentToken == nil || *r.CurrentToken != other.Token {
				t.Errorf("superseded lease: %+v, want 409 stale_token with current token %d", r, other.Token)
			}
		default:
			if r.Status != http.StatusOK || r.Lease == nil || r.Lease.Token != items[i].Token || time.Duration(r.Lease.TTL) != time.Minute {
				t.Errorf("live lease %s: %+v, want 200 with token %d and ttl 1m", items[i].Name, r, items[i].Token)
			}
		}
	}
	// The leases really were extended: past their old 2 s TTL they live.
	time.Sleep(time.Until(before.Add(2500 * time.Millisecond)))
	if _, err := d.client.Renew(ctx, "many/5", items[5].LeaseID, items[5].Token, 0); err != nil {
		t.Errorf("a lease renewed for 1m expired at its old TTL: %v", err)
	}

	// Bad input: 400, and nothing renewed (the control lease keeps its TTL).
	ctl, err := d.client.Acquire(ctx, "many/ctl", "me", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	good := RenewItem{Name: ctl.Name, LeaseID: ctl.LeaseID, Token: ctl.Token}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", `{"leases":[]}`, "leases is required"},
		{"bad name", fmt.Sprintf(`{"leases":[{"name":%q,"lease_id":%q,"token":%d},{"name":"a//b","lease_id":%q,"token":1}]}`, good.Name, good.LeaseID, good.Token, good.LeaseID), "leases[1]"},
		{"bad lease id", fmt.Sprintf(`{"leases":[{"name":%q,"lease_id":%q,"token":%d},{"name":"x","lease_id":"zz","token":1}]}`, good.Name, good.LeaseID, good.Token), "32 lowercase hex"},
		{"no token", fmt.Sprintf(`{"leases":[{"name":%q,"lease_id":%q,"token":%d},{"name":"x","lease_id":%q}]}`, good.Name, good.LeaseID, good.Token, good.LeaseID), "token is required"},
		{"unknown field", fmt.Sprintf(`{"leases":[{"name":%q,"lease_id":%q,"token":%d,"owner":"me"}]}`, good.Name, good.LeaseID, good.Token), "owner"},
		{"bad ttl", fmt.Sprintf(`{"leases":[{"name":%q,"lease_id":%q,"token":%d}],"ttl":"1ns"}`, good.Name, good.LeaseID, good.Token), "ttl"},
		{"too many", `{"leases":[` + strings.TrimSuffix(strings.Repeat(`{"name":"x","lease_id":"0123456789abcdef0123456789abcdef","token":1},`, MaxRenewBatch+1), ",") + `]}`, "more than"},
	} {
		status, body := httpDo(t, "POST", d.srv.URL+"/v1/renew", tc.body)
		if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", tc.name, status, body, tc.want)
		}
	}
	for _, l := range d.svc.Leases() {
		if l.Name == ctl.Name && time.Duration(l.TTL) != 30*time.Second {
			t.Errorf("a refused batch changed the control lease's TTL to %v", time.Duration(l.TTL))
		}
	}
	if status, _ := httpDo(t, "GET", d.srv.URL+"/v1/renew", ""); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/renew: %d, want 405", status)
	}
}

// BenchmarkRenewMany renews 500 leases of one client over HTTP: one request
// per lease (16 at a time), against one POST /v1/renew for all of them. It
// reports renewals per second of each and their ratio.
func BenchmarkRenewMany(b *testing.B) {
	d := startDaemon(b, daemonOpts{servers: sharedZK.Get(b).Servers()})
	ctx := context.Background()
	const n = 500
	items := make([]RenewItem, n)
	for i := range items {
		l, err := d.client.Acquire(ctx, fmt.Sprintf("bench-many/%d", i), "me", time.Hour, 0)
		if err != nil {
			b.Fatal(err)
		}
		items[i] = RenewItem{Name: l.Name, LeaseID: l.LeaseID, Token: l.Token}
	}
	var one, many time.Duration
	for b.Loop() {
		start := time.Now()
		slots := make(chan struct{}, sequencer.RenewParallel)
		errs := make(chan error, n)
		for _, it := range items {
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				_, err := d.client.Renew(ctx, it.Name, it.LeaseID, it.Token, 0)
				errs <- err
			}()
		}
		for range items {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		one += time.Since(start)
		start = time.Now()
		res, err := d.client.RenewMany(ctx, items, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Status != 200 {
				b.Fatalf("%s: %d %s", r.Name, r.Status, r.Error)
			}
		}
		many += time.Since(start)
	}
	b.ReportMetric(float64(n*b.N)/one.Seconds(), "one-by-one-renews/s")
	b.ReportMetric(float64(n*b.N)/many.Seconds(), "batched-renews/s")
	b.ReportMetric(one.Seconds()/many.Seconds(), "ratio")
}

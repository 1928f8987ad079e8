package fencecheck_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqd/seqd/fencecheck"
)

// verdicts is the report's verdicts in case order: "holds holds fails …".
func verdicts(rep *fencecheck.Report) string {
	var vs []string
	for _, c := range rep.Cases {
		vs = append(vs, c.Verdict)
	}
	return strings.Join(vs, " ")
}

func run(t *testing.T, cfg fencecheck.Config) *fencecheck.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := fencecheck.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var tbl strings.Builder
	rep.WriteTable(&tbl)
	t.Logf("\n%s", tbl.String())
	return rep
}

// TestRunHolds: a resource built on fence.Fence, restarted in process in
// case 6, holds in every case; and the run released every lease it took
// (the daemon has none left under the run's locks).
func TestRunHolds(t *testing.T) {
	t.Parallel()
	c := daemon(t)
	s := startKV(t, &kv{})
	rep := run(t, s.config(c))
	if got, want := verdicts(rep), "holds holds holds holds holds holds holds holds"; got != want || !rep.Holds {
		t.Fatalf("verdicts %q (holds %v), want %q", got, rep.Holds, want)
	}
	ctx := context.Background()
	for i := 1; i <= 8; i++ {
		lock := rep.Locks + "/c" + string(rune('0'+i))
		st, err := c.Status(ctx, lock)
		if err == nil && st.Held {
			t.Errorf("%s is still held after the run", lock)
		}
	}
}

// TestRunCatchesStrictLess is the negative control: a resource that wants
// a token above its max refuses the holder's second write with the same
// token, and case 2 says so; the report does not hold.
func TestRunCatchesStrictLess(t *testing.T) {
	t.Parallel()
	s := startKV(t, &kv{strictLess: true})
	cfg := s.config(daemon(t))
	cfg.Restart = nil
	rep := run(t, cfg)
	if rep.Holds || rep.Cases[1].Verdict != fencecheck.Fails || !strings.Contains(rep.Cases[1].Detail, "again with the same token") {
		t.Fatalf("a resource that refuses equal tokens: holds %v, case 2 %+v", rep.Holds, rep.Cases[1])
	}
	if rep.Cases[5].Verdict != fencecheck.Skipped || rep.Cases[5].Detail != "no restart" {
		t.Errorf("case 6 without Restart = %+v, want skipped", rep.Cases[5])
	}
}

// TestConfigErrors: a Config that cannot run is a *ConfigError naming the
// field, and nothing is sent to the daemon or the resource.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u := srv.URL + "/kv/{key}"
	c := daemon(t)
	ok := func(f func(*fencecheck.Config)) fencecheck.Config {
		cfg := fencecheck.Config{Write: fencecheck.Request{URL: u}, TokenHeader: "Fencing-Token", Grants: fencecheck.Daemon(c)}
		f(&cfg)
		return cfg
	}
	for _, tc := range []struct {
		cfg   fencecheck.Config
		field string
	}{
		{ok(func(c *fencecheck.Config) { c.Write.URL = "" }), "Write.URL"},
		{ok(func(c *fencecheck.Config) { c.Write.URL = srv.URL + "/kv" }), "Write.URL"},
		{ok(func(c *fencecheck.Config) { c.Write.URL = "ftp://h/{key}" }), "Write.URL"},
		{ok(func(c *fencecheck.Config) { c.Write.Body = "{tokn}" }), "Write.Body"},
		{ok(func(c *fencecheck.Config) { c.Write.Method = "P U T" }), "Write.Method"},
		{ok(func(c *fencecheck.Config) { c.TokenHeader = "" }), "Write"},
		{ok(func(c *fencecheck.Config) { c.TokenHeader = "Bad Name" }), "TokenHeader"},
		{ok(func(c *fencecheck.Config) { c.Header = http.Header{"Bad Name": {"x"}} }), "Header"},
		{ok(func(c *fencecheck.Config) { c.RefuseStatus = 200 }), "RefuseStatus"},
		{ok(func(c *fencecheck.Config) { c.Holders = 1 }), "Holders"},
		{ok(func(c *fencecheck.Config) { c.LockPrefix = "/abs" }), "LockPrefix"},
		{ok(func(c *fencecheck.Config) { c.KeyPrefix = "a b" }), "KeyPrefix"},
		{ok(func(c *fencecheck.Config) { c.Timeout = -time.Second }), "Timeout"},
		{ok(func(c *fencecheck.Config) { c.Grants = nil }), "Grants"},
	} {
		_, err := fencecheck.Run(context.Background(), tc.cfg)
		var ce *fencecheck.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Run with a bad %s = %v, want a ConfigError naming it", tc.field, err)
		}
	}
	_, err := fencecheck.Run(context.Background(), ok(func(c *fencecheck.Config) { c.TokenHeader = "" }))
	if !errors.Is(err, fencecheck.ErrNoToken) {
		t.Errorf("a write without a token: %v, want ErrNoToken", err)
	}
	if _, err := fencecheck.Run(context.Background(), ok(func(*fencecheck.Config) {})); err != nil {
		t.Fatalf("the control, a good Config against a server that answers 200 to all: %v", err)
	}
	if hits.Load() == 0 {
		t.Fatal("the control sent nothing to the resource")
	}
	hits.Store(0)
	fencecheck.Run(context.Background(), ok(func(c *fencecheck.Config) { c.Holders = 1 }))
	if n := hits.Load(); n != 0 {
		t.Errorf("a ConfigError sent %d requests", n)
	}
}

// TestUnreachable: a resource that does not answer the first write stops
// the run with an *UnreachableError.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + "/kv/{key}"
	srv.Close()
	_, err := fencecheck.Run(context.Background(), fencecheck.Config{Write: fencecheck.Request{URL: u}, TokenHeader: "T", Grants: fencecheck.Daemon(daemon(t))})
	var ue *fencecheck.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("Run against a closed port = %v, want an UnreachableError", err)
	}
}

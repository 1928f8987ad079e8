package redisfence_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

// TestScriptIsTheFile: the embedded script is fence.lua's bytes, and it
// reserves the prefix the package puts in front of fence keys.
func TestScriptIsTheFile(t *testing.T) {
	b, err := os.ReadFile("fence.lua")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != redisfence.Script {
		t.Error("Script is not fence.lua")
	}
	if want := "local prefix = '" + redisfence.Prefix + "'\n"; !strings.Contains(redisfence.Script, want) {
		t.Errorf("the script does not reserve %q: no line %q", redisfence.Prefix, want)
	}
}

// TestNewRefusesEvictingPolicy: every allkeys-* policy is refused with a
// sentence that names it; noeviction and the volatile-* policies (which
// evict only keys with a TTL, never a fence key) are taken.
func TestNewRefusesEvictingPolicy(t *testing.T) {
	ctx := context.Background()
	rdb := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true}))
	for _, p := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction", "volatile-lru", "volatile-ttl"} {
		if err := rdb.ConfigSet(ctx, "maxmemory-policy", p).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := redisfence.New(ctx, rdb, redisfence.Options{Logger: quiet})
		evicting := strings.HasPrefix(p, "allkeys-")
		if evicting && (!errors.Is(err, redisfence.ErrEvictable) || !strings.Contains(err.Error(), p)) {
			t.Errorf("New with %s: %v, want ErrEvictable naming it", p, err)
		}
		if !evicting && err != nil {
			t.Errorf("New with %s: %v", p, err)
		}
	}
}

// TestRecheck: a policy turned to allkeys-lru after New is seen when
// DefaultRecheck has passed on the fence's clock, not before; while it
// lasts every Do is refused, and once it is set back the next Do reads the
// settings again and is admitted.
func TestRecheck(t *testing.T) {
	ctx := context.Background()
	rdb := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true}))
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	f, err := redisfence.New(ctx, rdb, redisfence.Options{Logger: quiet, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	do := func(tok uint64) error {
		_, err := f.Do(ctx, "orders", tok, redisfence.Cmd{})
		return err
	}
	if err := do(1); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(redisfence.DefaultRecheck - time.Millisecond)
	if err := do(2); err != nil {
		t.Errorf("Do before the recheck is due: %v, want admitted (the settings are not read yet)", err)
	}
	clk.Advance(time.Millisecond)
	if err := do(3); !errors.Is(err, redisfence.ErrEvictable) {
		t.Errorf("Do once the recheck is due: %v, want ErrEvictable", err)
	}
	if err := do(4); !errors.Is(err, redisfence.ErrEvictable) {
		t.Errorf("Do again, no time passed: %v, want ErrEvictable still", err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := do(5); err != nil {
		t.Errorf("Do after the policy was set back: %v", err)
	}
	if err := rdb.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(redisfence.DefaultRecheck)
	if err := do(6); !errors.Is(err, redisfence.ErrNotDurable) {
		t.Errorf("Do after appendonly no and a recheck: %v, want ErrNotDurable", err)
	}
	if max, err := f.Max(ctx, "orders"); err != nil || max != 5 {
		t.Errorf("max %d (%v), want 5: a refused Do moved it", max, err)
	}
}

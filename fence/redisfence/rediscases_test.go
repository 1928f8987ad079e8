package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/internal/dbcases"
	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

// redisRun is one run of a Redis case: the fence on a fake clock, or, as
// the control, the unguarded script with no check of Redis's settings.
type redisRun struct {
	rdb       *redis.Client
	clk       *clock.Fake
	f         *redisfence.Fence
	unguarded *redis.Script // the control, nil for the fence
}

const caseValueKey = "value:k"

var caseFenceKey = redisfence.Prefix + "k"

func (r *redisRun) open(ctx context.Context) error {
	if r.unguarded != nil {
		return nil
	}
	f, err := redisfence.New(ctx, r.rdb, redisfence.Options{Now: r.clk.Now, Logger: quiet})
	if err == nil {
		r.f = f
	}
	return err
}

func (r *redisRun) do(ctx context.Context, token string, argv []string, keys int) (any, error) {
	n, err := fence.ParseToken(token)
	if err != nil {
		return nil, err
	}
	if len(argv) < 1+keys {
		return nil, fmt.Errorf("argv %q has fewer than %d keys", argv, keys)
	}
	name, ks, rest := argv[0], argv[1:1+keys], argv[1+keys:]
	if r.unguarded == nil {
		if r.f == nil {
			return nil, errors.New("no fence: the last open was refused")
		}
		args := make([]any, len(rest))
		for i, a := range rest {
			args[i] = a
		}
		return r.f.Do(ctx, "k", n, redisfence.Cmd{Name: name, Keys: ks, Args: args})
	}
	args := []any{redisfence.Pad(n), name}
	for _, a := range rest {
		args = append(args, a)
	}
	res, err := r.unguarded.Run(ctx, r.rdb, append([]string{caseFenceKey}, ks...), args...).Slice()
	if err != nil {
		return nil, err
	}
	if res[0].(int64) != 1 {
		return nil, fence.ErrStaleToken
	}
	if len(res) > 1 {
		return res[1], nil
	}
	return nil, nil
}

func redisOutcome(err error) string {
	switch {
	case errors.Is(err, redisfence.ErrEvictable), errors.Is(err, redisfence.ErrNotDurable):
		return "unsafe"
	case errors.Is(err, redisfence.ErrRefusedCommand):
		return "refused"
	}
	return dbcases.Outcome(err)
}

func names(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.NewReplacer("$fence", caseFenceKey, "$value", caseValueKey).Replace(a)
	}
	return out
}

// evict writes keys of 64 KiB until Redis has evicted the fence key.
func evict(ctx context.Context, rdb *redis.Client) error {
	blob := strings.Repeat("x", 64<<10)
	for i := 0; i < 4096; i++ {
		rdb.Set(ctx, fmt.Sprintf("filler:%d", i), blob, 0) // an OOM refusal is an answer too
		if i%8 == 7 {
			n, err := rdb.Exists(ctx, caseFenceKey).Result()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
		}
	}
	return errors.New("256 MiB written and the fence key is still there")
}

// runRedisCase runs c on rdb (emptied first; the settings the case
// changes are set back after it) and returns the first expectation not
// met.
func runRedisCase(ctx context.Context, rdb *redis.Client, c dbcases.RedisCase, unguarded *redis.Script) (err error) {
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	restore := map[string]string{}
	defer func() {
		for k, v := range restore {
			if rerr := rdb.ConfigSet(ctx, k, v).Err(); rerr != nil && err == nil {
				err = fmt.Errorf("restoring %s: %w", k, rerr)
			}
		}
	}()
	r := &redisRun{rdb: rdb, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), unguarded: unguarded}
	if err := r.open(ctx); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	for i, st := range c.Steps {
		switch st.Op {
		case "write":
			_, err := r.do(ctx, st.Token, []string{"SET", caseValueKey, *st.Value}, 1)
			if got := redisOutcome(err); got != st.Expect {
				return fmt.Errorf("step %d: write with token %s: %s, want %s", i, st.Token, got, st.Expect)
			}
		case "command":
			_, err := r.do(ctx, st.Token, names(st.Argv), st.Keys)
			if got := redisOutcome(err); got != st.Expect {
				return fmt.Errorf("step %d: %q with token %s: %s, want %s", i, st.Argv, st.Token, got, st.Expect)
			}
		case "value":
			v, err := rdb.Get(ctx, caseValueKey).Result()
			var got *string
			if err == nil {
				got = &v
			} else if !errors.Is(err, redis.Nil) {
				return err
			}
			if dbcases.Show(got) != dbcases.Show(st.Value) {
				return fmt.Errorf("step %d: k holds %s, want %s", i, dbcases.Show(got), dbcases.Show(st.Value))
			}
		case "max":
			if unguarded != nil {
				continue
			}
			got, err := r.f.Max(ctx, "k")
			if want, _ := fence.ParseToken(st.Token); err != nil || got != want {
				return fmt.Errorf("step %d: max %d (%v), want %d", i, got, err, want)
			}
		case "raw":
			args := []any{}
			for _, a := range names(st.Argv) {
				args = append(args, a)
			}
			if err := rdb.Do(ctx, args...).Err(); err != nil {
				return fmt.Errorf("step %d: %q: %w", i, st.Argv, err)
			}
		case "config":
			for k, v := range st.Set {
				if _, ok := restore[k]; !ok {
					old, err := rdb.ConfigGet(ctx, k).Result()
					if err != nil {
						return err
					}
					restore[k] = old[k]
				}
				if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
					return fmt.Errorf("step %d: CONFIG SET %s %s: %w", i, k, v, err)
				}
			}
		case "evict":
			if err := evict(ctx, rdb); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		case "recheck":
			r.clk.Advance(redisfence.DefaultRecheck)
		case "open":
			if got := redisOutcome(r.open(ctx)); got != st.Expect {
				return fmt.Errorf("step %d: open: %s, want %s", i, got, st.Expect)
			}
		case "ttl":
			ttl, err := rdb.PTTL(ctx, caseFenceKey).Result()
			if err != nil {
				return err
			}
			if has := ttl > 0; has != st.Has {
				return fmt.Errorf("step %d: the fence key's TTL is %v, want one: %v", i, ttl, st.Has)
			}
		default:
			return fmt.Errorf("step %d: unknown op %q", i, st.Op)
		}
	}
	return nil
}

// TestRedisCases runs the Redis cases one at a time on a Redis of their
// own, with the fence on a fake clock, and under the unguarded control (the
// script before its guards), which must fail the cases that name it.
func TestRedisCases(t *testing.T) {
	t.Parallel()
	rdb := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true}))
	file := dbcases.LoadRedis(t)
	src, err := os.ReadFile(dbcases.UnguardedScriptPath())
	if err != nil {
		t.Fatal(err)
	}
	unguarded := redis.NewScript(string(src))
	ctx := context.Background()
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := runRedisCase(ctx, rdb, c, nil); err != nil {
				t.Errorf("fenced: %v", err)
			}
			err := runRedisCase(ctx, rdb, c, unguarded)
			switch must := slices.Contains(c.FailsUnder, "unguarded"); {
			case must && err == nil:
				t.Errorf("the unguarded script passes %s, which must fail under it", c.Name)
			case must:
				t.Logf("the unguarded script fails, as it must: %v", err)
			case err != nil:
				t.Errorf("the unguarded script fails %s, which names it nowhere: %v", c.Name, err)
			}
		})
	}
}

package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/internal/dbcases"
	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

func client(t *testing.T, d *testenv.DB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.PoolSize = 16
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// target is the fence (or a control) on one Redis, its keys under a prefix
// of their own per case.
type target struct {
	d       *testenv.DB
	rdb     *redis.Client
	f       *redisfence.Fence
	prefix  string
	control string
}

var caseN atomic.Int64

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTarget(t *testing.T, d *testenv.DB, rdb *redis.Client, control string) *target {
	f, err := redisfence.New(context.Background(), rdb, redisfence.Options{AllowVolatile: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &target{d: d, rdb: rdb, f: f, control: control, prefix: fmt.Sprintf("case%d:", caseN.Add(1))}
}

func (tg *target) fenceKey(key string) string { return tg.prefix + "fence:" + key }
func (tg *target) valueKey(key string) string { return tg.prefix + "value:" + key }

// controlScript checks the max as a Lua number (double) or as the string
// the token is, unpadded: what a hand-written script does wrong.
const controlScript = `
local max = redis.call('GET', KEYS[1])
if max then
  if ARGV[3] == 'double' and tonumber(ARGV[1]) < tonumber(max) then return 0 end
  if ARGV[3] == 'string' and ARGV[1] < max then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2]) end
return 1
`

var ctlScript = redis.NewScript(controlScript)

func (tg *target) Write(ctx context.Context, key, token, value string) error {
	switch tg.control {
	case "":
		n, err := fence.ParseToken(token)
		if err != nil {
			return err
		}
		_, err = tg.f.Do(ctx, tg.fenceKey(key), n, redisfence.Cmd{Name: "SET", Keys: []string{tg.valueKey(key)}, Args: []any{value}})
		return err
	case "none":
		return tg.rdb.Set(ctx, tg.valueKey(key), value, 0).Err()
	}
	if tg.control == "double" {
		if _, err := strconv.ParseFloat(token, 64); err != nil {
			return fence.ErrInvalidSequencer
		}
	}
	ok, err := ctlScript.Run(ctx, tg.rdb, []string{tg.fenceKey(key), tg.valueKey(key)}, token, value, tg.control).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fence.ErrStaleToken
	}
	return nil
}

func (tg *target) Read(ctx context.Context, key, token string) (*string, error) {
	switch tg.control {
	case "":
		n, err := fence.ParseToken(token)
		if err != nil {
			return nil, err
		}
		v, err := tg.f.Do(ctx, tg.fenceKey(key), n, redisfence.Cmd{Name: "GET", Keys: []string{tg.valueKey(key)}})
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil
		}
		s := v.(string)
		return &s, nil
	case "none":
		return tg.Value(ctx, key)
	}
	if err := tg.Write(ctx, key, token, ""); err != nil {
		return nil, err
	}
	return tg.Value(ctx, key)
}

func (tg *target) Delete(ctx context.Context, key, token string) error {
	switch tg.control {
	case "":
		n, err := fence.ParseToken(token)
		if err != nil {
			return err
		}
		_, err = tg.f.Do(ctx, tg.fenceKey(key), n, redisfence.Cmd{Name: "DEL", Keys: []string{tg.valueKey(key)}})
		return err
	case "none":
		return tg.rdb.Del(ctx, tg.valueKey(key)).Err()
	}
	if err := tg.Write(ctx, key, token, ""); err != nil {
		return err
	}
	return tg.rdb.Del(ctx, tg.valueKey(key)).Err()
}

func (tg *target) Value(ctx context.Context, key string) (*string, error) {
	v, err := tg.rdb.Get(ctx, tg.valueKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func (tg *target) Max(ctx context.Context, key string) (uint64, error) {
	return tg.f.Max(ctx, tg.fenceKey(key))
}

func (tg *target) Restart(ctx context.Context) error {
	tg.d.Kill()
	if err := tg.d.Restart(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := tg.rdb.Ping(ctx).Err()
		if err == nil || attempt == 20 {
			return err
		}
	}
}

// TestSharedCases runs the shared cases on Redis with appendfsync always,
// with the controls (no fence, a Lua number, an unpadded string) that must
// fail the cases that say so; and, without the append-only file, the
// durable case fails: the restart forgot the max.
func TestSharedCases(t *testing.T) {
	t.Run("aof-always", func(t *testing.T) {
		t.Parallel()
		d := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true, AppendFsync: "always"})
		rdb := client(t, d)
		dbcases.Run(t, dbcases.Suite{
			Durable:  true,
			Controls: []string{"none", "string", "double"},
			New: func(t *testing.T, c dbcases.Case, ctl string) dbcases.Target {
				return newTarget(t, d, rdb, ctl)
			},
		})
	})
	t.Run("no-aof", func(t *testing.T) {
		t.Parallel()
		d := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis})
		rdb := client(t, d)
		var durable []dbcases.Case
		for _, c := range dbcases.Load(t).Cases {
			if c.Durable {
				durable = append(durable, c)
			}
		}
		if len(durable) == 0 {
			t.Fatal("no durable case")
		}
		for _, c := range durable {
			err := dbcases.RunCase(context.Background(), newTarget(t, d, rdb, ""), c, "")
			if err == nil {
				t.Errorf("%s passes on a Redis without the append-only file: the restart should have forgotten the max", c.Name)
			} else {
				t.Logf("%s fails without the append-only file, as it must: %v", c.Name, err)
			}
		}
	})
}

// TestNewRefusesNoAOF: New refuses a Redis without the append-only file,
// and with AllowVolatile takes it with a warning; with appendfsync
// everysec it warns.
func TestNewRefusesNoAOF(t *testing.T) {
	ctx := context.Background()
	volatile := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis}))
	if _, err := redisfence.New(ctx, volatile, redisfence.Options{}); !errors.Is(err, redisfence.ErrNotDurable) {
		t.Fatalf("New on a Redis without AOF: %v, want ErrNotDurable", err)
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := redisfence.New(ctx, volatile, redisfence.Options{AllowVolatile: true, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "no append-only file") {
		t.Errorf("no warning with AllowVolatile: %q", logs.String())
	}
	logs.Reset()
	everysec := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true, AppendFsync: "everysec"}))
	if _, err := redisfence.New(ctx, everysec, redisfence.Options{Logger: log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "appendfsync=everysec") {
		t.Errorf("no warning with appendfsync everysec: %q", logs.String())
	}
	logs.Reset()
	always := client(t, dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true}))
	if _, err := redisfence.New(ctx, always, redisfence.Options{Logger: log}); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("a warning with appendfsync always: %q", logs.String())
	}
}

// TestDoSequencer runs the shared signed-sequencer vectors through
// DoSequencer: an accepted sequencer's token fences the key and its command
// runs; a refused one changes nothing.
func TestDoSequencer(t *testing.T) {
	d := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true})
	rdb := client(t, d)
	ctx := context.Background()
	f, err := redisfence.New(ctx, rdb, redisfence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seqs := dbcases.LoadSequencers(t)
	v := seqs.Verifier(t)
	for i, vec := range seqs.Vectors {
		fk, vk := fmt.Sprintf("fence:%d", i), fmt.Sprintf("value:%d", i)
		_, err := f.DoSequencer(ctx, fk, vec.Accept(t, v), vec.Sequencer, redisfence.Cmd{Name: "SET", Keys: []string{vk}, Args: []any{"v"}})
		if got := dbcases.SequencerOutcome(err); got != vec.Want() {
			t.Errorf("vector %d %.40q: %s, want %s", i, vec.Sequencer, got, vec.Want())
			continue
		}
		max, err := f.Max(ctx, fk)
		if err != nil {
			t.Fatal(err)
		}
		n, err := rdb.Exists(ctx, vk).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		if vec.Expect == "ok" {
			want, _ = strconv.ParseUint(vec.Token, 10, 64)
		}
		if max != want || (n == 1) != (vec.Expect == "ok") {
			t.Errorf("vector %d (%s): max %d, value written %v; want max %d", i, vec.Expect, max, n == 1, want)
		}
	}
}

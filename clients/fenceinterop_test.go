package clients_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/fence/sqlfence"
)

// The Go fences and the other languages' share one fence table and one
// Redis key (under redisfence.Prefix). Before a suite runs, the Go fences
// raise the max of the key interop/<language> to 1000 on each database;
// the suite must find 999 stale and 1000 and then 1001 admitted (its
// interop test), and after it the Go fences must find the max at 1001 and
// 1000 stale. The suite also compares its SQL with the Go one
// (SEQD_TEST_FENCE_GO_CREATE_*); the script is one file, which each
// built package carries (TestFenceScriptInPackages).

const interopSeed, interopAfter = 1000, 1001

// goFences are the Go fences on the harness's databases.
type goFences struct {
	pg, maria *sqlfence.Fence
	rd        *redisfence.Fence
}

func openGoFences(t *testing.T, ctx context.Context) goFences {
	t.Helper()
	open := func(driver, dsn string, d sqlfence.Dialect) *sqlfence.Fence {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f, err := sqlfence.New(db, d, sqlfence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Create(ctx); err != nil {
			t.Fatal(err)
		}
		return f
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisLazy.Get(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	rf, err := redisfence.New(ctx, rdb, redisfence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return goFences{
		pg:    open("pgx", pgLazy.Get(t).DSN(), sqlfence.Postgres),
		maria: open("mysql", mariaLazy.Get(t).DSN(), sqlfence.MySQL),
		rd:    rf,
	}
}

// interopEnv seeds interop/<lang> and returns the suite's variables and
// the check to run after it.
func interopEnv(t *testing.T, lang string) (vars []string, after func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := openGoFences(t, ctx)
	key := "interop/" + lang
	for name, do := range map[string]func(uint64) error{
		"postgres": func(tok uint64) error { return g.pg.Do(ctx, key, tok, nil) },
		"mariadb":  func(tok uint64) error { return g.maria.Do(ctx, key, tok, nil) },
		"redis": func(tok uint64) error {
			_, err := g.rd.Do(ctx, key, tok, redisfence.Cmd{})
			return err
		},
	} {
		if err := do(interopSeed); err != nil {
			t.Fatalf("the Go fence on %s: %v", name, err)
		}
	}
	pgSQL, _ := sqlfence.New(nil, sqlfence.Postgres, sqlfence.Options{})
	mySQL, _ := sqlfence.New(nil, sqlfence.MySQL, sqlfence.Options{})
	vars = []string{
		"SEQD_TEST_FENCE_INTEROP_KEY=" + key,
		"SEQD_TEST_FENCE_GO_CREATE_POSTGRES=" + pgSQL.CreateSQL(),
		"SEQD_TEST_FENCE_GO_CREATE_MARIADB=" + mySQL.CreateSQL(),
	}
	after = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g := openGoFences(t, ctx)
		for name, f := range map[string]struct {
			max func() (uint64, error)
			do  func(uint64) error
		}{
			"postgres": {func() (uint64, error) { return g.pg.Max(ctx, key) }, func(tok uint64) error { return g.pg.Do(ctx, key, tok, nil) }},
			"mariadb":  {func() (uint64, error) { return g.maria.Max(ctx, key) }, func(tok uint64) error { return g.maria.Do(ctx, key, tok, nil) }},
			"redis": {func() (uint64, error) { return g.rd.Max(ctx, key) }, func(tok uint64) error {
				_, err := g.rd.Do(ctx, key, tok, redisfence.Cmd{})
				return err
			}},
		} {
			if got, err := f.max(); err != nil || got != interopAfter {
				t.Errorf("%s: after the %s suite the Go fence reads the max of %s as %d (%v), want %d", name, lang, key, got, err, interopAfter)
			}
			if err := f.do(interopSeed); !errors.Is(err, fence.ErrStaleToken) {
				t.Errorf("%s: the Go fence admitted %d on %s after the %s suite raised it to %d (%v)", name, interopSeed, key, lang, interopAfter, err)
			}
		}
	}
	return vars, after
}

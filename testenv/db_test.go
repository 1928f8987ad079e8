package testenv_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

// TestSQLServersKeepCommitsAcrossSIGKILL: a row committed before the
// server is killed is there after the restart, and one written in a
// transaction that was open at the kill is not.
func TestSQLServersKeepCommitsAcrossSIGKILL(t *testing.T) {
	for _, c := range []struct{ kind, driver, version string }{
		{testenv.Postgres, "pgx", "SELECT version()"},
		{testenv.MariaDB, "mysql", "SELECT version()"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			d := dbtest.StartT(t, testenv.DBOptions{Kind: c.kind})
			t.Logf("%s ready on %s in %v", c.kind, d.Addr(), time.Since(start))
			if os.Geteuid() == 0 {
				st, err := os.Stat(d.Dir())
				if err != nil {
					t.Fatal(err)
				}
				if uid := st.Sys().(*syscall.Stat_t).Uid; uid == 0 {
					t.Fatalf("run as root, the server's directory is root's: it must belong to the unprivileged user the server runs as")
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			db, err := sql.Open(c.driver, d.DSN())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var version string
			if err := db.QueryRowContext(ctx, c.version).Scan(&version); err != nil {
				t.Fatalf("%s: %v", c.version, err)
			}
			t.Logf("version: %s", version)
			for _, q := range []string{"CREATE TABLE kept (v varchar(20))", "INSERT INTO kept VALUES ('committed')"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO kept VALUES ('open')"); err != nil {
				t.Fatal(err)
			}
			pid := d.PID()
			d.Kill()
			if d.Running() {
				t.Fatal("killed server still runs")
			}
			tx.Rollback()
			if err := d.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if d.PID() == pid {
				t.Fatalf("restarted server has the old pid %d", pid)
			}
			var got []string
			for attempt := 0; ; attempt++ {
				got = got[:0]
				rows, err := db.QueryContext(ctx, "SELECT v FROM kept ORDER BY v")
				if err != nil {
					// The pool's connections died with the server.
					if attempt < 5 {
						continue
					}
					t.Fatal(err)
				}
				for rows.Next() {
					var v string
					rows.Scan(&v)
					got = append(got, v)
				}
				rows.Close()
				break
			}
			if len(got) != 1 || got[0] != "committed" {
				t.Fatalf("after SIGKILL and restart: rows %q, want [committed]", got)
			}
		})
	}
}

// TestRedisAppendOnlyKeepsWritesAcrossSIGKILL: with appendfsync always a
// write is there after a SIGKILL and restart; the control without the
// append-only file loses it.
func TestRedisAppendOnlyKeepsWritesAcrossSIGKILL(t *testing.T) {
	for _, c := range []struct {
		name       string
		appendOnly bool
		kept       bool
	}{
		{"aof-always", true, true},
		{"no-aof", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: c.appendOnly})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opt, err := redis.ParseURL(d.URL())
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			aof, err := rdb.ConfigGet(ctx, "appendonly").Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "yes", false: "no"}[c.appendOnly]; aof["appendonly"] != want {
				t.Fatalf("appendonly = %q, want %q", aof["appendonly"], want)
			}
			d.Kill()
			if err := d.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := rdb.Get(ctx, "k").Result()
			if errors.Is(err, redis.Nil) {
				got, err = "", nil
			}
			if err != nil {
				t.Fatal(err)
			}
			if kept := got == "v"; kept != c.kept {
				t.Fatalf("after SIGKILL and restart: k = %q; want kept=%v", got, c.kept)
			}
		})
	}
}

// TestRedisRestartWaitsUntilLoaded: Restart returns once Redis has loaded
// its append-only file, so the first read after it is answered. The file
// holds 200,000 writes: Redis answers INFO (and refuses reads with LOADING)
// every 1,024 commands it replays, so it is seen loading.
func TestRedisRestartWaitsUntilLoaded(t *testing.T) {
	d := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true, AppendFsync: "no"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opt, err := redis.ParseURL(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1 // a LOADING answer must reach the test, not be retried
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	const keys, batch = 200_000, 10_000
	for i := 0; i < keys; i += batch {
		p := rdb.Pipeline()
		for j := i; j < i+batch; j++ {
			p.Set(ctx, fmt.Sprintf("key:%07d", j), "value", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Redis has written the file before it answered (appendfsync no
	// leaves the flush to the kernel, which a SIGKILL does not undo).
	d.Kill()
	if err := d.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.Get(ctx, fmt.Sprintf("key:%07d", keys-1)).Result()
	if err != nil {
		t.Fatalf("the first read after Restart: %v", err)
	}
	if got != "value" {
		t.Fatalf("the last key after Restart = %q, want %q", got, "value")
	}
}

// TestDBUnknownKind: a kind that is not a database is refused with a
// sentence.
func TestDBUnknownKind(t *testing.T) {
	_, err := testenv.StartDB(context.Background(), testenv.DBOptions{Kind: "oracle"})
	if err == nil {
		t.Fatal("StartDB(oracle) = nil error")
	}
	t.Log(err)
}

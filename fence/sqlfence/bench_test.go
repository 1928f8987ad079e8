package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/seqd/seqd/fence/sqlfence"
	"github.com/seqd/seqd/testenv"
)

// BenchmarkFencedWrite measures a fenced write (Do: the fence's upsert,
// then the write, one transaction) against the plain write (the same
// statement in a transaction of its own), alternating in rounds in one
// run, and reports both and their ratio.
func BenchmarkFencedWrite(b *testing.B) {
	for _, kind := range []string{testenv.Postgres, testenv.MariaDB} {
		s := openB(b, kind)
		var token uint64 // across the benchmark's runs: the fence's max only rises
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			values := "bench_values"
			s.execB(b, "DROP TABLE IF EXISTS "+values)
			s.execB(b, fmt.Sprintf("CREATE TABLE %s (k %s PRIMARY KEY, v %s NULL)", values, s.valueType(), s.valueType()))
			s.execB(b, "DROP TABLE IF EXISTS bench_fence")
			f, err := sqlfence.New(s.db, s.dialect, sqlfence.Options{Table: "bench_fence"})
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Create(ctx); err != nil {
				b.Fatal(err)
			}
			fc := &fenced{s: s, f: f, values: values}
			plain := func(i int) error {
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if err := fc.put(ctx, tx, "k", fmt.Sprint(i)); err != nil {
					tx.Rollback()
					return err
				}
				return tx.Commit()
			}
			fencedWrite := func(i int) error {
				token++
				return f.Do(ctx, "k", token, func(tx *sql.Tx) error { return fc.put(ctx, tx, "k", fmt.Sprint(i)) })
			}
			for i := 0; i < 50; i++ { // warm the pool and the caches
				plain(i)
				fencedWrite(i)
			}
			var tPlain, tFenced time.Duration
			const round = 50
			b.ResetTimer()
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				start := time.Now()
				for i := 0; i < n; i++ {
					if err := plain(done + i); err != nil {
						b.Fatal(err)
					}
				}
				tPlain += time.Since(start)
				start = time.Now()
				for i := 0; i < n; i++ {
					if err := fencedWrite(done + i); err != nil {
						b.Fatal(err)
					}
				}
				tFenced += time.Since(start)
			}
			b.StopTimer()
			b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/write")
			b.ReportMetric(float64(tFenced.Nanoseconds())/float64(b.N), "fenced-ns/write")
			b.ReportMetric(float64(tFenced)/float64(tPlain), "fenced/plain")
		})
	}
}

func openB(b *testing.B, kind string) *server {
	b.Helper()
	var d *testenv.DB
	var err error
	d, err = testenv.StartDB(context.Background(), testenv.DBOptions{Kind: kind})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	s := &server{d: d, dialect: sqlfence.Postgres}
	driver := "pgx"
	if kind == testenv.MariaDB {
		s.dialect, driver = sqlfence.MySQL, "mysql"
	}
	if s.db, err = sql.Open(driver, d.DSN()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.db.Close() })
	return s
}

func (s *server) execB(b *testing.B, q string) {
	b.Helper()
	if _, err := s.db.ExecContext(context.Background(), q); err != nil {
		b.Fatalf("%s: %v", q, err)
	}
}

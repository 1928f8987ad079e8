package redisfence_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence/redisfence"
	"github.com/seqd/seqd/testenv"
)

// BenchmarkFencedWrite measures a fenced SET (the script: compare, raise,
// SET) against a plain SET, alternating in rounds in one run, on a Redis
// with appendfsync always (each write waits for the disk) and everysec
// (what the script itself costs), and reports both and their ratio.
func BenchmarkFencedWrite(b *testing.B) {
	for _, fsync := range []string{"always", "everysec"} {
		d, err := testenv.StartDB(context.Background(), testenv.DBOptions{Kind: testenv.Redis, AppendOnly: true, AppendFsync: fsync})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Stop)
		b.Run("appendfsync-"+fsync, func(b *testing.B) { benchFenced(b, d) })
	}
}

func benchFenced(b *testing.B, d *testenv.DB) {
	rdb := redis.NewClient(&redis.Options{Addr: d.Addr()})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	f, err := redisfence.New(ctx, rdb, redisfence.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	token, err := f.Max(ctx, "fence:k") // a second run goes on from the first's max
	if err != nil {
		b.Fatal(err)
	}
	plain := func() error { return rdb.Set(ctx, "v", "value", 0).Err() }
	fenced := func() error {
		token++
		_, err := f.Do(ctx, "fence:k", token, redisfence.Cmd{Name: "SET", Keys: []string{"v"}, Args: []any{"value"}})
		return err
	}
	for i := 0; i < 100; i++ {
		plain()
		fenced()
	}
	var tPlain, tFenced time.Duration
	const round = 100
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := plain(); err != nil {
				b.Fatal(err)
			}
		}
		tPlain += time.Since(start)
		start = time.Now()
		for i := 0; i < n; i++ {
			if err := fenced(); err != nil {
				b.Fatal(err)
			}
		}
		tFenced += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/write")
	b.ReportMetric(float64(tFenced.Nanoseconds())/float64(b.N), "fenced-ns/write")
	b.ReportMetric(float64(tFenced)/float64(tPlain), "fenced/plain")
}

package chaos

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

var (
	pgDurationFlag = flag.Duration("chaos.pg", 15*time.Second, "length of the fenced run with the set in PostgreSQL")
	pgControlFlag  = flag.Duration("chaos.pg-control", 8*time.Second, "length of each attempt of its unfenced control")
)

// faultPGKill kills PostgreSQL (postmaster and backends) with SIGKILL, mid
// transaction for whoever is in one, and starts it again on its data.
const faultPGKill = "pg-kill"

// pgFaults are the faults of the PostgreSQL run.
var pgFaults = []string{faultClientPause, faultDaemonPause, faultPGKill}

// killPG is faultPGKill.
func (in *injector) killPG(ctx context.Context) {
	in.pgMu.Lock()
	defer in.pgMu.Unlock()
	in.r.pg.Kill()
	in.count(faultPGKill)
	hold(ctx, in.between(100*time.Millisecond, time.Second))
	heal, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := in.r.pg.Restart(heal); err != nil {
		in.errorf("restart PostgreSQL: %v", err)
	}
}

// newPGRun is a run whose sets live in PostgreSQL, behind the Go fence
// (sqlfence's fence table) or, as the control, without it.
func (e *env) newPGRun(t *testing.T, pg *testenv.DB, name string, fenced bool) *run {
	t.Helper()
	r := e.newRun(name, nil)
	r.pg = pg
	r.sql = &SQLStore{DSN: pg.DSN(), Table: "sets_" + name, FenceTable: "fence_" + name, Fenced: fenced}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CreateSQLStore(ctx, *r.sql); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestChaosPostgres runs the lock-set workload with its set in PostgreSQL
// behind sqlfence: clients paused past the TTL, daemons paused, PostgreSQL
// killed (SIGKILL) and restarted under open transactions. No acknowledged
// add may be lost and no token shared. The control writes without the
// fence and must lose adds.
func TestChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process chaos: not in -short")
	}
	seed := chaosSeed(t)
	e := startEnv(t)
	pg := dbtest.StartT(t, testenv.DBOptions{Kind: testenv.Postgres})

	t.Run("fenced", func(t *testing.T) {
		r := e.newPGRun(t, pg, "pg_fenced", true)
		r.think = chaosTTL // some leases run out between read and write
		start := time.Now()
		rep, faults := r.execute(t, seed, *pgDurationFlag, schedule(*pgDurationFlag, pgFaults))
		t.Logf("PostgreSQL fenced run, seed %d, %v:\n%s%s", seed, time.Since(start).Round(time.Second), rep.Table(), faultTable(faults))
		if rep.Counts[KindWrite][ResultOK] == 0 || rep.Counts[KindAcquire][ResultOK] == 0 {
			t.Errorf("the workload made no progress: %v", rep.Counts)
		}
		logUnknown(t, r)
		if faults[faultPGKill] == 0 {
			t.Errorf("PostgreSQL was never killed: %v", faults)
		}
		if v := rep.Violations(); len(v) > 0 {
			for _, x := range v {
				t.Errorf("violation: %v", x)
			}
			r.save(t, rep)
		}
	})

	t.Run("control-no-fence", func(t *testing.T) {
		// As the store's controls: slow clients whose leases run out
		// between read and write, a few attempts, each on fresh tables.
		const attempts = 4
		for attempt := 0; attempt < attempts; attempt++ {
			name := fmt.Sprintf("pg_control_%d", attempt)
			r := e.newPGRun(t, pg, name, false)
			r.think, r.wait = 3*chaosTTL/2, chaosTTL/4
			s := seed + uint64(attempt)
			rep, faults := r.execute(t, s, *pgControlFlag, []phase{{name: faultClientPause, kinds: []string{faultClientPause}, d: *pgControlFlag, parallel: 1}})
			t.Logf("%s, seed %d:\n%s%s", name, s, rep.Table(), faultTable(faults))
			if len(rep.Adds.Lost) > 0 {
				t.Logf("the control without the fence lost %d acknowledged adds on attempt %d, as it must: %v", len(rep.Adds.Lost), attempt+1, head(rep.Adds.Lost, 5))
				return
			}
			t.Logf("attempt %d lost no add: the race did not happen in %v", attempt+1, *pgControlFlag)
		}
		t.Errorf("the control without the fence lost no add in %d attempts", attempts)
	})
}

// logUnknown says why operations of unknown outcome had none: the errors
// the clients got, most frequent first.
func logUnknown(t *testing.T, r *run) {
	ops, err := ReadHistoryFiles(filepath.Join(r.hist, "client-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, op := range ops {
		if op.Result == ResultInfo && (op.Kind == KindRead || op.Kind == KindWrite) {
			msg := op.Err
			if len(msg) > 90 {
				msg = msg[:90]
			}
			n[op.Kind+": "+msg]++
		}
	}
	var msgs []string
	for m := range n {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool { return n[msgs[i]] > n[msgs[j]] })
	for i, m := range msgs {
		if i == 5 {
			break
		}
		t.Logf("unknown outcome %3d× %s", n[m], m)
	}
}

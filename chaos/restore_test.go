package chaos

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

var restoreFlag = flag.Duration("chaos.restore", 0, "length of each stretch of load between the ZooKeeper recoveries of the restore run (0: not run; make chaos runs it)")

// restoreBound is how long after ZooKeeper serves again (and, with the
// floor, the floor is raised) the store must accept a new holder's write.
const restoreBound = 30 * time.Second

// TestRestoreUnderLoad runs the lock-set workload while ZooKeeper is
// restored from an older copy of its data directories and then wiped and
// rebuilt from empty, with the daemons keeping floor files and the
// operator raising the floor (seqd floor --from-floor-file) after each
// recovery: no token goes back, no acknowledged add is lost, and the store
// accepts new holders within restoreBound. The control, fresh daemons
// without floor files after the restore, shows the outage: tokens go back
// and the store refuses every new holder.
func TestRestoreUnderLoad(t *testing.T) {
	if *restoreFlag == 0 {
		t.Skip("the restore run restarts a ZooKeeper ensemble six times (about 2 minutes): make chaos runs it, or -args -chaos.restore=8s")
	}
	seed := chaosSeed(t)
	for _, floor := range []bool{true, false} {
		name := "floor"
		if !floor {
			name = "control-no-floor"
		}
		t.Run(name, func(t *testing.T) { restoreRun(t, seed, floor) })
	}
}

func restoreRun(t *testing.T, seed uint64, floor bool) {
	fdir := t.TempDir()
	files := map[string]string{"a": filepath.Join(fdir, "floor-a.json"), "b": filepath.Join(fdir, "floor-b.json")}
	e := startEnvArgs(t, false, func(name string) []string {
		if floor {
			return []string{"--floor-file", files[name]}
		}
		return nil
	})
	store := e.startStore("restore", FenceFull)
	r := e.newRun("restore", store)
	stretch := *restoreFlag
	start := time.Now()
	r.start, r.until = start, start.Add(time.Hour)
	r.startClients(*clientsFlag, seed, r.until)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	load := func(what string) {
		hold(ctx, stretch)
		ops, _ := ReadHistoryFiles(filepath.Join(r.hist, "*.jsonl"))
		t.Logf("[%s] %.0fs: %s; %d operations so far", r.name, time.Since(start).Seconds(), what, len(ops))
	}
	load("load")

	// An older copy of ZooKeeper's data.
	backup := filepath.Join(e.dir, "zk-backup")
	e.zk.StopAll()
	if err := e.zk.BackUp(backup); err != nil {
		t.Fatal(err)
	}
	if err := e.zk.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	// A leader change after the backup: the restored ensemble's next
	// epoch is then below the one the tokens reached, as after any
	// failover between a backup and its restore.
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	leader, err := e.zk.Leader(lctx)
	lcancel()
	if err != nil {
		t.Fatal(err)
	}
	hold(ctx, stretch/2)
	leader.Kill()
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	load("backed up, the leader killed and restarted; load")

	recoveries := []struct {
		name    string
		recover func() error
	}{
		{"restore from the older copy", func() error { return e.zk.RestoreData(backup) }},
		{"wipe and rebuild from empty", e.zk.Wipe},
	}
	if !floor {
		recoveries = recoveries[:1]
	}
	type recovery struct {
		name string
		at   int64 // ZooKeeper serving again, the floor raised
	}
	var done []recovery
	for _, rc := range recoveries {
		// The daemons are stopped and started again around the
		// recovery, as the runbook does: ZooKeeper refuses a client that
		// has seen a later zxid than its own, so a daemon that ran across
		// a restore or a rebuild could never reconnect. The clients run
		// on throughout.
		for _, d := range e.daemons {
			d.kill()
		}
		e.zk.StopAll()
		if err := rc.recover(); err != nil {
			t.Fatal(err)
		}
		if err := e.zk.RestartAll(ctx); err != nil {
			t.Fatal(err)
		}
		if floor {
			raiseFloor(t, ctx, e, files)
		}
		done = append(done, recovery{rc.name, now()})
		for i, d := range e.daemons {
			if err := restartDaemon(ctx, d); err != nil {
				t.Fatalf("restart seqd-%s: %v", e.names[i], err)
			}
		}
		load(rc.name + "; load")
	}
	for _, c := range r.clients {
		c.signal(syscall.SIGTERM)
	}
	var rep Report
	if floor {
		rep = r.finish(t, time.Now(), seed)
		t.Logf("%s, seed %d, %v:\n%s", r.name, seed, time.Since(start).Round(time.Second), rep.Table())
	} else {
		// No final read: the store refuses the control's tokens, which
		// is the outage it shows.
		for _, c := range r.clients {
			c.wait(30 * time.Second)
		}
	}
	ops, err := ReadHistoryFiles(filepath.Join(r.hist, "client-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, rc := range done {
		end := r.until.UnixNano()
		if i+1 < len(done) {
			end = done[i+1].at
		}
		var grants, accepted int
		first := int64(0)
		for _, op := range ops {
			if op.Invoke < rc.at || op.Invoke > end || op.Result != ResultOK {
				continue
			}
			switch op.Kind {
			case KindAcquire:
				grants++
			case KindWrite:
				accepted++
				if first == 0 || op.Complete < first {
					first = op.Complete
				}
			}
		}
		took := time.Duration(first - rc.at)
		firstAt := "none"
		if first != 0 {
			firstAt = took.Round(10 * time.Millisecond).String()
		}
		t.Logf("after %s: %d grants, %d writes accepted by the store; the first accepted %s after ZooKeeper served again", rc.name, grants, accepted, firstAt)
		switch {
		case floor && (first == 0 || took > restoreBound):
			t.Errorf("after %s the store accepted no new holder within %v (%d accepted, the first after %s)", rc.name, restoreBound, accepted, firstAt)
		case !floor && (grants == 0 || accepted > 0):
			t.Errorf("control: after %s, %d grants and %d writes accepted; want grants, all of them refused (the outage)", rc.name, grants, accepted)
		}
	}
	if floor {
		for _, v := range rep.Violations() {
			t.Errorf("violation: %v", v)
		}
		if len(rep.Violations()) > 0 {
			r.save(t, rep)
		}
		return
	}
	tokens := CheckTokens(ops, nil)
	t.Logf("control: %d grants checked, %d token violations", tokens.Grants, len(tokens.Violations))
	if len(tokens.Violations) == 0 {
		t.Errorf("control: no token went back")
	}
	for i, v := range tokens.Violations {
		if i == 3 {
			break
		}
		t.Logf("control caught (as it must): %v", v)
	}
}

// raiseFloor runs the runbook's command: seqd floor with every daemon's
// floor file, retried while ZooKeeper settles.
func raiseFloor(t *testing.T, ctx context.Context, e *env, files map[string]string) {
	t.Helper()
	args := []string{"floor", "--zk", e.zk.ConnectString(), "--root", "/chaos"}
	for _, n := range e.names {
		if _, err := os.Stat(files[n]); err == nil {
			args = append(args, "--from-floor-file", files[n])
		}
	}
	for {
		out, err := exec.CommandContext(ctx, e.bin, args...).CombinedOutput()
		if err == nil {
			t.Logf("seqd %v:\n%s", args, out)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("seqd floor: %v\n%s", err, out)
		}
		hold(ctx, 500*time.Millisecond)
	}
}

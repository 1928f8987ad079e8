package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
)

// Clock faults on real processes with libfaketime. It reaches ZooKeeper's
// JVMs (which read the clock through libc) but not seqd or the Go clients:
// Go reads the clock through the vDSO, so a Go binary under faketime sees
// the real time. The faults therefore jump and skew the members' clocks,
// the wall clock (the mtime that stamps a lock-delay's marker) and the
// monotonic one (which times ZooKeeper's sessions: a jump forward on the
// leader expires sessions early, one back keeps a dead one alive longer).

const faultZKClock = "zk-clock-jump"

var clockFlag = flag.Duration("chaos.clock", 4*time.Second, "length of each model's run under clock faults")

// faketimeLib finds libfaketime's multi-threaded library (Debian's
// faketime package).
func faketimeLib(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("faketime"); err != nil {
		t.Fatalf("faketime is not installed (scripts/deps.sh faketime): %v", err)
	}
	libs, _ := filepath.Glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
	if len(libs) == 0 {
		t.Fatal("libfaketimeMT.so.1 not found under /usr/lib/*/faketime/ (scripts/deps.sh faketime)")
	}
	return libs[0]
}

// fakeJava writes a java wrapper that runs the JVM under libfaketime with
// the offset in the file "faketime" of its working directory (a member's
// directory), read again at most every second.
func fakeJava(t *testing.T) string {
	t.Helper()
	lib := faketimeLib(t)
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	path := filepath.Join(t.TempDir(), "java-faketime")
	script := fmt.Sprintf(`#!/bin/sh
[ -f "$PWD/faketime" ] || echo +0 > "$PWD/faketime"
LD_PRELOAD=%s FAKETIME_TIMESTAMP_FILE="$PWD/faketime" FAKETIME_CACHE_DURATION=1 exec %s "$@"
`, lib, java)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// setClock sets member m's clock offset from the real time.
func setClock(m *testenv.Member, offset time.Duration) error {
	return os.WriteFile(filepath.Join(filepath.Dir(m.DataDir()), "faketime"), []byte(fmt.Sprintf("%+d\n", int(offset.Seconds()))), 0o644)
}

// jumpClock moves the clock of the leader (or of another member) by
// -8..+8s from the real time and leaves it there: a jump, and a skew
// until the next one.
func (in *injector) jumpClock(ctx context.Context) {
	var m *testenv.Member
	if in.intn(2) == 0 {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, _ = in.e.zk.Leader(lctx)
		cancel()
	}
	if m == nil {
		m = in.e.zk.Members[in.intn(len(in.e.zk.Members))]
	}
	off := in.between(-8*time.Second, 8*time.Second)
	if err := setClock(m, off); err != nil {
		in.errorf("set zk%d's clock: %v", m.ID, err)
		return
	}
	in.count(faultZKClock)
	in.log("zk%d's clock set %+.0fs from the real time", m.ID, off.Seconds())
	hold(ctx, in.between(time.Second, 3*time.Second))
}

var endLine = regexp.MustCompile(`time=(\S+) level=\w+ msg="(?:lease (?:expired|lost|broken)|leadership ended)" component=sequencer (?:lock|semaphore|election)=(\S+) (?:token|term)=(\d+)`)

// loggedEnds reads the ends of leases from the daemons' logs.
func (e *env) loggedEnds(t *testing.T) []LoggedEnd {
	t.Helper()
	var out []LoggedEnd
	for _, d := range e.daemons {
		b, err := os.ReadFile(d.log)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range endLine.FindAllSubmatch(b, -1) {
			at, err := time.Parse(time.RFC3339Nano, string(m[1]))
			if err != nil {
				continue
			}
			tok, _ := strconv.ParseUint(string(m[3]), 10, 64)
			out = append(out, LoggedEnd{Lock: string(m[2]), Token: tok, At: at.UnixNano()})
		}
	}
	return out
}

// clockFaults runs the models of the semaphore, the shared lock, the
// election and /v1/check on e, whose ensemble runs under libfaketime
// (fakeJava), while the members' clocks jump and skew, with the daemons
// paused and killed too: no model's checker may fail, and no client is
// told it holds (a renewal answered ok) once a daemon has logged its
// lease's end. The lock-delay is left out: it assumes ZooKeeper's clocks
// agree (docs/lock-kinds.md), which these faults break on purpose.
func clockFaults(t *testing.T, e *env, seed uint64) {
	for _, m := range e.zk.Members {
		t.Cleanup(func() { setClock(m, 0) })
	}
	faults := []string{faultZKClock, faultZKClock, faultDaemonPause, faultDaemonKill}
	models := map[string]bool{"semaphore": true, "shared": true, "election": true, "check": true}
	for _, m := range kindModels() {
		if !models[m.name] {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			ops, counts, stalls := runKind(t, e, m, "clock-"+m.name, seed, *clockFlag, e.urls, faults, &modelRun{})
			res := m.check(t, e, ops)
			past := CheckHeldPastEnd(ops, e.loggedEnds(t))
			t.Logf("%s under clock faults, seed %d: %d operations, %d client stalls, faults %v; %s; held past a logged end: %s",
				m.name, seed, len(ops), stalls, counts, res.Summary(), past.Summary())
			if res.Checked["grants"] == 0 {
				t.Errorf("%s: the workload made no progress", m.name)
				saveOps(t, "clock-"+m.name, ops)
			}
			for _, v := range append(res.Violations, past.Violations...) {
				t.Errorf("violation: %v", v)
			}
		})
	}
	// The control: a daemon that answers a refused renewal with the
	// lease's last answer tells a stalled client it holds past its end.
	// A stall shows only if its round began 2 TTLs before the attempt
	// ends (a renewal, the stall of 1.5 TTLs, the late renewal): an
	// attempt lasts at least 6 TTLs, so that most rounds can.
	t.Run("control-renew-ok", func(t *testing.T) {
		m := semaphoreModel()
		m.stallN = 2
		const attempts = 3
		d := max(*kindsControlFlag, 6*kindTTL)
		for a := 0; a < attempts; a++ {
			p := newBrokenProxy(e.urls[0], brokenRenewOK)
			ops, _, stalls := runKind(t, e, m, fmt.Sprintf("clock-control-%d", a), seed+uint64(a), d, []string{p.URL}, nil, &modelRun{})
			p.Close()
			past := CheckHeldPastEnd(ops, e.loggedEnds(t))
			t.Logf("control attempt %d: %d operations, %d client stalls; held past a logged end: %s", a+1, len(ops), stalls, past.Summary())
			if stalls == 0 {
				t.Logf("control attempt %d had no stall to show the bug: %s", a+1, tally(ops))
			}
			if len(past.Violations) > 0 {
				t.Logf("control caught (as it must): %v", past.Violations[0])
				return
			}
		}
		t.Errorf("control: no renewal answered ok past a logged end in %d attempts", attempts)
	})
}

package clockstep

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	base := time.Date(2026, 12, 3, 11, 26, 31, 0, time.UTC)
	at := func(mono, wall time.Duration) Reading { return Reading{Mono: mono, Wall: base.Add(wall)} }
	prev := at(10*time.Second, 0)
	for _, tc := range []struct {
		name string
		next Reading
		jump bool
	}{
		{"a tick on both clocks", at(10*time.Second+tick, tick), false},
		{"a late tick, both clocks agreeing", at(11*time.Second, time.Second), false},
		{"the wall clock 400 ms ahead", at(10*time.Second+tick, tick+400*time.Millisecond), false},
		{"the wall clock 5 s ahead (a paused machine set on resuming)", at(10*time.Second+tick, 5*time.Second), true},
		{"the wall clock set back 1 s", at(10*time.Second+tick, tick-time.Second), true},
		{"3 s without running, both clocks agreeing", at(13*time.Second, 3*time.Second), true},
	} {
		j, ok := Judge(prev, tc.next)
		if ok != tc.jump {
			t.Errorf("%s: jump %v (%v), want %v", tc.name, ok, j, tc.jump)
		}
	}
}

// TestJudgeTellsAPauseFromStarvation: over 3 s in which the process did not
// run, on two CPUs, the kernel's account decides whether the machine stood
// still (a rerun) or ran other work (none).
func TestJudgeTellsAPauseFromStarvation(t *testing.T) {
	base := time.Date(2026, 12, 3, 11, 26, 31, 0, time.UTC)
	prev := Reading{Mono: 10 * time.Second, Wall: base, Kernel: CPU{N: 2, Busy: 100 * time.Second, Idle: 300 * time.Second, Steal: time.Second}, Self: 4 * time.Second}
	// after is prev 3 s later with the kernel's counters moved by busy,
	// idle and steal (over both CPUs) and the process's by self.
	after := func(busy, idle, steal, self time.Duration) Reading {
		k := prev.Kernel
		k.Busy, k.Idle, k.Steal = k.Busy+busy, k.Idle+idle, k.Steal+steal
		return Reading{Mono: prev.Mono + 3*time.Second, Wall: base.Add(3 * time.Second), Kernel: k, Self: prev.Self + self}
	}
	for _, tc := range []struct {
		name string
		next Reading
		kind Kind
	}{
		{"both CPUs busy with other processes", after(5900*time.Millisecond, 100*time.Millisecond, 0, 50*time.Millisecond), Starved},
		{"both CPUs busy, most of it this process's", after(6*time.Second, 0, 0, 5*time.Second), Starved},
		{"the CPUs half busy, half idle", after(3100*time.Millisecond, 2900*time.Millisecond, 0, 0), Starved},
		{"the host took the CPUs (steal)", after(200*time.Millisecond, 0, 5800*time.Millisecond, 0), Pause},
		{"the kernel counted 0.2 s of the 3 s", after(200*time.Millisecond, 200*time.Millisecond, 0, 0), Pause},
		{"the CPUs idled through it", after(400*time.Millisecond, 5600*time.Millisecond, 0, 0), Pause},
		{"the kernel's account unread", Reading{Mono: prev.Mono + 3*time.Second, Wall: base.Add(3 * time.Second)}, Unknown},
		{"the wall clock set 5 s ahead while the CPUs were busy", Reading{Mono: prev.Mono + tick, Wall: base.Add(5 * time.Second), Kernel: prev.Kernel}, Step},
	} {
		j, ok := Judge(prev, tc.next)
		if !ok || j.Kind != tc.kind {
			t.Errorf("%s: jump %v, %v; want a jump of kind %v", tc.name, ok, j, tc.kind)
		}
		if want := tc.kind == Pause || tc.kind == Step; j.Kind.Rerun() != want {
			t.Errorf("%s: Rerun() = %v, want %v", tc.name, j.Kind.Rerun(), want)
		}
	}
}

func TestParseStat(t *testing.T) {
	const stat = `cpu  3874 3254 2329 30505 254 0 42 300 0 0
cpu0 1565 1617 1025 15888 30 0 4 100 0 0
cpu1 2308 1637 1303 14617 224 0 37 200 0 0
intr 1 2 3
ctxt 4
`
	c, ok := parseStat(strings.NewReader(stat))
	want := CPU{N: 2, Busy: (3874 + 3254 + 2329 + 0 + 42) * 10 * time.Millisecond, Idle: (30505 + 254) * 10 * time.Millisecond, Steal: 3 * time.Second}
	if !ok || c != want {
		t.Fatalf("parseStat = %+v, %v; want %+v", c, ok, want)
	}
	for _, bad := range []string{"", "cpu 1 2 3\ncpu0 1 2 3\n", "cpu  1 2 3 4 5 6 7 x\ncpu0 1\n", "cpu  1 2 3 4 5 6 7 8\n"} {
		if c, ok := parseStat(strings.NewReader(bad)); ok {
			t.Errorf("parseStat(%q) = %+v, want no reading", bad, c)
		}
	}
	if c := readKernel(); c.N == 0 || c.Busy+c.Idle == 0 {
		t.Errorf("readKernel() = %+v, want this machine's /proc/stat", c)
	}
}

func TestRecordAppends(t *testing.T) {
	file := filepath.Join(t.TempDir(), "steps")
	j := Jump{Kind: Step, At: time.Now(), Mono: tick, Wall: 5 * time.Second, Kernel: true, Busy: 80 * time.Millisecond}
	record(file, j)
	record(file, j)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], ": clock step: ") || !strings.Contains(lines[0], "the wall clock 5s") || !strings.Contains(lines[0], "80ms busy") {
		t.Fatalf("recorded %q, want two lines naming the verdict, the wall clock's 5s and the CPUs' 80ms busy", b)
	}
}

// gotest.sh, with a go command that plays each call's part from a plan:
// "fail" fails TestX and TestY of package ex/a, "pause", "step" and
// "starve" do so and record a jump of that verdict, "pass" passes. flags
// are gotest.sh's flags before "--".
func runGotest(t *testing.T, flags []string, plan ...string) (calls []string, out, ledger string, code int) {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "go")
	script := `#!/usr/bin/env bash
n=$(wc -l < "$CALLS")
echo "$*" >> "$CALLS"
case $(sed -n "$((n+1))p" "$PLAN") in
pass) echo "ok  	ex/a	0.1s"; exit 0 ;;
pause) echo "clockstep: pid 7: pause: the kernel counted 0.2s per CPU" >> "$SEQD_CLOCK_STEPS" ;;
step) echo "clockstep: pid 7: clock step: the wall clock moved 5s" >> "$SEQD_CLOCK_STEPS" ;;
starve) echo "clockstep: pid 7: starved: per CPU the kernel counted 3s busy" >> "$SEQD_CLOCK_STEPS" ;;
fail) ;;
*) echo "no plan for call $((n+1))" >&2; exit 3 ;;
esac
printf -- '--- FAIL: TestX (0.1s)\n    --- FAIL: TestX/sub (0.1s)\n--- FAIL: TestY (0.1s)\nFAIL\nFAIL\tex/a\t0.1s\nok  \tex/b\t0.1s\nFAIL\n'
exit 1
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	callsFile, planFile, ledgerFile := filepath.Join(dir, "calls"), filepath.Join(dir, "plan"), filepath.Join(dir, "ledger")
	for f, b := range map[string]string{callsFile: "", planFile: strings.Join(plan, "\n") + "\n"} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("../../scripts/gotest.sh", append(flags, "--", "ex/a", "ex/b")...)
	cmd.Env = append(os.Environ(), "GO="+fake, "CALLS="+callsFile, "PLAN="+planFile, "SEQD_RERUN_LEDGER="+ledgerFile)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(callsFile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := os.ReadFile(ledgerFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(got)), "\n"), string(b), string(l), code
}

func TestGotestRunsAgainOnlyAfterAPause(t *testing.T) {
	flags := []string{"-race", "-skip", "^(A|B)$"}
	const first = "test -race -skip ^(A|B)$ ex/a ex/b"
	const again = "test -race -skip ^(A|B)$ -run ^(TestX|TestY)$ ex/a"
	t.Run("a failure without a jump", func(t *testing.T) {
		calls, out, ledger, code := runGotest(t, flags, "fail", "pass")
		if code == 0 || len(calls) != 1 || ledger != "" {
			t.Fatalf("exit %d after %d runs, ledger %q; want a failure after one, no ledger:\n%s", code, len(calls), ledger, out)
		}
	})
	for _, kind := range []string{"pause", "step"} {
		t.Run("a failure across a "+kind+", then a pass", func(t *testing.T) {
			calls, out, ledger, code := runGotest(t, flags, kind, "pass")
			if code != 0 || len(calls) != 2 {
				t.Fatalf("exit %d after %d runs, want success after two:\n%s", code, len(calls), out)
			}
			if calls[0] != first || calls[1] != again {
				t.Errorf("runs %q, want the failed tests of the failed package alone, with the same flags, the second time", calls)
			}
			if !strings.Contains(out, "clockstep: pid 7: ") {
				t.Errorf("the jump is not printed:\n%s", out)
			}
			if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ex/a TestX TestY: ran again, passed\n  why: clockstep: pid 7: `).MatchString(ledger) {
				t.Errorf("ledger %q, want the package, its failed tests, the outcome and the jump", ledger)
			}
		})
	}
	t.Run("a failure while starved", func(t *testing.T) {
		calls, out, ledger, code := runGotest(t, flags, "starve", "pass")
		if code == 0 || len(calls) != 1 || ledger != "" {
			t.Fatalf("exit %d after %d runs, ledger %q; want a failure after one, no ledger:\n%s", code, len(calls), ledger, out)
		}
		if !strings.Contains(out, "starved: per CPU") || !strings.Contains(out, "no rerun") {
			t.Errorf("the evidence and the refusal are not printed:\n%s", out)
		}
	})
	t.Run("a failure across a pause, then another failure", func(t *testing.T) {
		calls, out, ledger, code := runGotest(t, flags, "pause", "fail")
		if code == 0 || len(calls) != 2 || !strings.Contains(ledger, "ran again, failed again") {
			t.Fatalf("exit %d after %d runs, ledger %q; want a failure after two, in the ledger:\n%s", code, len(calls), ledger, out)
		}
	})
	t.Run("the failed tests take the place of -run", func(t *testing.T) {
		for _, run := range [][]string{{"-run", "^(TestX|TestY|TestZ)$"}, {"-run=^(TestX|TestY|TestZ)$"}} {
			calls, out, _, code := runGotest(t, append([]string{"-race"}, run...), "pause", "pass")
			if code != 0 || len(calls) != 2 || calls[1] != "test -race -run ^(TestX|TestY)$ ex/a" {
				t.Fatalf("exit %d after runs %q, want the failed tests alone the second time:\n%s", code, calls, out)
			}
		}
	})
	t.Run("a pass", func(t *testing.T) {
		calls, out, _, code := runGotest(t, flags, "pass")
		if code != 0 || len(calls) != 1 || calls[0] != first {
			t.Fatalf("exit %d after runs %q, want success after one:\n%s", code, calls, out)
		}
	})
	t.Run("no packages", func(t *testing.T) {
		out, err := exec.Command("../../scripts/gotest.sh", "-race").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 64 {
			t.Fatalf("%v, want exit 64:\n%s", err, out)
		}
	})
}

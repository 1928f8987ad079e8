package clockstep

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

func TestRecordAppends(t *testing.T) {
	file := filepath.Join(t.TempDir(), "steps")
	j := Jump{At: time.Now(), Mono: tick, Wall: 5 * time.Second}
	record(file, j)
	record(file, j)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "the wall clock 5s") {
		t.Fatalf("recorded %q, want two lines naming the wall clock's 5s", b)
	}
}

// gotest.sh, with a go command that plays each call's part from a plan:
// "fail" fails package ex/a, "jump" does so and records a jump, "pass"
// passes.
func runGotest(t *testing.T, plan ...string) (calls []string, out string, code int) {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "go")
	script := `#!/usr/bin/env bash
n=$(wc -l < "$CALLS")
echo "$*" >> "$CALLS"
case $(sed -n "$((n+1))p" "$PLAN") in
pass) echo "ok  	ex/a	0.1s"; exit 0 ;;
jump) echo "clock jumped" >> "$SEQD_CLOCK_STEPS" ;&
fail) printf -- '--- FAIL: TestX (0.1s)\nFAIL\nFAIL\tex/a\t0.1s\nok  \tex/b\t0.1s\nFAIL\n'; exit 1 ;;
esac
echo "no plan for call $((n+1))" >&2
exit 3
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	callsFile, planFile := filepath.Join(dir, "calls"), filepath.Join(dir, "plan")
	for f, b := range map[string]string{callsFile: "", planFile: strings.Join(plan, "\n") + "\n"} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("../../scripts/gotest.sh", "-race", "-skip", "^(A|B)$", "--", "ex/a", "ex/b")
	cmd.Env = append(os.Environ(), "GO="+fake, "CALLS="+callsFile, "PLAN="+planFile)
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
	return strings.Split(strings.TrimSpace(string(got)), "\n"), string(b), code
}

func TestGotestRunsAgainOnlyAfterAJump(t *testing.T) {
	const first = "test -race -skip ^(A|B)$ ex/a ex/b"
	t.Run("a failure without a jump", func(t *testing.T) {
		calls, out, code := runGotest(t, "fail", "pass")
		if code == 0 || len(calls) != 1 {
			t.Fatalf("exit %d after %d runs, want a failure after one:\n%s", code, len(calls), out)
		}
	})
	t.Run("a failure with a jump, then a pass", func(t *testing.T) {
		calls, out, code := runGotest(t, "jump", "pass")
		if code != 0 || len(calls) != 2 {
			t.Fatalf("exit %d after %d runs, want success after two:\n%s", code, len(calls), out)
		}
		if calls[0] != first || calls[1] != "test -race -skip ^(A|B)$ ex/a" {
			t.Errorf("runs %q, want the failed package alone with the same flags the second time", calls)
		}
		if !strings.Contains(out, "clock jumped") {
			t.Errorf("the jump is not printed:\n%s", out)
		}
	})
	t.Run("a failure with a jump, then another failure", func(t *testing.T) {
		calls, out, code := runGotest(t, "jump", "fail")
		if code == 0 || len(calls) != 2 {
			t.Fatalf("exit %d after %d runs, want a failure after two:\n%s", code, len(calls), out)
		}
	})
	t.Run("a pass", func(t *testing.T) {
		calls, out, code := runGotest(t, "pass")
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

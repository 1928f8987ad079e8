package runlock

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/testenv/zktest"
)

type outcome struct {
	res Result
	err error
}

func start(cmd *exec.Cmd, opts Options) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		res, err := Run(cmd, opts)
		out <- outcome{res, err}
	}()
	return out
}

func wait(t *testing.T, out <-chan outcome, d time.Duration) Result {
	t.Helper()
	select {
	case o := <-out:
		if o.err != nil {
			t.Fatalf("Run: %v", o.err)
		}
		return o.res
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
	}
	return Result{}
}

// A child that ignores the kill signal gets SIGKILL exactly when the grace
// has passed on the injected clock, and not before.
func TestKillEscalationOnFakeClock(t *testing.T) {
	dir := t.TempDir()
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	lost := make(chan struct{})
	const grace = 10 * time.Second
	// The shell records the TERM and carries on; its sleeps die of it and
	// are replaced.
	cmd := exec.Command("sh", "-c", `trap 'echo > "$D/term"' TERM; echo > "$D/ready"; while :; do sleep 0.05; done`)
	cmd.Env = append(os.Environ(), "D="+dir)
	var lostPgid int
	out := start(cmd, Options{Lost: lost, KillGrace: grace, Clock: fake, OnLost: func(pgid int) { lostPgid = pgid }})
	zktest.Eventually(t, 10*time.Second, "ready written", fileIn(dir, "ready"))

	close(lost)
	zktest.Eventually(t, 10*time.Second, "term written", fileIn(dir, "term"))
	if !fake.WaitPending(1, nil) {
		t.Fatal("the grace timer was never armed")
	}
	fake.Advance(grace - time.Millisecond)
	select {
	case o := <-out:
		t.Fatalf("Run returned before the grace had passed: %+v", o)
	default:
	}
	// Still alive: it answers another TERM by writing the marker again.
	if err := os.Remove(filepath.Join(dir, "term")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 10*time.Second, "term written", fileIn(dir, "term"))

	fake.Advance(time.Millisecond)
	res := wait(t, out, 10*time.Second)
	if want := 128 + int(syscall.SIGKILL); res.Status != want {
		t.Errorf("status: got %d, want %d", res.Status, want)
	}
	if !res.Lost || !res.Killed {
		t.Errorf("got Lost=%v Killed=%v, want both", res.Lost, res.Killed)
	}
	if !res.LostAt.Equal(time.Unix(1_000_000, 0)) {
		t.Errorf("LostAt: got %v, want the fake time the loss was seen", res.LostAt)
	}
	if lostPgid != cmd.Process.Pid {
		t.Errorf("OnLost pgid: got %d, want %d", lostPgid, cmd.Process.Pid)
	}
}

// A child that obeys the kill signal ends the run without SIGKILL, and the
// grace timer is stopped.
func TestLossTermIsEnough(t *testing.T) {
	fake := clock.NewFake(time.Unix(0, 0))
	lost := make(chan struct{})
	close(lost)
	cmd := exec.Command("sleep", "1000")
	res := wait(t, start(cmd, Options{Lost: lost, KillGrace: time.Hour, Clock: fake}), 10*time.Second)
	if want := 128 + int(syscall.SIGTERM); res.Status != want || !res.Lost || res.Killed {
		t.Errorf("got %+v, want status %d, Lost, not Killed", res, want)
	}
	if n := fake.Pending(); n != 0 {
		t.Errorf("%d timers left pending", n)
	}
}

// The signal goes to the whole group: a grandchild gets it too.
func TestLossSignalsGrandchildren(t *testing.T) {
	dir := t.TempDir()
	lost := make(chan struct{})
	cmd := exec.Command("sh", "-c", `
		trap 'echo > "$D/child"; wait; exit 3' USR1
		sh -c 'trap "echo > \"$D/grand\"; exit 0" USR1; echo > "$D/ready"; while :; do sleep 0.05; done' &
		wait`)
	cmd.Env = append(os.Environ(), "D="+dir)
	out := start(cmd, Options{Lost: lost, KillSignal: syscall.SIGUSR1, KillGrace: time.Minute})
	zktest.Eventually(t, 10*time.Second, "ready written", fileIn(dir, "ready"))
	close(lost)
	res := wait(t, out, 10*time.Second)
	for _, f := range []string{"child", "grand"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the %s did not get the signal: %v", f, err)
		}
	}
	if res.Status != 3 || !res.Lost || res.Killed {
		t.Errorf("got %+v, want status 3, Lost, not Killed", res)
	}
}

// Forwarded signals reach the group; statuses pass through as a shell
// reports them.
func TestForwardAndStatus(t *testing.T) {
	// A process started under nohup has SIGHUP ignored, and a child
	// inherits that. seqd lock handles the signals it forwards, so its
	// command starts with their default action; the test does the same.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, tc := range []struct {
		name   string
		script string
		signal syscall.Signal // forwarded once the child is ready; 0 for none
		want   int
	}{
		{"exit 0", `exit 0`, 0, 0},
		{"exit 7", `exit 7`, 0, 7},
		{"killed by its own signal", `kill -USR2 $$`, 0, 128 + int(syscall.SIGUSR2)},
		{"forwarded HUP", `echo > "$D/ready"; exec sleep 1000`, syscall.SIGHUP, 128 + int(syscall.SIGHUP)},
		{"forwarded TERM handled", `trap 'exit 42' TERM; echo > "$D/ready"; while :; do sleep 0.05; done`, syscall.SIGTERM, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sigs := make(chan os.Signal, 1)
			cmd := exec.Command("sh", "-c", tc.script)
			cmd.Env = append(os.Environ(), "D="+dir)
			out := start(cmd, Options{Signals: sigs, KillGrace: time.Minute})
			if tc.signal != 0 {
				zktest.Eventually(t, 10*time.Second, "ready written", fileIn(dir, "ready"))
				sigs <- tc.signal
			}
			res := wait(t, out, 10*time.Second)
			if res.Status != tc.want || res.Lost || res.Killed || res.Stragglers {
				t.Errorf("got %+v, want status %d and nothing else", res, tc.want)
			}
		})
	}
}

// What the command leaves running in its group is terminated before Run
// returns (the lock is released after that): nothing outlives the lock.
func TestStragglersAreTerminated(t *testing.T) {
	dir := t.TempDir()
	fake := clock.NewFake(time.Unix(0, 0))
	cmd := exec.Command("sh", "-c", `sh -c 'trap "echo > \"$D/term\"" TERM; echo > "$D/ready"; while :; do sleep 0.05; done' & while [ ! -e "$D/ready" ]; do sleep 0.01; done; exit 5`)
	cmd.Env = append(os.Environ(), "D="+dir)
	out := start(cmd, Options{KillGrace: time.Minute, Clock: fake})
	zktest.Eventually(t, 10*time.Second, "term written", fileIn(dir, "term"))
	if !fake.WaitPending(1, nil) {
		t.Fatal("the grace timer was never armed")
	}
	fake.Advance(time.Minute)
	res := wait(t, out, 10*time.Second)
	if res.Status != 5 || !res.Stragglers || !res.Killed || res.Lost {
		t.Errorf("got %+v, want status 5, Stragglers, Killed", res)
	}
}

func TestStartFailure(t *testing.T) {
	_, err := Run(exec.Command(filepath.Join(t.TempDir(), "missing")), Options{})
	if err == nil {
		t.Fatal("got no error for a missing program")
	}
}

func TestParseSignal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want syscall.Signal
		ok   bool
	}{
		{"TERM", syscall.SIGTERM, true},
		{"SIGTERM", syscall.SIGTERM, true},
		{"term", syscall.SIGTERM, true},
		{"SigInt", syscall.SIGINT, true},
		{"9", syscall.SIGKILL, true},
		{"15", syscall.SIGTERM, true},
		{"USR1", syscall.SIGUSR1, true},
		{"", 0, false},
		{"0", 0, false},
		{"-15", 0, false},
		{"999", 0, false},
		{"SIG", 0, false},
		{"FOO", 0, false},
		{"SIGSIGTERM", 0, false},
		{" TERM", 0, false},
	} {
		got, err := ParseSignal(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSignal(%q): got %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if got := SignalName(syscall.SIGUSR2); got != "SIGUSR2" {
		t.Errorf("SignalName(SIGUSR2): got %q", got)
	}
}

func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"TERM", "SIGTERM", "term", "9", "", "0", "-1", "SIGFOO", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignal(s)
		if err != nil {
			return
		}
		if sig <= 0 {
			t.Fatalf("ParseSignal(%q) = %d without an error", s, sig)
		}
		// What it accepts, it names, and the name parses back.
		back, err := ParseSignal(SignalName(sig))
		if err != nil || back != sig {
			t.Fatalf("ParseSignal(SignalName(%d)) = %v, %v", sig, back, err)
		}
	})
}

// fileIn reports whether the child has written dir/name: the child's
// progress is signalled through files, not sleeps.
func fileIn(dir, name string) func() bool {
	return func() bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
}

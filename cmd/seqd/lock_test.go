package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// The binary under test is built once per test run, next to the test
// executable (go test's work directory, removed when the run ends), with the
// race detector when the tests have it.
var (
	lockBinOnce sync.Once
	lockBin     string
	lockBinErr  error
)

func lockTestBinary(t *testing.T) string {
	t.Helper()
	lockBinOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			lockBinErr = err
			return
		}
		dir, err := os.MkdirTemp(filepath.Dir(exe), "seqd-lock-test-")
		if err != nil {
			lockBinErr = err
			return
		}
		args := []string{"build", "-o", filepath.Join(dir, "seqd")}
		if lockTestRace {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			lockBinErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		lockBin = filepath.Join(dir, "seqd")
	})
	if lockBinErr != nil {
		t.Fatal(lockBinErr)
	}
	return lockBin
}

// lockProc is a running `seqd lock`.
type lockProc struct {
	cmd    *exec.Cmd
	stdout zktest.Buffer
	stderr zktest.Buffer
	done   chan struct{}
	err    error
}

// lockEnv is the environment without SEQD_* settings from outside, plus env.
// A race-enabled binary would sleep a second at exit, waiting for late race
// reports; a few milliseconds do for a program that has joined its
// goroutines.
func lockEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQD_") && !strings.HasPrefix(kv, "GORACE=") {
			out = append(out, kv)
		}
	}
	out = append(out, "GORACE=atexit_sleep_ms=20")
	return append(out, env...)
}

func startLock(t *testing.T, env []string, args ...string) *lockProc {
	t.Helper()
	return startRunner(t, "lock", env, args...)
}

// startRunner starts `seqd lock` or `seqd campaign`.
func startRunner(t *testing.T, command string, env []string, args ...string) *lockProc {
	t.Helper()
	p := &lockProc{done: make(chan struct{})}
	p.cmd = exec.Command(lockTestBinary(t), append([]string{command}, args...)...)
	p.cmd.Env = lockEnv(env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A process seqd failed to stop would hold the output pipes open, and
	// Wait with them: a failing test must fail, not hang.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("seqd lock %q stderr:\n%s", args, p.stderr.String())
		}
	})
	return p
}

// wait returns the exit status, failing the test if it takes longer than d.
func (p *lockProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("seqd lock still running after %v; stderr:\n%s", d, p.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee) && ee.Exited():
		return ee.ExitCode()
	}
	if ee != nil && !ee.Exited() {
		return -1 // killed by a signal
	}
	t.Fatalf("seqd lock: %v", p.err)
	return -1
}

func runLockT(t *testing.T, d time.Duration, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startLock(t, env, args...)
	code = p.wait(t, d)
	return code, p.stdout.String(), p.stderr.String()
}

// eventually polls cond until it holds or d has passed.

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// zkConn is a plain go-zookeeper connection, to look at the lock node from
// outside.
func zkConn(t *testing.T, c *testenv.Cluster) *zk.Conn {
	t.Helper()
	// A session that outlives the freezes of the loss tests.
	conn, ev, err := zk.Connect(c.Servers(), 30*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatal("no ZooKeeper session for the test's own connection")
		}
	}
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// contenders lists the children of the lock node (none if it is gone).
func contenders(t *testing.T, conn *zk.Conn, name string) []string {
	t.Helper()
	ch, _, err := conn.Children(zklock.DefaultRoot + "/" + name)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("children of %s: %v", name, err)
	}
	return ch
}

func waitContenders(t *testing.T, conn *zk.Conn, name string, n int, d time.Duration) {
	t.Helper()
	zktest.Eventually(t, d, fmt.Sprintf("%d contenders on %s", n, name), func() bool {
		ch, _, err := conn.Children(zklock.DefaultRoot + "/" + name)
		if errors.Is(err, zk.ErrNoNode) {
			return n == 0
		}
		return err == nil && len(ch) == n // a connection error: try again
	})
}

// holdLock takes the lock in the test process, as another holder would.
func holdLock(t *testing.T, c *testenv.Cluster, name string) *zklock.Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zklock.Dial(ctx, c.Servers(), zklock.Options{SessionTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m, err := zklock.NewMutex(s, name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// closedPort is a local TCP port nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Usage errors exit 64 with a sentence, before ZooKeeper is touched (the
// --zk given is a closed port: touching it would give 69).
func TestLockUsageErrors(t *testing.T) {
	t.Parallel()
	zkAddr := closedPort(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want int
		msg  string
	}{
		{"no name", nil, nil, ExitUsage, "no lock NAME"},
		{"no command", nil, []string{"a"}, ExitUsage, "no command"},
		{"no command after --", nil, []string{"a", "--"}, ExitUsage, "no command"},
		{"-- before any name", nil, []string{"--", "true"}, ExitUsage, "no lock NAME before \"--\""},
		{"-- after the flags, before any name", nil, []string{"--wait", "1s", "--", "true", "x"}, ExitUsage, "no lock NAME before \"--\""},
		{"-- after a bool flag, before any name", nil, []string{"--shell", "--", "make", "deploy"}, ExitUsage, "no lock NAME before \"--\""},
		{"bad name", nil, []string{"../a", "--", "true"}, ExitUsage, "invalid lock name"},
		{"absolute name", nil, []string{"/a", "--", "true"}, ExitUsage, "invalid lock name"},
		{"bad root", nil, []string{"--root", "seqd", "a", "--", "true"}, ExitUsage, "root"},
		{"bad signal", nil, []string{"--kill-signal", "SIGFOO", "a", "--", "true"}, ExitUsage, "kill-signal"},
		{"bad signal number", nil, []string{"--kill-signal", "0", "a", "--", "true"}, ExitUsage, "kill-signal"},
		{"bad wait", nil, []string{"--wait", "soon", "a", "--", "true"}, ExitUsage, "--wait"},
		{"negative wait", nil, []string{"--wait", "-1s", "a", "--", "true"}, ExitUsage, "negative"},
		{"zero session timeout", nil, []string{"--session-timeout", "0s", "a", "--", "true"}, ExitUsage, "more than zero"},
		{"session timeout out of range", nil, []string{"--session-timeout", "11m", "a", "--", "true"}, ExitUsage, "out of range"},
		{"negative grace", nil, []string{"--kill-grace", "-1s", "a", "--", "true"}, ExitUsage, "negative"},
		{"bad grace from env", []string{"SEQD_KILL_GRACE=10"}, []string{"a", "--", "true"}, ExitUsage, "--kill-grace"},
		{"bad token mode", nil, []string{"--token-mode", "sequence", "a", "--", "true"}, ExitUsage, "token mode"},
		{"token is not a mode", nil, []string{"--token", "zxid", "a", "--", "true"}, ExitUsage, "not defined"},
		{"bad token mode from env", []string{"SEQD_TOKEN_MODE=x"}, []string{"a", "--", "true"}, ExitUsage, "token mode"},
		{"bad --zk", nil, []string{"--zk", "localhost", "a", "--", "true"}, ExitUsage, "host:port"},
		{"unknown flag", nil, []string{"--timeout", "1s", "a", "--", "true"}, ExitUsage, "not defined"},
		{"flag after name", nil, []string{"a", "--wait", "1s", "--", "true"}, ExitUsage, "flags go before NAME"},
		{"bad bool from env", []string{"SEQD_SHELL=perhaps"}, []string{"a", "--", "true"}, ExitUsage, "SEQD_SHELL"},
		{"command not found", nil, []string{"a", "--", "seqd-no-such-command"}, 127, "not found"},
		{"a name twice", nil, []string{"a", "b", "a", "--", "true"}, ExitUsage, "twice"},
		{"several names of a semaphore", nil, []string{"-n", "2", "a", "b", "--", "true"}, ExitUsage, "one semaphore NAME"},
		{"a flag among the names", nil, []string{"a", "-n", "2", "--", "true"}, ExitUsage, "flags go before NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"SEQD_ZK=" + zkAddr}, tc.env...)
			code, _, stderr := runLockT(t, 30*time.Second, env, tc.args...)
			if code != tc.want {
				t.Errorf("exit status: got %d, want %d; stderr: %s", code, tc.want, stderr)
			}
			if !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr: got %q, want it to mention %q", stderr, tc.msg)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("stderr: got %d lines, want one sentence: %q", n+1, stderr)
			}
		})
	}
}

func TestLockZooKeeperUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	code, _, stderr := runLockT(t, time.Minute, nil, "--zk", closedPort(t), "--session-timeout", "1s",
		"a", "--", "touch", filepath.Join(dir, "ran"))
	if code != ExitUnavailable {
		t.Errorf("exit status: got %d, want %d; stderr: %s", code, ExitUnavailable, stderr)
	}
	if !strings.Contains(stderr, "cannot reach ZooKeeper") {
		t.Errorf("stderr: got %q, want it to say it cannot reach ZooKeeper", stderr)
	}
	if fileExists(filepath.Join(dir, "ran")) {
		t.Error("the command ran without the lock")
	}
	t.Logf("gave up after %v", time.Since(start).Round(time.Millisecond))
}

// The environment reaches the child, statuses pass through, tokens rise, and
// no contender is left behind after any run.
func TestLockRunsCommand(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	env := []string{"SEQD_ZK=" + c.ConnectString()}
	var tokens []uint64
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"exit 0", []string{"env-check", "--", "sh", "-c", `echo "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER"`}, 0},
		{"exit 7", []string{"env-check", "--", "sh", "-c", `echo "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER"; exit 7`}, 7},
		{"killed by a signal", []string{"env-check", "--", "sh", "-c", `echo "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER"; kill -USR1 $$`}, 128 + int(syscall.SIGUSR1)},
		{"shell", []string{"--shell", "env-check", "--", `echo "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER"`, "|", "cat"}, 0},
		{"no --", []string{"--verbose", "env-check", "sh", "-c", `echo "$SEQD_LOCK $SEQD_TOKEN $SEQD_SEQUENCER"`}, 0},
	} {
		code, stdout, stderr := runLockT(t, time.Minute, env, tc.args...)
		if code != tc.want {
			t.Errorf("%s: exit status: got %d, want %d; stderr: %s", tc.name, code, tc.want, stderr)
		}
		f := strings.Fields(stdout)
		if len(f) != 3 || f[0] != "env-check" || f[2] != "env-check@"+f[1] {
			t.Errorf("%s: the child printed %q, want \"env-check N env-check@N\"", tc.name, stdout)
			continue
		}
		tok, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Errorf("%s: SEQD_TOKEN %q: %v", tc.name, f[1], err)
		}
		tokens = append(tokens, tok)
		if ch := contenders(t, conn, "env-check"); len(ch) != 0 {
			t.Errorf("%s: contenders left behind: %v", tc.name, ch)
		}
		if tc.want != 0 && stderr != "" {
			t.Errorf("%s: a status passed through should be quiet; stderr: %q", tc.name, stderr)
		}
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("tokens do not rise: %v", tokens)
			break
		}
	}

	// Version mode: a dense counter, on a root of its own (a root records
	// one token mode).
	env = append(env, "SEQD_ROOT=/seqd/counted-locks")
	var versions []string
	for range 3 {
		code, stdout, stderr := runLockT(t, time.Minute, env, "--token-mode", "version", "counted", "--", "sh", "-c", `echo "$SEQD_TOKEN"`)
		if code != 0 {
			t.Fatalf("version mode: exit %d; stderr: %s", code, stderr)
		}
		versions = append(versions, strings.TrimSpace(stdout))
	}
	if want := []string{"1", "2", "3"}; !slices.Equal(versions, want) {
		t.Errorf("version tokens: got %v, want %v", versions, want)
	}
}

// Many `seqd lock` processes on one name: the critical sections never overlap
// (the child's O_EXCL create would fail) and their tokens rise in the order
// they ran.
func TestLockMutualExclusion(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	dir := t.TempDir()
	const procs, rounds = 8, 3
	env := []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}
	// set -C: ">" refuses to overwrite, an O_EXCL create.
	script := `set -C; : > "$D/held" || exit 99; echo "$SEQD_TOKEN" >> "$D/log"; sleep 0.02; rm "$D/held"`
	var wg sync.WaitGroup
	codes := make(chan string, procs*rounds)
	for i := range procs {
		wg.Go(func() {
			for r := range rounds {
				p := startLock(t, env, "--shell", "shared", "--", script)
				select {
				case <-p.done:
				case <-time.After(90 * time.Second):
					codes <- fmt.Sprintf("proc %d round %d: still running", i, r)
					return
				}
				if p.err != nil {
					codes <- fmt.Sprintf("proc %d round %d: %v; stderr: %s", i, r, p.err, p.stderr.String())
				}
			}
		})
	}
	wg.Wait()
	close(codes)
	for msg := range codes {
		t.Error(msg)
	}
	data, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) != procs*rounds {
		t.Errorf("got %d critical sections, want %d", len(lines), procs*rounds)
	}
	var last uint64
	for i, l := range lines {
		tok, err := strconv.ParseUint(l, 10, 64)
		if err != nil || tok <= last {
			t.Errorf("section %d: token %q after %d: want strictly rising", i, l, last)
		}
		last = tok
	}
	if ch := contenders(t, conn, "shared"); len(ch) != 0 {
		t.Errorf("contenders left behind: %v", ch)
	}
}

// --wait on a held lock exits 75 after about the wait, and withdraws.
func TestLockWait(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	holdLock(t, c, "busy")
	dir := t.TempDir()
	start := time.Now()
	code, _, stderr := runLockT(t, time.Minute, []string{"SEQD_ZK=" + c.ConnectString()},
		"--wait", "1s", "busy", "--", "touch", filepath.Join(dir, "ran"))
	took := time.Since(start)
	if code != ExitTimeout {
		t.Errorf("exit status: got %d, want %d; stderr: %s", code, ExitTimeout, stderr)
	}
	if !strings.Contains(stderr, "not acquired within 1s") {
		t.Errorf("stderr: got %q, want a sentence saying it was not acquired within 1s", stderr)
	}
	if took < 900*time.Millisecond || took > 30*time.Second {
		t.Errorf("gave up after %v, want about 1s", took)
	}
	if fileExists(filepath.Join(dir, "ran")) {
		t.Error("the command ran without the lock")
	}
	if ch := contenders(t, conn, "busy"); len(ch) != 1 {
		t.Errorf("contenders: got %v, want only the holder's", ch)
	}
}

// A signal while waiting withdraws the contender, exits 128+signal and never
// starts the command.
func TestLockSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		name := "waiting-" + strings.ToLower(sig.String()[:3])
		g := holdLock(t, c, name)
		dir := t.TempDir()
		p := startLock(t, []string{"SEQD_ZK=" + c.ConnectString()}, name, "--", "touch", filepath.Join(dir, "ran"))
		waitContenders(t, conn, name, 2, 30*time.Second) // it waits behind the holder
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if code, want := p.wait(t, 30*time.Second), 128+int(sig); code != want {
			t.Errorf("%v: exit status: got %d, want %d; stderr: %s", sig, code, want, p.stderr.String())
		}
		// Let the lock go: a contender left behind would now be granted and
		// would run the command.
		if err := g.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ch := contenders(t, conn, name); len(ch) != 0 {
			t.Errorf("%v: contenders left behind: %v", sig, ch)
		}
		if fileExists(filepath.Join(dir, "ran")) {
			t.Errorf("%v: the command ran although shutdown began while waiting", sig)
		}
	}
}

// SIGTERM to seqd reaches the child (in its own process group); seqd exits
// with the child's status and releases the lock.
func TestLockForwardsSignals(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	for _, tc := range []struct {
		sig  syscall.Signal
		trap string
		want int
	}{
		{syscall.SIGTERM, "TERM", 3},
		{syscall.SIGUSR2, "USR2", 4},
		{syscall.SIGQUIT, "QUIT", 5},
	} {
		dir := t.TempDir()
		script := fmt.Sprintf(`trap 'echo > "$D/got"; exit %d' %s; echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`, tc.want, tc.trap)
		p := startLock(t, []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir}, "fwd", "--", "sh", "-c", script)
		zktest.Eventually(t, 30*time.Second, "the child starts", func() bool { return fileExists(filepath.Join(dir, "pid")) })
		data, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("the child's process group: got %d (%v), want its own, %d", pgid, err, pid)
		}
		if err := p.cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 30*time.Second); code != tc.want {
			t.Errorf("%v: exit status: got %d, want the child's %d; stderr: %s", tc.sig, code, tc.want, p.stderr.String())
		}
		if !fileExists(filepath.Join(dir, "got")) {
			t.Errorf("%v: the child did not get the signal", tc.sig)
		}
		if ch := contenders(t, conn, "fwd"); len(ch) != 0 {
			t.Errorf("%v: contenders left behind: %v", tc.sig, ch)
		}
	}
}

var lostRE = regexp.MustCompile(`lost \(token (\d+)\).*zookeeper last answered at (\S+),`)

// Loss: ZooKeeper freezes while the command runs. The child and a grandchild
// it started both get the kill signal before the session timeout has passed
// since ZooKeeper last answered; seqd exits 76; once ZooKeeper is back,
// nobody holds a ghost contender.
func TestLockLoss(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	const runs = 5
	const sessionTimeout = 2 * time.Second // the most a 100ms tick allows
	// Both write the time they got TERM, in ns, and exit.
	const script = `
		trap 'date +%s%N > "$D/child.term"; exit 0' TERM
		sh -c 'trap "date +%s%N > \"\$D/grand.term\"; exit 0" TERM; echo > "$D/grand.ready"; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done' &
		echo "$SEQD_TOKEN" > "$D/token.tmp" && mv "$D/token.tmp" "$D/token"
		wait`
	var fromHeard, fromPause []float64
	for run := range runs {
		dir := t.TempDir()
		p := startLock(t, []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir},
			"--session-timeout", sessionTimeout.String(), "--kill-grace", "5s", "--verbose", "frozen", "--", "sh", "-c", script)
		zktest.Eventually(t, 30*time.Second, "the grandchild starts", func() bool {
			return fileExists(filepath.Join(dir, "grand.ready")) && fileExists(filepath.Join(dir, "token"))
		})
		// Freeze at a different point of the heartbeat cycle in every run
		// (a phase, not an ordering).
		time.Sleep(time.Duration(run) * sessionTimeout / 6 / runs)
		pausedAt := time.Now()
		if err := c.Members[0].Pause(); err != nil {
			t.Fatal(err)
		}
		code := p.wait(t, 30*time.Second)
		if err := c.Members[0].Resume(); err != nil {
			t.Fatal(err)
		}
		stderr := p.stderr.String()
		if code != ExitLockLost {
			t.Fatalf("run %d: exit status: got %d, want %d; stderr:\n%s", run, code, ExitLockLost, stderr)
		}
		token, _ := os.ReadFile(filepath.Join(dir, "token"))
		m := lostRE.FindStringSubmatch(stderr)
		if m == nil || m[1] != strings.TrimSpace(string(token)) {
			t.Fatalf("run %d: stderr does not say which lock and token %s were lost:\n%s", run, token, stderr)
		}
		heard, err := time.Parse(time.RFC3339Nano, m[2])
		if err != nil {
			t.Fatal(err)
		}
		for _, who := range []string{"child", "grand"} {
			data, err := os.ReadFile(filepath.Join(dir, who+".term"))
			if err != nil {
				t.Fatalf("run %d: the %s did not get SIGTERM: %v", run, who, err)
			}
			ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Unix(0, ns)
			if d := at.Sub(heard); d >= sessionTimeout {
				t.Errorf("run %d: the %s got SIGTERM %v after ZooKeeper last answered: not before the session timeout %v", run, who, d, sessionTimeout)
			}
			if who == "child" {
				fromHeard = append(fromHeard, float64(at.Sub(heard))/float64(sessionTimeout))
				fromPause = append(fromPause, float64(at.Sub(pausedAt))/float64(sessionTimeout))
			}
		}
		// The contender goes once ZooKeeper is back: seqd closed its
		// session, or ZooKeeper expires it.
		waitContenders(t, conn, "frozen", 0, 30*time.Second)
	}
	t.Logf("SIGTERM to the child, as a fraction of the %v session timeout, over %d runs:", sessionTimeout, runs)
	t.Logf("  from the last request ZooKeeper answered (as sent): %s", fractions(fromHeard))
	t.Logf("  from the freeze:                                    %s", fractions(fromPause))
}

func fractions(fs []float64) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%.3f ", f)
	}
	fmt.Fprintf(&b, "(max %.3f)", slices.Max(fs))
	return b.String()
}

// A command that ignores the kill signal is SIGKILLed after --kill-grace
// (deterministically tested on a fake clock in internal/runlock; this is the
// wiring, on the wall clock).
func TestLockLossKillsStubbornCommand(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	dir := t.TempDir()
	script := `trap 'echo > "$D/term"' TERM; echo > "$D/ready"; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`
	p := startLock(t, []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir},
		"--session-timeout", "2s", "--kill-grace", "300ms", "--kill-signal", "SIGTERM", "stubborn", "--", "sh", "-c", script)
	zktest.Eventually(t, 30*time.Second, "the child starts", func() bool { return fileExists(filepath.Join(dir, "ready")) })
	if err := c.Members[0].Pause(); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 30*time.Second)
	if err := c.Members[0].Resume(); err != nil {
		t.Fatal(err)
	}
	if code != ExitLockLost {
		t.Errorf("exit status: got %d, want %d", code, ExitLockLost)
	}
	if !fileExists(filepath.Join(dir, "term")) {
		t.Error("the child never got SIGTERM")
	}
	if !strings.Contains(p.stderr.String(), "status 137") {
		t.Errorf("stderr: got %q, want the child's end by SIGKILL (status 137)", p.stderr.String())
	}
	waitContenders(t, conn, "stubborn", 0, 30*time.Second)
}

// seqd killed outright (SIGKILL, the OOM killer) cannot signal anyone: the
// kernel kills the command for it, so that it does not run on unwatched.
func TestLockCommandDiesWithSeqd(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	dir := t.TempDir()
	p := startLock(t, []string{"SEQD_ZK=" + c.ConnectString(), "D=" + dir},
		"orphan", "--", "sh", "-c", `echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; exec sleep 1000`)
	zktest.Eventually(t, 30*time.Second, "the child starts", func() bool { return fileExists(filepath.Join(dir, "pid")) })
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() { // then it is still alive, and still ours
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 30*time.Second)
	// Gone, or a zombie waiting for init to reap it: either way it runs no
	// more.
	zktest.Eventually(t, 10*time.Second, "the command dies with seqd", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
}

// TestStatusNamesLockHolder: the daemon's status of a lock held by `seqd
// lock` names the holder (user@host:pid) and its command.
func TestStatusNamesLockHolder(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	addr, stop := startServe(t, "--zk", c.ConnectString())
	defer stop()
	p := startLock(t, nil, "--zk", c.ConnectString(), "held-by-lock", "--", "sleep", "30")
	waitContenders(t, zkConn(t, c), "held-by-lock", 1, 30*time.Second)
	code, out, errOut := runCLI(context.Background(), "status", "--addr", addr, "held-by-lock")
	if code != 0 {
		t.Fatalf("status: exit %d, %s", code, errOut)
	}
	var st api.LockStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	owner := regexp.MustCompile(`^\S+@\S+:` + strconv.Itoa(p.cmd.Process.Pid) + `$`)
	if !st.Held || !owner.MatchString(st.Owner) || st.Command != "sleep 30" {
		t.Errorf("status = %+v; want held, owner user@host:%d, command %q", st, p.cmd.Process.Pid, "sleep 30")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t, 30*time.Second)
}

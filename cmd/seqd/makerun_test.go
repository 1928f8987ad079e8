package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// repoRoot is the repository's top directory (the tests run in cmd/seqd).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var devExports = regexp.MustCompile(`export SEQD_ZK=(\S+) SEQD_ADDR=(\S+)`)

// devStack is a running `make run` (or `seqd dev`) and what it printed.
type devStack struct {
	cmd    *exec.Cmd
	stderr *zktest.Buffer
	zk     string // SEQD_ZK
	addr   string // SEQD_ADDR
	exited chan error
}

// startDev starts name args in dir and waits for the export line.
func startDev(t *testing.T, dir string, env []string, name string, args ...string) *devStack {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stderr := &zktest.Buffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// A group of its own, so that a failed test can kill whatever is left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &devStack{cmd: cmd, stderr: stderr, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, stderr.String())
		}
	})
	deadline := time.After(3 * time.Minute) // make builds the binary first
	for {
		if m := devExports.FindStringSubmatch(stderr.String()); m != nil {
			d.zk, d.addr = m[1], m[2]
			return d
		}
		select {
		case err := <-d.exited:
			t.Fatalf("%s exited before serving (%v):\n%s", name, err, stderr.String())
		case <-deadline:
			t.Fatalf("%s printed no export line:\n%s", name, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wait waits for the process to exit after a signal.
func (d *devStack) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d.exited:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after the signal:\n%s", d.stderr.String())
		return nil
	}
}

// hostPort is addr without a scheme.
func hostPort(addr string) string { return strings.TrimPrefix(addr, "http://") }

// assertNothingLeft checks that the ZooKeeper and API ports are free again
// and that the processes are gone.
func assertNothingLeft(t *testing.T, d *devStack, pids ...int) {
	t.Helper()
	for _, a := range []string{d.zk, hostPort(d.addr)} {
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if !testenv.PortFree(port) {
			t.Errorf("port %s is still taken after the stop", a)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d is still running after the stop", pid)
		}
	}
}

// childPIDs lists the direct children of pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestMakeRunQuickstartAndStop is a newcomer's first session: `make run`,
// the quickstart as written (curl, the client commands, seqd lock on
// $SEQD_ZK), then SIGTERM to make, after which nothing may be left running.
func TestMakeRunQuickstartAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack")
	}
	for _, tool := range []string{"make", "curl", "od"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/deps.sh installs it)", tool)
		}
	}
	root := repoRoot(t)
	var env []string
	if !testenv.PortFree(7070) {
		t.Log("port 7070 is taken: the daemon listens on a free port instead")
		env = append(env, "SEQD_LISTEN=127.0.0.1:0")
	}
	d := startDev(t, root, env, "make", "-s", "run")

	scriptPath := filepath.Join(root, "docs", "quickstart.sh")
	script, err := os.ReadFile(scriptPath)
	if err != nil {
		t.Fatal(err)
	}
	// The README shows the script's lines as they are.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, afterQS, _ := strings.Cut(string(readme), "\n## Quickstart\n")
	_, block, _ := strings.Cut(afterQS, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	_, body, _ := strings.Cut(string(script), "export SEQD_ADDR SEQD_ZK\n")
	if strings.TrimSpace(block) != strings.TrimSpace(body) {
		t.Errorf("README's quickstart block differs from docs/quickstart.sh:\n%s\nwant:\n%s", block, body)
	}
	qs := exec.Command("sh", scriptPath)
	qs.Env = append(os.Environ(),
		"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"SEQD_ZK="+d.zk, "SEQD_ADDR="+d.addr)
	for _, v := range []string{"SEQD_OWNER", "SEQD_TOKEN", "SEQD_LEASE_ID", "SEQD_TOKEN_ONLY", "SEQD_API_TOKEN_FILE"} {
		qs.Env = append(qs.Env, v+"=")
	}
	out, err := qs.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	want := docExpected(strings.Split(string(script), "\n"), func(i int) string { return fmt.Sprintf("docs/quickstart.sh:%d", i+1) })
	for _, p := range checkDocOutput(got, want) {
		t.Error(p)
	}

	pids := append([]int{d.cmd.Process.Pid}, childPIDs(t, d.cmd.Process.Pid)...)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = d.wait(t)
	t.Logf("make run after SIGTERM: %v", err) // make re-raises the signal it got
	if s := d.stderr.String(); !strings.Contains(s, "msg=stopped") || strings.Contains(s, "seqd: ") || strings.Contains(s, "disconnected") {
		t.Errorf("seqd dev did not stop cleanly:\n%s", s)
	}
	assertNothingLeft(t, d, pids...)
}

// TestDevStopsWithStatusZero: `seqd dev` (what make run execs) exits 0 on
// SIGTERM and on SIGINT, also one that arrives while ZooKeeper starts, and
// leaves nothing running.
func TestDevStopsWithStatusZero(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper")
	}
	bin := lockTestBinary(t)
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		early bool
	}{
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGINT", syscall.SIGINT, false},
		{"SIGINT while ZooKeeper starts", syscall.SIGINT, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"dev", "--zk-port", "0", "--listen", "127.0.0.1:0"}
			if tc.early {
				cmd := exec.Command(bin, args...)
				var stderr zktest.Buffer
				cmd.Stdout, cmd.Stderr = &stderr, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// As soon as seqd has started ZooKeeper's process, which is
				// not serving yet (a fixed sleep lost the race on a loaded
				// machine: the signal came before main had installed its
				// handler, and killed the process).
				waitChildProcess(t, cmd.Process.Pid)
				cmd.Process.Signal(tc.sig)
				err := cmd.Wait()
				if err != nil {
					t.Errorf("exit after an early %s: got %v, want status 0\n%s", tc.name, err, stderr.String())
				}
				if n := strings.Count(stderr.String(), "\n"); n > 3 {
					t.Errorf("an early %s printed %d lines, want at most 3:\n%s", tc.name, n, stderr.String())
				}
				return
			}
			d := startDev(t, t.TempDir(), nil, bin, args...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := waitReady(ctx, d.addr); err != nil {
				t.Fatal(err)
			}
			d.cmd.Process.Signal(tc.sig)
			if err := d.wait(t); err != nil {
				t.Errorf("exit after %s: got %v, want status 0\n%s", tc.name, err, d.stderr.String())
			}
			if s := d.stderr.String(); strings.Contains(s, "level=WARN") {
				t.Errorf("a clean stop logged a warning:\n%s", s)
			}
			assertNothingLeft(t, d, d.cmd.Process.Pid)
		})
	}
}

// waitReady waits until the daemon at addr answers /readyz.
func waitReady(ctx context.Context, addr string) error {
	for {
		conn, err := net.Dial("tcp", hostPort(addr))
		if err == nil {
			fmt.Fprintf(conn, "GET /readyz HTTP/1.0\r\n\r\n")
			line, _ := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if strings.Contains(line, " 200 ") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitChildProcess waits until process pid has a child process (one whose
// parent, in /proc/<child>/stat, is pid).
func waitChildProcess(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // gone meanwhile
			}
			// pid (comm) state ppid ...: comm may hold spaces, so split
			// after its closing parenthesis.
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			if fields := strings.Fields(rest); len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d started no child process within 30s", pid)
}

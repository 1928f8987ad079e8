package kube_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/seqd/seqd/testenv/zktest"
)

// The tests run client-go's elector against real processes: one ZooKeeper
// (testenv), a `seqd serve` on it and `seqd store`s, each built from this
// checkout and started as it would be deployed. The candidates of the
// election test are this test binary again, run as a candidate (see
// candidate_test.go), so that a leader can be paused and killed like a pod.

var zkLazy zktest.Lazy

func TestMain(m *testing.M) {
	if id := os.Getenv(envCandidate); id != "" {
		os.Exit(runCandidate(id))
	}
	klog.SetLogger(logr.Discard()) // the in-process electors' logs; the candidates keep theirs
	code := m.Run()
	zkLazy.Close()
	os.Exit(code)
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// seqdBinary builds cmd/seqd of this checkout once per test binary.
func seqdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seqd-kube-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		bin := filepath.Join(dir, "seqd")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/seqd")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build ./cmd/seqd: %v\n%s", err, out)
			return
		}
		buildOnce.bin = bin
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

// proc is a child process whose output lines a test reads.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string    // stdout, line by line
	seen  []string       // lines read by expect that it was not waiting for
	logs  *zktest.Buffer // stdout and stderr, for a failure's report
	done  chan struct{}
}

// start runs cmd, reads its output, and kills it at the test's end.
func start(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, lines: make(chan string, 100), logs: &zktest.Buffer{}, done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.logs
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.logs.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
	}()
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT) // a paused one, too
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, p.logs.String())
		}
	})
	return p
}

// expect returns the first line not yet expected that starts with prefix,
// waiting for it if need be; the lines before it are kept for later expects.
func (p *proc) expect(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	for i, line := range p.seen {
		if strings.HasPrefix(line, prefix) {
			p.seen = append(p.seen[:i], p.seen[i+1:]...)
			return line
		}
	}
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s ended before printing %q", p.name, prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
			p.seen = append(p.seen, line)
		case <-deadline:
			t.Fatalf("%s printed no %q within %v", p.name, prefix, within)
		}
	}
}

func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, line); err != nil {
		t.Fatalf("tell %s %q: %v", p.name, line, err)
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

var addrRE = regexp.MustCompile(`\baddr=(\S+)`)

// startSeqd runs `seqd ARGS…` (serve or store, listening on a free port)
// and returns its http:// address once it logs that it listens.
func startSeqd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(seqdBinary(t), args...)
	cmd.Env = withoutSeqdVars(os.Environ())
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &zktest.Buffer{}
	found := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(done)
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil && strings.Contains(sc.Text(), "listening") {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("seqd %s's log:\n%s", args[0], logs.String())
		}
	})
	select {
	case a := <-found:
		return "http://" + a
	case <-done:
		t.Fatalf("seqd %s exited before listening:\n%s", args[0], logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("seqd %s did not listen within 60s:\n%s", args[0], logs.String())
	}
	return ""
}

// startDaemon runs `seqd serve` on the package's ZooKeeper, with extra
// flags.
func startDaemon(t *testing.T, extra ...string) string {
	t.Helper()
	zk := zkLazy.Get(t)
	return startSeqd(t, append([]string{"serve", "--zk", zk.ConnectString(), "--listen", "127.0.0.1:0",
		"--session-timeout", "4s", "--log-format", "text"}, extra...)...)
}

// startStore runs `seqd store` with fence mode full (writes without a term
// refused) or off.
func startStore(t *testing.T, fence string) string {
	t.Helper()
	return startSeqd(t, "store", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--fence", fence, "--log-format", "text")
}

func withoutSeqdVars(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "SEQD_") {
			out = append(out, kv)
		}
	}
	return out
}

package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a child process of the harness: its own process group, killed if
// the test process dies, its stderr kept in a file.
type proc struct {
	name string
	args []string
	env  []string
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool // SIGSTOPped
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	lf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() { // owned by p: ends with the process
		cmd.Wait()
		lf.Close()
		close(exited)
	}()
	p.cmd, p.exited, p.stopped = cmd, exited, false
	return nil
}

func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
}

func (p *proc) pause()  { p.signal(syscall.SIGSTOP) }
func (p *proc) resume() { p.signal(syscall.SIGCONT) }

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
	p.mu.Lock()
	p.cmd = nil
	p.mu.Unlock()
}

// wait waits up to d for the process to exit on its own, then kills it;
// it reports whether it exited on its own.
func (p *proc) wait(d time.Duration) bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		p.resume()
		p.kill()
		return false
	}
}

func (p *proc) exitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitLog waits until the process's log has a line matching re and returns
// the first submatch.
func (p *proc) waitLog(ctx context.Context, re *regexp.Regexp) (string, error) {
	return p.waitLogFrom(ctx, re, 0)
}

// waitLogFrom is waitLog on the part of the log past offset from (the log of
// a restarted process is appended to).
func (p *proc) waitLogFrom(ctx context.Context, re *regexp.Regexp, from int) (string, error) {
	read := func() []byte {
		b, _ := os.ReadFile(p.log)
		if len(b) < from {
			return nil
		}
		return b[from:]
	}
	for {
		if m := re.FindSubmatch(read()); m != nil {
			return string(m[1]), nil
		}
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		select {
		case <-exited:
			return "", fmt.Errorf("%s exited before logging %v:\n%s", p.name, re, tail(read(), 4000))
		case <-ctx.Done():
			return "", fmt.Errorf("%s did not log %v: %w\n%s", p.name, re, ctx.Err(), tail(read(), 4000))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logSize is the current length of the process's log.
func (p *proc) logSize() int {
	fi, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return int(fi.Size())
}

var (
	daemonListening = regexp.MustCompile(`msg=listening addr=(\S+)`)
	storeListening  = regexp.MustCompile(`msg="listening on (\S+)"`)
)

// buildSeqd builds the seqd binary once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
	dir  string
}

func seqdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seqd-chaos-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.dir = dir
		bin := filepath.Join(dir, "seqd")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/seqd/seqd/cmd/seqd").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build seqd: %v\n%s", err, out)
			return
		}
		buildOnce.path = bin
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

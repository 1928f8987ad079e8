package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/internal/httpserve"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
)

// The daemon the http kind measures: started here as a process of its own
// (as a sidecar runs), started inside the bench's process (for profiling),
// or one already running (Config.Daemon).

// daemon is a daemon the run started.
type daemon struct {
	addr string // its base URL
	pid  int    // its process, 0 in process
	stop func() error
}

// daemonStartTimeout bounds a separate daemon's start: its ZooKeeper
// session and its listener.
const daemonStartTimeout = 30 * time.Second

// listeningRE finds the address in the daemon's "listening" log line.
var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startProcess runs the daemon as a process of its own, DaemonCommand with
// ZooKeeper, a listener on a free loopback port and its roots under the
// run's, and waits until it listens. Its environment has no SEQD_*
// variable: the bench's own settings (an API token file, TLS) are not the
// daemon's.
func (r *runner) startProcess(ctx context.Context) (*daemon, error) {
	args := append(append([]string(nil), r.cfg.DaemonCommand[1:]...),
		"--zk", strings.Join(r.cfg.Servers, ","),
		"--listen", "127.0.0.1:0",
		"--root", r.root+"/http",
		"--semaphore-root", r.root+"/semaphores",
		"--election-root", r.root+"/elections",
		"--session-timeout", r.cfg.SessionTimeout.String(),
		"--log-format", "text",
	)
	if r.cfg.CPUProfile != "" {
		args = append(args, "--cpu-profile", r.cfg.CPUProfile)
	}
	cmd := exec.Command(r.cfg.DaemonCommand[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Killed if the bench dies: a crashed run must not leave it behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start the daemon: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, unavailablef("start the daemon %s: %w", r.cfg.DaemonCommand[0], err)
	}
	log := &tail{max: 16 << 10}
	listening := make(chan string, 1)
	drained := make(chan struct{})
	go func() { // owned by the daemon: ends when its stderr does
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.add(line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() { // owned by the daemon: ends when the process does
		<-drained
		exited <- cmd.Wait()
	}()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					stopErr = fmt.Errorf("the daemon exited: %v\n%s", err, log.String())
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				stopErr = fmt.Errorf("the daemon did not stop within 20s of SIGTERM\n%s", log.String())
			}
		})
		return stopErr
	}
	timeout := time.NewTimer(daemonStartTimeout)
	defer timeout.Stop()
	select {
	case addr := <-listening:
		return &daemon{addr: "http://" + addr, pid: cmd.Process.Pid, stop: stop}, nil
	case err := <-exited:
		exited <- err
		return nil, unavailablef("the daemon exited before it listened (%v):\n%s", err, log.String())
	case <-timeout.C:
		_ = stop()
		return nil, unavailablef("the daemon did not listen within %v:\n%s", daemonStartTimeout, log.String())
	case <-ctx.Done():
		_ = stop()
		return nil, ctx.Err()
	}
}

// tail keeps the last lines a process wrote, for the error that says why
// it failed.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(append(t.b, line...), '\n')
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// startInProcess runs the daemon in this process, as `seqd serve` wires it
// (metrics, a logger at Info whose lines are formatted and thrown away, the
// capped HTTP server), on a loopback port, with its lock root under the
// run's. With CPUProfile, this process is profiled while it runs.
func (r *runner) startInProcess(ctx context.Context) (*daemon, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := prometheus.NewRegistry()
	svc := sequencer.New(sequencer.Config{
		Servers:        r.cfg.Servers,
		Root:           r.root + "/http",
		SemaphoreRoot:  r.root + "/semaphores",
		ElectionRoot:   r.root + "/elections",
		SessionTimeout: r.cfg.SessionTimeout,
		DialTimeout:    r.cfg.ConnectTimeout,
		Logger:         logger,
		Metrics:        metrics.New(reg, metrics.Options{}),
		ZKAuth:         r.cfg.Auth,
		ZKACL:          r.cfg.ACL,
		ZKTLS:          r.cfg.TLS,
	})
	if err := svc.Start(ctx); err != nil {
		return nil, unavailablef("start the daemon: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		svc.Close(context.Background())
		return nil, fmt.Errorf("listen: %w", err)
	}
	var profile *os.File
	if r.cfg.CPUProfile != "" {
		if profile, err = os.Create(r.cfg.CPUProfile); err == nil {
			err = pprof.StartCPUProfile(profile)
		}
		if err != nil {
			ln.Close()
			svc.Close(context.Background())
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	srv := httpserve.New(httpapi.NewHandler(svc, httpapi.HandlerOptions{Gatherer: reg, Logger: logger}),
		httpserve.Options{WriteTimeout: api.MaxWait + 30*time.Second})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return &daemon{addr: "http://" + ln.Addr().String(), stop: func() error {
		_ = srv.Close()
		<-served
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		svc.Close(cctx)
		if profile != nil {
			pprof.StopCPUProfile()
			return profile.Close()
		}
		return nil
	}}, nil
}

// forDaemons is c with its defaults for a run that starts daemons from
// c.DaemonCommand, or why it cannot go; need says what the run needs the
// seqd binary for.
func (c Config) forDaemons(need string) (Config, error) {
	c = c.withDefaults()
	switch {
	case len(c.Servers) == 0:
		return c, errors.New("bench: no ZooKeeper servers")
	case len(c.DaemonCommand) < 2:
		return c, errors.New("bench: " + need)
	}
	return c, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// writeToken writes a token file of mode 600 and returns its path.
func writeToken(t *testing.T, name, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var listenAddrRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// A `seqd lock` whose lock is broken stops its command as on any loss
// (exit 76); the daemon that broke it is killed (SIGKILL) right after the
// break's answer, and its audit file holds the grant, the release and the
// break with their tokens.
func TestBreakStopsSeqdLockAndAuditSurvivesCrash(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	bin := lockTestBinary(t)
	admin := writeToken(t, "admin", "admin-token-0123456789abcdef")
	audit := filepath.Join(t.TempDir(), "audit.log")

	serve := exec.Command(bin, "serve", "--zk", zkc.ConnectString(), "--listen", "127.0.0.1:0", "--admin-token-file", admin, "--audit-log", audit)
	serveErr := &zktest.Buffer{}
	serve.Stderr = serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Kill()
		serve.Wait()
		if t.Failed() {
			t.Logf("serve:\n%s", serveErr.String())
		}
	})
	var addr string
	zktest.Eventually(t, 30*time.Second, "serve listens", func() bool {
		m := listenAddrRE.FindStringSubmatch(serveErr.String())
		if m != nil {
			addr = "http://" + m[1]
		}
		return m != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, _ := client.New(addr, client.WithoutEnv())
	lease, err := cl.Acquire(ctx, "demo", client.Owner("lease-holder"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}

	lock := exec.Command(bin, "lock", "--zk", zkc.ConnectString(), "demo", "--", "sleep", "300")
	lockErr := &zktest.Buffer{}
	lock.Stderr = lockErr
	lock.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-lock.Process.Pid, syscall.SIGKILL) })
	lockDone := make(chan error, 1)
	go func() { lockDone <- lock.Wait() }()
	var st api.LockStatus
	zktest.Eventually(t, 30*time.Second, "seqd lock holds demo", func() bool {
		st, err = cl.Status(ctx, "demo")
		return err == nil && st.Held && len(st.Holding) == 1 && st.Holding[0].Command == "sleep 300"
	})
	if st.Token <= lease.Token {
		t.Fatalf("seqd lock's token %d is not above the released lease's %d", st.Token, lease.Token)
	}

	// Without --token, seqd break names the only holder's token: the
	// daemon breaks no holder that a request does not name.
	code, out, errs := runCLI(ctx, "break", "--addr", addr, "--admin-token-file", admin, "--reason", "stuck migration", "demo")
	if code != 0 {
		t.Fatalf("seqd break: exit %d: %s %s", code, out, errs)
	}
	serve.Process.Signal(syscall.SIGKILL) // right after the break's answer

	select {
	case err := <-lockDone:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitLockLost {
			t.Fatalf("seqd lock ended with %v, want exit %d:\n%s", err, ExitLockLost, lockErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("seqd lock still runs a minute after its lock was broken:\n%s", lockErr.String())
	}

	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Event, Name, Owner, Reason string
			Token                      uint64
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		got = append(got, strings.Join([]string{e.Event, e.Name, itoa(e.Token), e.Reason}, " "))
	}
	want := []string{
		"grant demo " + itoa(lease.Token) + " ",
		"release demo " + itoa(lease.Token) + " ",
		"break demo " + itoa(st.Token) + " stuck migration",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log after the crash:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// seqd break refuses what it cannot send: no reason, no kind it knows.
func TestBreakUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"break", "demo"}, "--reason"},
		{[]string{"break", "--reason", "x", "--kind", "queue", "demo"}, "--kind"},
		{[]string{"status", "--json", "--table", "demo"}, "not both"},
	} {
		code, _, errs := runCLI(context.Background(), tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("seqd %v: exit %d %q, want %d naming %s", tc.args, code, errs, ExitUsage, tc.want)
		}
	}
}

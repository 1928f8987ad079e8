package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// runCLI runs the app in process and returns its exit code and output.
func runCLI(ctx context.Context, args ...string) (int, string, string) {
	var out, errb zktest.Buffer
	err := run(ctx, append([]string{"seqd"}, args...), strings.NewReader(""), &out, &errb)
	return exitCode(err, &errb), out.String(), errb.String()
}

var listenRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startServe runs `seqd serve` in process until the returned stop is
// called; stop returns serve's exit code and its log.
func startServe(t *testing.T, args ...string) (addr string, stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errb zktest.Buffer
	done := make(chan int, 1)
	go func() {
		err := run(ctx, append([]string{"seqd", "serve", "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, &errb)
		done <- exitCode(err, &errb)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listenRE.FindStringSubmatch(errb.String()); m != nil {
			addr = "http://" + m[1]
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d before listening:\n%s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not listen:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var code int
	stop = func() (int, string) {
		once.Do(func() {
			cancel()
			code = <-done
		})
		return code, errb.String()
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

func TestServeClientCommandsAndShutdown(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	root := "/seqd-cli-test"
	addr, stop := startServe(t, "--zk", zkc.ConnectString(), "--root", root, "--log-level", "debug") // debug: the release line
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	code, out, errs := runCLI(ctx, "acquire", "--addr", addr, "--owner", "A", "--ttl", "30s", "jobs/report")
	if code != 0 {
		t.Fatalf("acquire exit %d: %s", code, errs)
	}
	var l api.Lease
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Token == 0 || l.Sequencer == "" {
		t.Fatalf("acquire printed %q (%v), want a lease", out, err)
	}
	tok := itoa(l.Token)
	if code, out, _ := runCLI(ctx, "acquire", "--addr", addr, "--owner", "B", "--token-only", "jobs/report"); code != ExitTimeout || out != "" {
		t.Fatalf("acquire of a held lock: exit %d out %q, want 75", code, out)
	}
	if code, out, _ := runCLI(ctx, "status", "--addr", addr, "--token-only", "jobs/report"); code != 0 || strings.TrimSpace(out) != tok {
		t.Fatalf("status --token-only: exit %d out %q, want %s", code, out, tok)
	}
	if code, out, _ := runCLI(ctx, "renew", "--addr", addr, "--lease-id", l.LeaseID, "--token", tok, "--token-only", "jobs/report"); code != 0 || strings.TrimSpace(out) != tok {
		t.Fatalf("renew: exit %d out %q, want %s", code, out, tok)
	}
	if code, _, _ := runCLI(ctx, "check", "--addr", addr, l.Sequencer); code != 0 {
		t.Fatalf("check of the holder's sequencer: exit %d, want 0", code)
	}
	if code, out, _ := runCLI(ctx, "check", "--addr", addr, "jobs/report", itoa(l.Token-1)); code != ExitConflict || !strings.Contains(out, `"stale_token"`) {
		t.Fatalf("check of a lower token: exit %d out %q, want 1 and stale_token", code, out)
	}
	for _, args := range [][]string{
		{"acquire", "--addr", addr},                        // no name
		{"renew", "--addr", addr, "jobs/report"},           // no lease id
		{"check", "--addr", addr, "jobs/report@x"},         // bad sequencer
		{"acquire", "--addr", addr, "--owner", "A", "a b"}, // bad name: the daemon's 400
		{"acquire", "--bogus-flag", "x"},
	} {
		if code, _, errs := runCLI(ctx, args...); code != ExitUsage || errs == "" {
			t.Errorf("%v: exit %d (%q), want 64 with a sentence", args, code, errs)
		}
	}
	if code, _, _ := runCLI(ctx, "status", "--addr", "http://127.0.0.1:1"); code != ExitUnavailable {
		t.Errorf("status against no daemon: exit %d, want 69", code)
	}

	// A request in flight when SIGTERM comes: a waiting acquire.
	waiting := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(ctx, "acquire", "--addr", addr, "--owner", "C", "--wait", "1m", "jobs/report")
		waiting <- code
	}()
	waitChildren(t, zkc.Servers(), root+"/jobs/report", 2)
	code, logs := stop()
	if code != 0 {
		t.Fatalf("serve exit %d after SIGTERM, want 0:\n%s", code, logs)
	}
	if c := <-waiting; c != ExitUnavailable {
		t.Fatalf("in-flight acquire ended with exit %d, want 69 (503: shutting down)", c)
	}
	// The held lease was released: nobody left behind.
	waitChildren(t, zkc.Servers(), root+"/jobs/report", 0)
	if !strings.Contains(logs, "msg=released") {
		t.Fatalf("no release logged on shutdown:\n%s", logs)
	}
}

func TestServeRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nosuchcmd"}, ExitUsage, "unknown command"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--listen", "0.0.0.0:0"}, ExitUsage, "not a loopback address"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--token-mode", "seq"}, ExitUsage, "want zxid or version"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--token", "zxid"}, ExitUsage, "not defined"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--shutdown-timeout", "-1s"}, ExitUsage, "negative"},
		{[]string{"serve", "--zk", "nohostport"}, ExitUsage, "is not host:port"},
		{[]string{"serve"}, ExitUsage, "zk"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--session-timeout", "1ms"}, ExitUsage, "out of range"},
		{[]string{"serve", "--zk", "127.0.0.1:2181", "--api-token-file", "/nonexistent"}, ExitUsage, "api-token-file"},
		{[]string{"serve", "--zk", closed, "--session-timeout", "1s", "--listen", "127.0.0.1:0"}, ExitUnavailable, "cannot reach ZooKeeper"},
	} {
		code, _, errs := runCLI(ctx, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// waitChildren polls until path has n children.
func waitChildren(t *testing.T, servers []string, path string, n int) {
	t.Helper()
	conn, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ch, _, err := conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			ch, err = nil, nil
		}
		if err == nil && len(ch) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has children %v (%v), want %d", path, ch, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

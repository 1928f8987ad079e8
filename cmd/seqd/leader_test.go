package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// seqd leader prints the election's state; with --watch, one line per
// change of leader; --campaign refuses a bad name.
func TestLeaderCommand(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", c.ConnectString(), "--campaign", "web=10.0.0.9:80", "--campaign", "other")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var st api.ElectionStatus
	zktest.Eventually(t, 20*time.Second, "the daemon to lead web", func() bool {
		code, out, _ := runCLI(ctx, "leader", "--addr", addr, "web")
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Self
	})
	if st.Leader == nil || st.Leader.Value != "10.0.0.9:80" || st.Leader.Term == 0 {
		t.Fatalf("seqd leader web = %+v", st)
	}

	// --watch: a line for the state now (no leader), then one per change:
	// elected, a proclaimed value, resigned.
	pr, pw := io.Pipe()
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		var errb zktest.Buffer
		err := run(wctx, []string{"seqd", "leader", "--watch", "--addr", addr, "solo"}, strings.NewReader(""), pw, &errb)
		pw.Close()
		done <- exitCode(err, &errb)
	}()
	lines := bufio.NewScanner(pr)
	readLine := func() api.ElectionStatus {
		t.Helper()
		if !lines.Scan() {
			t.Fatal("seqd leader --watch ended early")
		}
		var s api.ElectionStatus
		if err := json.Unmarshal(lines.Bytes(), &s); err != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		return s
	}
	if first := readLine(); first.Leader != nil {
		t.Fatalf("first line %+v, want no leader", first)
	}
	cl, err := client.New(addr, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	l, err := cl.AcquireLeadership(ctx, "solo", "a", client.Owner("me"), client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(); got.Leader == nil || got.Leader.Term != l.Term || got.Leader.Value != "a" {
		t.Fatalf("line after the campaign %+v", got)
	}
	if _, err := cl.Proclaim(ctx, l, "b"); err != nil {
		t.Fatal(err)
	}
	if got := readLine(); got.Leader == nil || got.Leader.Value != "b" {
		t.Fatalf("line after the proclaim %+v", got)
	}
	if err := cl.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := readLine(); got.Leader != nil {
		t.Fatalf("line after the resignation %+v", got)
	}
	wcancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Fatalf("seqd leader --watch exited %d when interrupted", code)
	}

	code, _, stderr := runCLI(ctx, "serve", "--zk", c.ConnectString(), "--campaign", "a/../b")
	if code != ExitUsage || !strings.Contains(stderr, `".." segment`) {
		t.Fatalf("serve --campaign a/../b: exit %d, %s", code, stderr)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/fencecheck"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// runFenceCheck runs seqd fence-check --json in process against the daemon
// at daemon, logs the report as a table, and checks that the run released
// every lease it took.
func runFenceCheck(t *testing.T, daemon string, args ...string) (int, fencecheck.Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out, errs := runCLI(ctx, append([]string{"fence-check", "--json", "--addr", daemon}, args...)...)
	var rep fencecheck.Report
	if code == 0 || code == ExitConflict {
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("fence-check exited %d with a report that is not JSON (%v):\n%s\n%s", code, err, out, errs)
		}
		var tbl strings.Builder
		rep.WriteTable(&tbl)
		t.Logf("exit %d\n%s", code, tbl.String())
		if held := heldLocks(t, ctx, daemon, "fence-check/"+rep.Run+"/"); len(held) > 0 {
			t.Errorf("the run left leases held: %q", held)
		}
	}
	return code, rep, errs
}

// heldLocks lists the locks under prefix that the daemon holds leases on.
func heldLocks(t *testing.T, ctx context.Context, daemon, prefix string) []string {
	t.Helper()
	code, out, errs := runCLI(ctx, "status", "--addr", daemon)
	var st struct {
		Locks []struct{ Name string } `json:"locks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("seqd status = %d %s %s", code, out, errs)
	}
	var held []string
	for _, l := range st.Locks {
		if strings.HasPrefix(l.Name, prefix) {
			held = append(held, l.Name)
		}
	}
	return held
}

// verdicts is the report's verdicts in case order: "holds holds fails …".
func verdicts(rep fencecheck.Report) string {
	var vs []string
	for _, c := range rep.Cases {
		vs = append(vs, c.Verdict)
	}
	return strings.Join(vs, " ")
}

func wantVerdicts(t *testing.T, code int, rep fencecheck.Report, errs, want string) {
	t.Helper()
	wantCode := 0
	if strings.Contains(want, fencecheck.Fails) {
		wantCode = ExitConflict
	}
	if got := verdicts(rep); code != wantCode || got != want {
		t.Fatalf("fence-check = exit %d, verdicts %q; want exit %d, %q\n%s", code, got, wantCode, want, errs)
	}
}

// firstFailure is the detail of the first case that fails.
func firstFailure(rep fencecheck.Report) string {
	for _, c := range rep.Cases {
		if c.Verdict == fencecheck.Fails {
			return c.Detail
		}
	}
	return ""
}

func storeArgs(addr string) []string {
	u := "http://" + addr + "/v1/kv/{key}"
	return []string{"--write-url", u, "--read-url", u, "--delete-url", u, "--token-header", "Fencing-Token"}
}

// TestFenceCheck runs fence-check with a real daemon against seqd store
// (every case holds, across a restart of the store process), against
// seqd store --fence off (the negative control: case 3 fails), and against
// small resources that make one classic mistake each, which the case aimed
// at that mistake must catch.
func TestFenceCheck(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	daemon, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-fence-check")
	const all = "holds holds holds holds holds holds holds holds"

	t.Run("seqd store, restarted", func(t *testing.T) {
		addr := closedPort(t)
		r := startRestartable(t, addr, nil, lockTestBinary(t), "store", "--dir", t.TempDir(), "--listen", addr)
		code, rep, errs := runFenceCheck(t, daemon, append(storeArgs(addr), "--restart-cmd", r.restartCmd)...)
		wantVerdicts(t, code, rep, errs, all)
	})
	t.Run("seqd store --fence off", func(t *testing.T) { fenceOff(t, daemon) })
	t.Run("a JSON resource that holds, restarted", func(t *testing.T) {
		r := startFencedKVProcess(t, "disk")
		code, rep, errs := runFenceCheck(t, daemon, append(withDeletes(r.addr, fencedKVArgs(r.addr)), "--restart-cmd", r.restartCmd)...)
		wantVerdicts(t, code, rep, errs, all)
	})
	for _, tc := range []struct {
		name, want, detail string
		kv                 *fencedKV
	}{
		{"< in place of <=", "holds fails holds holds fails skipped holds fails", "again with the same token", &fencedKV{strictLess: true}},
		{"reads do not advance the max", "holds holds holds fails holds skipped holds holds", "only read", &fencedKV{readsKeepMax: true}},
		{"tokens compared as text", "holds holds holds holds holds skipped fails holds", "token 9999 writes after 10000", &fencedKV{textTokens: true}},
		{"deletes not fenced", "holds holds holds holds holds skipped holds fails", "deletes after the new one", &fencedKV{openDeletes: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startFencedKV(t, tc.kv)
			code, rep, errs := runFenceCheck(t, daemon, withDeletes(addr, fencedKVArgs(addr))...)
			wantVerdicts(t, code, rep, errs, tc.want)
			if d := firstFailure(rep); !strings.Contains(d, tc.detail) {
				t.Errorf("the first failure is %q, want the step %q", d, tc.detail)
			}
		})
	}
	t.Run("the max kept in memory, restarted", func(t *testing.T) {
		r := startFencedKVProcess(t, "memory")
		code, rep, errs := runFenceCheck(t, daemon, append(fencedKVArgs(r.addr), "--restart-cmd", r.restartCmd)...)
		wantVerdicts(t, code, rep, errs, "holds holds holds holds holds fails holds skipped")
	})
	t.Run("restart command fails", func(t *testing.T) {
		addr := startInProcessStore(t)
		code, rep, errs := runFenceCheck(t, daemon, append(storeArgs(addr), "--restart-cmd", "exit 3")...)
		wantVerdicts(t, code, rep, errs, "holds holds holds holds holds fails holds holds")
		if d := rep.Cases[5].Detail; !strings.Contains(d, "exit status 3") {
			t.Errorf("case 6 detail %q, want the command's exit status", d)
		}
	})
	t.Run("two runs at once", func(t *testing.T) { twoRunsAtOnce(t, daemon) })
	t.Run("interrupted during the restart", func(t *testing.T) { interruptedRestart(t, daemon) })
	t.Run("resource unreachable", func(t *testing.T) { resourceUnreachable(t, daemon) })
}

// fenceOff is the negative control: seqd store --fence off admits the old
// holder's write (case 3 fails), in the JSON and in the table.
func fenceOff(t *testing.T, daemon string) {
	addr := startInProcessStore(t, "--fence", "off")
	code, rep, errs := runFenceCheck(t, daemon, storeArgs(addr)...)
	wantVerdicts(t, code, rep, errs, "holds holds fails fails fails skipped fails fails")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, out, _ := runCLI(ctx, append([]string{"fence-check", "--addr", daemon}, storeArgs(addr)...)...)
	if code != ExitConflict || !strings.Contains(out, "FAILS: case 3, 4, 5, 7, 8; 2 of 8 cases hold; not run: 6") ||
		!strings.Contains(out, "case 3 fails: the old holder") {
		t.Fatalf("the table run = exit %d:\n%s", code, out)
	}
}

// resourceUnreachable: a resource that does not answer the first write
// stops the run with 69, and the leases are released.
func resourceUnreachable(t *testing.T, daemon string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, _, errs := runCLI(ctx, append([]string{"fence-check", "--addr", daemon}, storeArgs(closedPort(t))...)...)
	if code != ExitUnavailable || !strings.Contains(errs, "did not answer the first write") {
		t.Fatalf("fence-check against a closed port = %d %q, want 69", code, errs)
	}
	if held := heldLocks(t, ctx, daemon, "fence-check/"); len(held) > 0 {
		t.Errorf("the run left leases held: %q", held)
	}
}

// startFencedKVProcess runs a fencedKV as a process of its own (the test
// binary), keeping the max on "disk" or in "memory", restartable.
func startFencedKVProcess(t *testing.T, maxIn string) *restartable {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := closedPort(t)
	env := fencedKVEnv + "=" + addr + " " + filepath.Join(t.TempDir(), "state.json") + " " + maxIn
	return startRestartable(t, addr, []string{env}, exe, "-test.run=^TestFenceCheckHelperFencedKV$")
}

// twoRunsAtOnce runs two checks of one store at the same time, as two
// processes: each takes locks and keys of its own, and both hold.
func twoRunsAtOnce(t *testing.T, daemon string) {
	addr := startInProcessStore(t)
	bin := lockTestBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs, outs := make([]error, 2), make([][]byte, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, bin, append([]string{"fence-check", "--json", "--addr", daemon}, storeArgs(addr)...)...)
			cmd.Env = lockEnv()
			outs[i], errs[i] = cmd.Output()
		}()
	}
	wg.Wait()
	runs := map[string]bool{}
	for i := range 2 {
		var rep fencecheck.Report
		if errs[i] != nil || json.Unmarshal(outs[i], &rep) != nil {
			t.Fatalf("run %d: %v\n%s", i, errs[i], outs[i])
		}
		runs[rep.Run] = true
	}
	if len(runs) != 2 {
		t.Fatalf("two runs share a run id: %v", runs)
	}
	if held := heldLocks(t, ctx, daemon, "fence-check/"); len(held) > 0 {
		t.Errorf("the runs left leases held: %q", held)
	}
}

// interruptedRestart cancels a run while its restart command runs: the run
// exits 130, the command's process group is killed and every lease is
// released.
func interruptedRestart(t *testing.T, daemon string) {
	addr := startInProcessStore(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := append([]string{"fence-check", "--addr", daemon, "--restart-cmd", "echo $$ >" + pidFile + "; exec sleep 60"}, storeArgs(addr)...)
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(ctx, args...)
		done <- code
	}()
	var pid int
	zktest.Eventually(t, time.Minute, "the restart command to start", func() bool {
		b, _ := os.ReadFile(pidFile)
		_, err := fmt.Sscanln(string(b), &pid)
		return err == nil
	})
	cancel()
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Fatalf("interrupted fence-check = %d, want %d", code, ExitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fence-check did not return after its context was cancelled")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the restart command (pid %d) outlived the run: kill -0 = %v", pid, err)
	}
	if held := heldLocks(t, context.Background(), daemon, "fence-check/"); len(held) > 0 {
		t.Errorf("the run left leases held: %q", held)
	}
}

// TestFenceCheckSigned: a daemon that signs and a store that admits only
// signed sequencers; the sequencer goes in Fencing-Sequencer and every case
// holds. The bare token, in Fencing-Token, is refused from the first write
// (the control: the store does verify).
func TestFenceCheckSigned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys := t.TempDir()
	if code, out, errs := runCLI(ctx, "keygen", "--dir", keys, "--kid", "fc1"); code != 0 {
		t.Fatalf("keygen = %d\n%s%s", code, out, errs)
	}
	zkc := zktest.StartT(t, testenv.Options{})
	daemon, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-fence-check-signed", "--signing-key-file", filepath.Join(keys, "signing.key"))
	addr := startInProcessStore(t, "--verify-keys-file", filepath.Join(keys, "verify.keys"))
	u := "http://" + addr + "/v1/kv/{key}"

	code, rep, errs := runFenceCheck(t, daemon, "--write-url", u, "--read-url", u, "--delete-url", u, "--sequencer-header", "Fencing-Sequencer")
	wantVerdicts(t, code, rep, errs, "holds holds holds holds holds skipped skipped holds")
	if d := rep.Cases[6].Detail; !strings.Contains(d, "made up") {
		t.Errorf("case 7 skipped with %q, want the reason: the store takes only signed sequencers", d)
	}
	if s := rep.Cases[0].Steps; len(s) != 1 || s[0].Observed != "200" {
		t.Fatalf("case 1 steps %+v", s)
	}

	code, rep, errs = runFenceCheck(t, daemon, "--write-url", u, "--token-header", "Fencing-Token")
	if code != ExitConflict || rep.Cases[0].Verdict != fencecheck.Fails || rep.Cases[0].Steps[0].Observed != "403" {
		t.Fatalf("bare tokens to a store that wants signed sequencers = exit %d, %+v\n%s", code, rep.Cases[0], errs)
	}
}

// TestFenceCheckUsageErrors: bad flags are exit 64 with a sentence, and
// nothing is sent to the daemon or the resource; an unreachable daemon is
// exit 69.
func TestFenceCheckUsageErrors(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u := srv.URL + "/kv/{key}"
	ok := func(extra ...string) []string {
		return append([]string{"--addr", srv.URL, "--write-url", u, "--token-header", "Fencing-Token"}, extra...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", srv.URL}, "needs --write-url"},
		{[]string{"--addr", srv.URL, "--write-url", srv.URL + "/kv", "--token-header", "T"}, "has no {key}"},
		{[]string{"--addr", srv.URL, "--write-url", "ftp://h/{key}", "--token-header", "T"}, "not an http:// or https:// URL template"},
		{[]string{"--addr", srv.URL, "--write-url", u}, "where the token goes"},
		{[]string{"--addr", srv.URL, "--write-url", u, "--write-body", `{"t":{tokn}}`}, "unknown placeholder {tokn}"},
		{ok("--refuse-status", "200"), "--refuse-status 200"},
		{ok("--holders", "1"), "--holders 1 is out of range"},
		{ok("--header", "NoColon"), `--header "NoColon"`},
		{ok("--token-header", "Bad Name"), "is not a header name"},
		{ok("--write-method", "P U T"), "is not an HTTP method"},
		{ok("--read-body", "{token}"), "--read-url, which is not given"},
		{[]string{"--addr", srv.URL, "--write-url", u, "--write-body", "{token}", "--read-url", u}, "a read must carry the token"},
		{ok("--lock-prefix", "/abs"), "--lock-prefix"},
		{ok("--key-prefix", "a b"), "--key-prefix"},
		{ok("--request-timeout", "0s"), "--request-timeout must be more than zero"},
		{ok("--restart-cmd", "true", "--restart-timeout", "0s"), "--restart-timeout must be more than zero"},
		{ok("--addr", "127.0.0.1:7070"), "not the daemon's base URL"},
		{ok("extra"), "takes no arguments"},
	} {
		code, _, errs := runCLI(context.Background(), append([]string{"fence-check"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("fence-check %q = %d %q; want 64 and %q", tc.args, code, errs, tc.want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
	code, _, errs := runCLI(context.Background(), append([]string{"fence-check"}, ok("--addr", "http://"+closedPort(t))...)...)
	if code != ExitUnavailable {
		t.Errorf("fence-check with the daemon unreachable = %d %q, want 69", code, errs)
	}
}

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestCampaignIgnoresTheLockRoot: SEQD_ROOT is the lock root of serve and
// lock; a `seqd campaign` run with it set still campaigns under the
// election root, where `seqd leader` and the daemon's elections look, so
// that an HTTP campaign for the same election cannot win as well.
func TestCampaignIgnoresTheLockRoot(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	conn := zkConn(t, c)
	startRunner(t, "campaign", []string{"SEQD_ZK=" + c.ConnectString(), "SEQD_ROOT=/seqd-roots-test"},
		"--session-timeout", "4s", "e3", "--", "sh", "-c", "sleep 30")
	zktest.Eventually(t, 30*time.Second, "a candidate of e3 under /seqd/elections", func() bool {
		kids, _, err := conn.Children("/seqd/elections/e3")
		return err == nil && len(kids) == 1
	})
	if kids, _, err := conn.Children("/seqd-roots-test/e3"); err == nil && len(kids) > 0 {
		t.Fatalf("a candidate under the lock root: %v", kids)
	}
	// The daemon sees that leader, and its own campaign for e3 loses.
	addr, _ := startServe(t, "--zk", c.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, out, errs := runCLI(ctx, "leader", "--addr", addr, "e3")
	var st api.ElectionStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Leader == nil {
		t.Fatalf("seqd leader e3: exit %d %s %s, want the campaign's leader", code, out, errs)
	}
	cl, err := client.New(addr, client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AcquireLeadership(ctx, "e3", "second"); !isCode(err, api.CodeHeld) {
		t.Fatalf("an HTTP campaign for e3 while seqd campaign leads: %v, want 409 held", err)
	}
}

func isCode(err error, code string) bool {
	ae, ok := err.(*api.APIError)
	return ok && ae.Code == code
}

// TestWaitZeroTriesOnce: --wait 0 means one try in every command: seqd
// lock and seqd campaign exit 75 at once while another holds, as seqd
// acquire does; without --wait they wait.
func TestWaitZeroTriesOnce(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	holdLock(t, c, "busy")
	env := []string{"SEQD_ZK=" + c.ConnectString()}
	start := time.Now()
	code, _, errs := runLockT(t, 30*time.Second, env, "--wait", "0", "busy", "--", "true")
	if code != ExitTimeout || !strings.Contains(errs, "one try") {
		t.Fatalf("seqd lock --wait 0 on a held lock: exit %d %q, want 75 naming the one try", code, errs)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("seqd lock --wait 0 took %v: it waited", took)
	}
	startRunner(t, "campaign", env, "led", "--", "sleep", "30")
	conn := zkConn(t, c)
	zktest.Eventually(t, 30*time.Second, "a leader of led", func() bool {
		kids, _, err := conn.Children("/seqd/elections/led")
		return err == nil && len(kids) == 1
	})
	p := startRunner(t, "campaign", env, "--wait", "0", "led", "--", "true")
	if code := p.wait(t, 30*time.Second); code != ExitTimeout {
		t.Fatalf("seqd campaign --wait 0 while another leads: exit %d, want 75", code)
	}
	// The control: without --wait, seqd lock waits for the lock.
	w := startLock(t, env, "busy", "--", "true")
	select {
	case <-w.done:
		t.Fatalf("seqd lock without --wait ended while the lock was held: %s", w.stderr.String())
	case <-time.After(time.Second):
	}
}

// TestCheckVerifiesTheSignature: seqd check sends the sequencer whole, so
// that a tampered signature is refused as POST /v1/check refuses it (403,
// exit 77), not checked as the plain sequencer it would become without it.
func TestCheckVerifiesTheSignature(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{})
	dir := t.TempDir()
	if code, _, errs := runCLI(context.Background(), "keygen", "--dir", dir); code != 0 {
		t.Fatalf("keygen: %d %s", code, errs)
	}
	addr, _ := startServe(t, "--zk", c.ConnectString(), "--signing-key-file", dir+"/signing.key")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, out, errs := runCLI(ctx, "acquire", "--addr", addr, "jobs/signed")
	var l api.Lease
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("acquire: %d %s %s", code, out, errs)
	}
	if code, out, errs := runCLI(ctx, "check", "--addr", addr, l.Sequencer); code != 0 || !strings.Contains(out, `"valid": true`) {
		t.Fatalf("check of the holder's signed sequencer: exit %d %s %s, want valid", code, out, errs)
	}
	// The same bytes, signed for the next token: the signature no longer
	// checks.
	seq, _ := fence.ParseSequencer(l.Sequencer)
	sig := l.Sequencer[strings.Index(l.Sequencer, "."):]
	forged := fence.Sequencer{Name: seq.Name, Token: seq.Token + 1}.String() + sig
	code, out, errs = runCLI(ctx, "check", "--addr", addr, forged)
	if code != ExitAuth || strings.Contains(out, `"valid": true`) || !strings.Contains(errs, "signature") {
		t.Fatalf("check of a tampered sequencer: exit %d out %q err %q, want 77 naming the signature", code, out, errs)
	}
}

// TestNestedRootsRefused: serve and lock refuse roots that nest (exit 64),
// before anything is touched.
func TestNestedRootsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"serve", "--zk", "127.0.0.1:1", "--root", "/seqd"},
		{"serve", "--zk", "127.0.0.1:1", "--election-root", "/seqd/locks/e"},
		{"serve", "--zk", "127.0.0.1:1", "--semaphore-root", "/seqd/locks.delay"},
		{"lock", "--zk", "127.0.0.1:1", "--root", "/x", "--semaphore-root", "/x/s", "-n", "2", "a", "--", "true"},
	} {
		code, _, errs := runCLI(ctx, args...)
		if code != ExitUsage || !strings.Contains(errs, "nest") {
			t.Errorf("seqd %q: exit %d %q, want 64 saying the roots nest", args, code, errs)
		}
	}
	// A semaphore named to reach another's bookkeeping is a usage error.
	if code, _, errs := runCLI(ctx, "lock", "--zk", "127.0.0.1:1", "-n", "2", "pool/leases", "--", "true"); code != ExitUsage || !strings.Contains(errs, "leases") {
		t.Errorf("seqd lock -n 2 pool/leases: exit %d %q, want 64", code, errs)
	}
}

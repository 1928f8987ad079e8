package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// runbookCommands are the seqd commands of the code blocks under heading in
// docs/operating.md, with $ZK, $NEW_ZK and $FLOOR_FILE given their values.
func runbookCommands(t *testing.T, heading string, vars map[string]string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/operating.md has no %q", heading)
	}
	text = text[i+len(heading)+2:]
	if j := strings.Index(text, "\n#"); j >= 0 {
		text = text[:j]
	}
	var cmds [][]string
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
		case inCode && strings.HasPrefix(line, "seqd "):
			for k, v := range vars {
				line = strings.ReplaceAll(line, `"$`+k+`"`, v)
			}
			if strings.Contains(line, "$") || strings.Contains(line, `"`) {
				t.Fatalf("runbook line %q has a variable the test does not know", line)
			}
			cmds = append(cmds, strings.Fields(line)[1:])
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("%q in docs/operating.md has no seqd command", heading)
	}
	return cmds
}

// runRunbook runs the runbook's commands under heading: seqd floor in
// process (it must exit 0), seqd serve as a daemon whose address it returns.
func runRunbook(t *testing.T, ctx context.Context, heading string, vars map[string]string) (daemon string) {
	t.Helper()
	for _, args := range runbookCommands(t, heading, vars) {
		if args[0] == "serve" {
			daemon, _ = startServe(t, args[1:]...)
			continue
		}
		code, out, errs := runCLI(ctx, args...)
		t.Logf("seqd %s:\n%s%s", strings.Join(args, " "), out, errs)
		if code != 0 {
			t.Fatalf("runbook command seqd %s exited %d: %s", strings.Join(args, " "), code, errs)
		}
	}
	return daemon
}

// fencedStore is a seqd store process: put writes a key under a token and
// reports whether the store accepted it.
type fencedStore struct{ addr string }

func (s fencedStore) put(t *testing.T, token uint64) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+s.addr+"/v1/kv/account", strings.NewReader(fmt.Sprint(token)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Fencing-Token", fmt.Sprint(token))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK, http.StatusNoContent, http.StatusCreated:
		return true
	case http.StatusConflict:
		return false
	}
	t.Fatalf("store answered %s to token %d", res.Status, token)
	return false
}

// holders takes the lock n times through daemon, each holder writing the
// store with its token; it returns the tokens and how many writes the
// store accepted.
func holders(t *testing.T, ctx context.Context, daemon string, st fencedStore, n int) (tokens []uint64, accepted int) {
	t.Helper()
	c, err := client.New(daemon)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		l, err := c.Acquire(ctx, "account", client.TTL(10*time.Second), client.Wait(5*time.Second))
		if err != nil {
			t.Fatalf("acquire through %s: %v", daemon, err)
		}
		tokens = append(tokens, l.Token)
		if st.put(t, l.Token) {
			accepted++
		}
		if err := c.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	return tokens, accepted
}

// refused asserts that an acquire through daemon is refused for the floor:
// 503, with a sentence naming seqd floor.
func refused(t *testing.T, ctx context.Context, daemon string) {
	t.Helper()
	c, err := client.New(daemon)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Acquire(ctx, "account", client.TTL(10*time.Second), client.Wait(0))
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "seqd floor") {
		t.Fatalf("acquire on a restored ZooKeeper with a floor file: %v; want 503 naming seqd floor", err)
	}
	t.Logf("refused: %s", ae.Message)
}

// The disaster-recovery runbook of docs/operating.md, run as written with a
// real ZooKeeper and seqd store as the fenced resource. A daemon with a
// floor file issues tokens; ZooKeeper is then restored from an older copy
// of its data directory, wiped and rebuilt empty, and replaced by another
// ensemble. Each time the daemon with the floor file refuses to grant
// until the runbook's command has run, and then every token is above
// every one issued before and the store accepts every new holder. The
// control, a daemon without a floor file on the same ZooKeeper, is handed
// tokens below those the store has seen, and the store refuses them all.
func TestDisasterRecoveryRunbook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	bin := buildSeqd(t)
	dir := t.TempDir()
	zkc := zktest.StartT(t, testenv.Options{})
	zkAddr := zkc.ConnectString()
	floorFile := filepath.Join(dir, "floors.json")
	st := fencedStore{startStore(t, bin, "--dir", filepath.Join(dir, "store")).addr}
	vars := map[string]string{"ZK": zkAddr, "FLOOR_FILE": floorFile}

	// An older copy of ZooKeeper's data, with a few grants in it.
	daemon, stop := startServe(t, "--zk", zkAddr, "--floor-file", floorFile)
	holders(t, ctx, daemon, st, 2)
	stop()
	zkc.StopAll()
	if err := zkc.BackUp(filepath.Join(dir, "backup")); err != nil {
		t.Fatal(err)
	}
	if err := zkc.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	daemon, stop = startServe(t, "--zk", zkAddr, "--floor-file", floorFile)
	more, accepted := holders(t, ctx, daemon, st, 10)
	if accepted != 10 {
		t.Fatalf("the store accepted %d of 10 holders before any recovery", accepted)
	}
	high := more[len(more)-1]
	stop()

	// Restore from the backup.
	zkc.StopAll()
	if err := zkc.RestoreData(filepath.Join(dir, "backup")); err != nil {
		t.Fatal(err)
	}
	if err := zkc.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	daemon, stop = startServe(t, "--zk", zkAddr, "--floor-file", floorFile)
	refused(t, ctx, daemon)
	control, stopControl := startServe(t, "--zk", zkAddr)
	low, ok := holders(t, ctx, control, st, 2)
	stopControl()
	if ok != 0 || low[0] >= high {
		t.Fatalf("control after the restore: tokens %v (before: up to %d), %d accepted; want lower tokens, all refused", low, high, ok)
	}
	t.Logf("restore, control without a floor file: tokens %v after %d: the store refused %d of %d", low, high, len(low)-ok, len(low))
	runRunbook(t, ctx, "### Restore from a backup", vars)
	got, accepted := holders(t, ctx, daemon, st, 3)
	if got[0] <= high || accepted != 3 {
		t.Fatalf("after the restore runbook: tokens %v (before: up to %d), %d of 3 accepted", got, high, accepted)
	}
	t.Logf("restore with the floor: tokens %v after %d, all accepted", got, high)
	high = got[len(got)-1]
	stop()

	// Rebuild from empty.
	zkc.StopAll()
	if err := zkc.Wipe(); err != nil {
		t.Fatal(err)
	}
	if err := zkc.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	code, errs := runServe(ctx, "--zk", zkAddr, "--floor-file", floorFile)
	var out string
	if code != ExitUsage || !strings.Contains(errs, "seqd floor") || !strings.Contains(errs, "no token mark") {
		t.Fatalf("serve with a floor file on an empty ZooKeeper: exit %d, %s; want 64 naming seqd floor", code, errs)
	}
	code, _, errs = runCLI(ctx, "lock", "--zk", zkAddr, "--floor-file", floorFile, "--wait", "0", "account", "--", "true")
	if code != ExitUsage || !strings.Contains(errs, "no token mark") {
		t.Fatalf("seqd lock with a floor file on an empty ZooKeeper: exit %d, %s; want 64, no token mark", code, errs)
	}
	control, stopControl = startServe(t, "--zk", zkAddr, "--root", "/control/locks", "--semaphore-root", "/control/semaphores", "--election-root", "/control/elections")
	low, ok = holders(t, ctx, control, st, 2)
	stopControl()
	if ok != 0 || low[0] >= high {
		t.Fatalf("control after the rebuild: tokens %v (before: up to %d), %d accepted; want lower tokens, all refused", low, high, ok)
	}
	t.Logf("rebuild, control without a floor file: tokens %v after %d: the store refused %d of %d", low, high, len(low)-ok, len(low))
	runRunbook(t, ctx, "### Rebuild from empty", vars)
	daemon, stop = startServe(t, "--zk", zkAddr, "--floor-file", floorFile)
	got, accepted = holders(t, ctx, daemon, st, 3)
	if got[0] <= high || accepted != 3 {
		t.Fatalf("after the rebuild runbook: tokens %v (before: up to %d), %d of 3 accepted", got, high, accepted)
	}
	t.Logf("rebuild with the floor: tokens %v after %d, all accepted", got, high)
	high = got[len(got)-1]
	stop()

	// Move to a new ensemble.
	next := zktest.StartT(t, testenv.Options{})
	vars["NEW_ZK"] = next.ConnectString()
	daemon = runRunbook(t, ctx, "### Move to a new ensemble", vars)
	if daemon == "" {
		t.Fatal("the move runbook starts no daemon")
	}
	got, accepted = holders(t, ctx, daemon, st, 3)
	if got[0] <= high || accepted != 3 {
		t.Fatalf("after the move runbook: tokens %v (before: up to %d), %d of 3 accepted", got, high, accepted)
	}
	t.Logf("move with the floor: tokens %v after %d, all accepted", got, high)

	// seqd floor shows the floors, and never lowers one.
	code, out, errs = runCLI(ctx, "floor", "--zk", vars["NEW_ZK"])
	if want := regexp.MustCompile(fmt.Sprintf(`(?m)^/seqd/locks +zxid +%d +-$`, high)); code != 0 || !want.MatchString(out) {
		t.Errorf("seqd floor: exit %d, %q, %s; want a line matching %s", code, out, errs, want)
	}
	code, _, errs = runCLI(ctx, "floor", "--zk", vars["NEW_ZK"], "--raise", "5")
	if code != ExitUsage || !strings.Contains(errs, "never lowered") {
		t.Errorf("seqd floor --raise below the floor: exit %d, %s; want 64, never lowered", code, errs)
	}
	code, _, errs = runCLI(ctx, "floor", "--zk", vars["NEW_ZK"], "--raise", fmt.Sprint(uint64(1)<<63))
	if code != ExitUsage || !strings.Contains(errs, "highest floor") {
		t.Errorf("seqd floor --raise 2^63: exit %d, %s; want 64", code, errs)
	}
}

// runServe runs seqd serve in process until it exits by itself (a refusal
// at start), and returns its exit code and log.
func runServe(ctx context.Context, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	code, _, errs := runCLI(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	return code, errs
}

// A daemon left running across a restore of ZooKeeper from an older copy
// finds its way back: the restored ensemble refuses its old session (the
// session has seen a later zxid than the ensemble's), the daemon gives the
// session up after two session timeouts of silence and dials a new one,
// refuses to grant below its floor file until the floor is raised, and then
// grants tokens above every one it issued, without a restart.
func TestDaemonRunningAcrossARestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	bin := buildSeqd(t)
	dir := t.TempDir()
	zkc := zktest.StartT(t, testenv.Options{})
	zkAddr := zkc.ConnectString()
	floorFile := filepath.Join(dir, "floors.json")
	st := fencedStore{startStore(t, bin, "--dir", filepath.Join(dir, "store")).addr}

	// The backup: a root with its mark and a few grants.
	first, stopFirst := startServe(t, "--zk", zkAddr, "--floor-file", floorFile)
	holders(t, ctx, first, st, 2)
	stopFirst()
	zkc.StopAll()
	if err := zkc.BackUp(filepath.Join(dir, "backup")); err != nil {
		t.Fatal(err)
	}
	if err := zkc.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	daemon, stop := startServe(t, "--zk", zkAddr, "--floor-file", floorFile, "--session-timeout", "2s")
	defer stop()
	before, accepted := holders(t, ctx, daemon, st, 5)
	if accepted != 5 {
		t.Fatalf("the store accepted %d of 5 holders before the restore", accepted)
	}
	high := before[len(before)-1]

	zkc.StopAll()
	if err := zkc.RestoreData(filepath.Join(dir, "backup")); err != nil {
		t.Fatal(err)
	}
	if err := zkc.RestartAll(ctx); err != nil {
		t.Fatal(err)
	}
	// The same daemon, not restarted: once it has a new session it refuses
	// for the floor (before, it answered "cannot reach zookeeper" for good).
	c, err := client.New(daemon)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.Acquire(ctx, "account", client.TTL(10*time.Second), client.Wait(0))
		var ae *api.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && strings.Contains(ae.Message, "seqd floor") {
			t.Logf("the running daemon, back on the restored ZooKeeper: %s", ae.Message)
			break
		}
		if err == nil {
			t.Fatal("the running daemon granted on a ZooKeeper restored below its floor file")
		}
		if time.Now().After(deadline) {
			_, log := stop()
			t.Fatalf("the running daemon still answers %v a minute after the restore; want the floor's refusal; its log:\n%s", err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	code, out, errs := runCLI(ctx, "floor", "--zk", zkAddr, "--from-floor-file", floorFile)
	if code != 0 {
		t.Fatalf("seqd floor --from-floor-file: exit %d, %s%s", code, out, errs)
	}
	after, accepted := holders(t, ctx, daemon, st, 3)
	if after[0] <= high || accepted != 3 {
		t.Fatalf("after the floor was raised: tokens %v (before: up to %d), %d of 3 accepted", after, high, accepted)
	}
	t.Logf("tokens %v before the restore, %v after it, from the same daemon process", before, after)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildSeqd builds the real binary once per test.
func buildSeqd(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool to build seqd: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "seqd")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// storeProc is a `seqd store` process; its stderr goes to a buffer that is
// logged when the test fails.
type storeProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *addrWriter
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, valid after done
}

func (p *storeProc) wait() error {
	<-p.done
	return p.err
}

var listeningRE = regexp.MustCompile(`listening on (\S+?)["\s]`)

// addrWriter collects stderr and hands over the address of the first
// "listening on" line.
type addrWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := listeningRE.FindSubmatch(w.buf.Bytes()); m != nil {
			w.addr <- string(m[1])
			w.sent = true
		}
	}
	return len(p), nil
}

func (w *addrWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func startStore(t *testing.T, bin string, args ...string) *storeProc {
	t.Helper()
	w := &addrWriter{addr: make(chan string, 1)}
	cmd := exec.Command(bin, append([]string{"store", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &storeProc{cmd: cmd, stderr: w, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("seqd store stderr:\n%s", w)
		}
	})
	select {
	case p.addr = <-w.addr:
	case <-p.done:
		t.Fatalf("seqd store exited before listening: %v\n%s", p.err, w)
	case <-time.After(20 * time.Second):
		t.Fatalf("seqd store did not print its address\n%s", w)
	}
	return p
}

// keyModel is what the test knows about one key: what was acknowledged, and
// the operation in flight when the process was killed (it may or may not
// have reached the log; either is correct, as it was never acknowledged).
type keyModel struct {
	key      string
	value    string
	token    uint64 // the token of value
	max      uint64
	inflight *op
}

type op struct {
	put   bool // else a fenced GET
	value string
	token uint64
}

// TestStoreCrashRecovery runs the real binary, streams writes and fenced
// reads at it from several goroutines, kill -9s it after a seeded random
// number of acknowledgements, restarts it and checks that every acknowledged
// write and every acknowledged max survived. A small --compact-bytes makes
// kills land during compactions too.
func TestStoreCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real process")
	}
	bin := buildSeqd(t)
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEQD_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with SEQD_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	const writers, keysPer, rounds = 4, 3, 20
	models := make([][]*keyModel, writers)
	for w := range models {
		for k := 0; k < keysPer; k++ {
			models[w] = append(models[w], &keyModel{key: fmt.Sprintf("w%d/k%d", w, k)})
		}
	}
	compactions := 0 // rounds that compacted at least once
	for round := 0; round < rounds; round++ {
		p := startStore(t, bin, "--dir", dir, "--compact-bytes", "2048")
		client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
		for _, ms := range models {
			for _, m := range ms {
				verifyKey(t, client, p.addr, m, round)
			}
		}
		if t.Failed() {
			return
		}

		killAfter := 5 + rng.IntN(80)
		acked := make(chan struct{}, 1024)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- stream(client, p.addr, models[w], wrng, round, acked)
			}()
		}
		allDone := make(chan struct{})
		go func() {
			wg.Wait()
			close(allDone)
		}()
	waitAcks:
		for i := 0; i < killAfter; i++ {
			select {
			case <-acked:
			case <-allDone: // every writer failed: their errors say why
				break waitAcks
			}
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait()
		<-allDone
		if strings.Contains(p.stderr.String(), "compacted the log") {
			compactions++
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		client.CloseIdleConnections()
	}
	p := startStore(t, bin, "--dir", dir)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, ms := range models {
		for _, m := range ms {
			verifyKey(t, client, p.addr, m, rounds)
		}
	}
	t.Logf("%d of %d rounds compacted the log", compactions, rounds)
	if compactions == 0 {
		t.Errorf("no round compacted the log; kills during compaction went untested")
	}
}

// stream runs operations on its own keys until the store goes away, and
// returns an error only for an answer that is wrong while the store is up.
func stream(client *http.Client, addr string, ms []*keyModel, rng *rand.Rand, round int, acked chan<- struct{}) error {
	for i := 0; ; i++ {
		m := ms[rng.IntN(len(ms))]
		o := &op{put: rng.IntN(4) != 0, token: m.max + 1 + uint64(rng.IntN(3))}
		if o.put {
			o.value = fmt.Sprintf("%s r%d i%d", m.key, round, i)
		}
		m.inflight = o
		var req *http.Request
		if o.put {
			req, _ = http.NewRequest("PUT", "http://"+addr+"/v1/kv/"+m.key, strings.NewReader(o.value))
		} else {
			req, _ = http.NewRequest("GET", "http://"+addr+"/v1/kv/"+m.key, nil)
		}
		req.Header.Set("Fencing-Token", strconv.FormatUint(o.token, 10))
		resp, err := client.Do(req)
		if err != nil {
			return nil // killed: the operation stays in flight
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil
		}
		switch {
		case resp.StatusCode == 200, !o.put && resp.StatusCode == 404:
		default:
			return fmt.Errorf("%s %s with token %d: %d %s", req.Method, m.key, o.token, resp.StatusCode, body)
		}
		if o.put {
			m.value, m.token = o.value, o.token
		}
		m.max = o.token
		m.inflight = nil
		select {
		case acked <- struct{}{}:
		default:
		}
	}
}

// verifyKey checks m against the restarted store and adopts what it finds
// (a write in flight at the kill may have landed).
func verifyKey(t *testing.T, client *http.Client, addr string, m *keyModel, round int) {
	t.Helper()
	resp, err := client.Get("http://" + addr + "/v1/kv/" + m.key)
	if err != nil {
		t.Fatalf("round %d: GET %s: %v", round, m.key, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	value, token := "", uint64(0)
	if resp.StatusCode == 200 {
		value = string(body)
		token, _ = strconv.ParseUint(resp.Header.Get("Fencing-Token"), 10, 64)
	} else if resp.StatusCode != 404 {
		t.Fatalf("round %d: GET %s: %d %s", round, m.key, resp.StatusCode, body)
	}
	max, _ := strconv.ParseUint(resp.Header.Get("Fencing-Max-Token"), 10, 64)
	if resp.StatusCode == 404 {
		var e struct {
			CurrentToken uint64 `json:"current_token"`
		}
		_ = json.Unmarshal(body, &e)
		max = e.CurrentToken
	}

	okValue := value == m.value && token == m.token
	okMax := max == m.max
	if o := m.inflight; o != nil {
		if o.put && value == o.value && token == o.token {
			okValue = true
		}
		if max == o.token {
			okMax = true
		}
	}
	if !okValue {
		t.Errorf("round %d: %s holds %q (token %d); acknowledged %q (token %d), in flight %+v", round, m.key, value, token, m.value, m.token, m.inflight)
	}
	if !okMax {
		t.Errorf("round %d: %s has max %d; acknowledged %d, in flight %+v", round, m.key, max, m.max, m.inflight)
	}
	m.value, m.token, m.max, m.inflight = value, token, max, nil
}

// TestStoreGracefulShutdown: SIGTERM stops the server cleanly (exit 0) and a
// restart finds the data.
func TestStoreGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a real process")
	}
	bin := buildSeqd(t)
	dir := t.TempDir()
	addrFile := filepath.Join(t.TempDir(), "addr")
	p := startStore(t, bin, "--dir", dir, "--addr-file", addrFile, "--log-format", "json")
	if b, err := os.ReadFile(addrFile); err != nil || strings.TrimSpace(string(b)) != p.addr {
		t.Errorf("--addr-file holds %q, %v; want %q", b, err, p.addr)
	}
	req, _ := http.NewRequest("PUT", "http://"+p.addr+"/v1/kv/greeting", strings.NewReader("hello"))
	req.Header.Set("Fencing-Sequencer", "jobs/greeter@12")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(); err != nil {
		t.Fatalf("seqd store after SIGTERM: %v, want exit 0", err)
	}
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no \"stopped\" line in the JSON log:\n%s", p.stderr)
	}
	p = startStore(t, bin, "--dir", dir)
	resp, err = http.Get("http://" + p.addr + "/v1/kv/greeting")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello" || resp.Header.Get("Fencing-Token") != "12" {
		t.Errorf("after restart: %q token %q, want hello token 12", body, resp.Header.Get("Fencing-Token"))
	}
}

func TestStoreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"store"},
		{"store", "--dir", t.TempDir(), "--fence", "sometimes"},
		{"store", "--dir", t.TempDir(), "--log-format", "xml"},
		{"store", "--dir", t.TempDir(), "--compact-bytes", "0"},
		{"store", "--dir", t.TempDir(), "extra"},
		{"store", "--no-such-flag"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"seqd"}, args...), strings.NewReader(""), &stdout, &stderr)
		if code := codeOf(err); code != ExitUsage {
			t.Errorf("seqd %s: exit %d (%v), want %d", strings.Join(args, " "), code, err, ExitUsage)
		}
		var ee *exitError
		if !errors.As(err, &ee) {
			t.Errorf("seqd %s: %v is not an *exitError", strings.Join(args, " "), err)
		}
	}
}

// TestStoreMetricsAreTheStores: `seqd store` has no ZooKeeper session and
// must not export the daemon's gauges (a seqd_zk_connected 0 there would
// page someone for nothing); it exports its own metrics, the stale-token
// counter with source="fence", and seqd_build_info.
func TestStoreMetricsAreTheStores(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &addrWriter{addr: make(chan string, 1)}
	args := []string{"seqd", "store", "--dir", t.TempDir(), "--listen", "127.0.0.1:0"}
	var runErr error
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		runErr = run(ctx, args, strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
		if runErr != nil {
			t.Errorf("seqd store after cancel: %v, want nil", runErr)
		}
	})
	var addr string
	select {
	case addr = <-stderr.addr:
	case <-exited:
		t.Fatalf("seqd store returned before listening: %v\n%s", runErr, stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("seqd store did not log its address\n%s", stderr)
	}

	for _, token := range []string{"2", "1"} { // the second is refused as stale
		req, _ := http.NewRequest("PUT", "http://"+addr+"/v1/kv/k", strings.NewReader("v"))
		req.Header.Set("Fencing-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, absent := range []string{"seqd_zk_connected", "seqd_locks_held", "seqd_lock_waiters", "seqd_grants_total", "seqd_zk_session_expirations_total"} {
		if strings.Contains(text, absent) {
			t.Errorf("/metrics of seqd store exports %s", absent)
		}
	}
	for _, present := range []string{`seqd_stale_tokens_rejected_total{lock="k",source="fence"} 1`, "seqd_build_info{", "seqd_store_operations_total{"} {
		if !strings.Contains(text, present) {
			t.Errorf("/metrics of seqd store lacks %s", present)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv/zktest"
)

// fencedKV is a small resource written the way users write their own: a
// JSON API that takes the token in the body and keeps a max per key. Each
// knob is one of the classic mistakes.
type fencedKV struct {
	strictLess   bool   // admits only tokens above the max: refuses the holder's own second write
	readsKeepMax bool   // checks reads but does not raise the max with them
	maxInMemory  bool   // saves the values to stateFile but not the max
	textTokens   bool   // compares tokens as the text they are sent as
	openDeletes  bool   // serves deletes without checking their token
	stateFile    string // "": nothing survives the process

	mu      sync.Mutex
	vals    map[string]string
	max     map[string]uint64
	maxText map[string]string // with textTokens
}

// kvState is what fencedKV saves.
type kvState struct {
	Vals map[string]string `json:"vals"`
	Max  map[string]uint64 `json:"max,omitempty"`
}

// load reads the state file, if there is one.
func (kv *fencedKV) load() error {
	kv.vals, kv.max, kv.maxText = map[string]string{}, map[string]uint64{}, map[string]string{}
	b, err := os.ReadFile(kv.stateFile)
	if kv.stateFile == "" || os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var st kvState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	for k, v := range st.Vals {
		kv.vals[k] = v
	}
	for k, m := range st.Max {
		kv.max[k] = m
	}
	return nil
}

// save writes the state file (values, and the max unless maxInMemory)
// under kv.mu, before the request is answered.
func (kv *fencedKV) save() error {
	if kv.stateFile == "" {
		return nil
	}
	st := kvState{Vals: kv.vals}
	if !kv.maxInMemory {
		st.Max = kv.max
	}
	b, _ := json.Marshal(st)
	tmp := kv.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, kv.stateFile)
}

// admit checks token against key's max and raises it if raise.
func (kv *fencedKV) admit(key string, text string, token uint64, raise bool) bool {
	if kv.textTokens {
		if m, ok := kv.maxText[key]; ok && text < m {
			return false
		}
		if raise {
			kv.maxText[key] = text
		}
		return true
	}
	m := kv.max[key]
	if token < m || (kv.strictLess && token == m) {
		return false
	}
	if raise && token > m {
		kv.max[key] = token
	}
	return true
}

// ServeHTTP serves POST /items/{key} {"fence":N,"value":"…"} (a write),
// POST /items/{key}/read {"fence":N} (a fenced read) and DELETE
// /items/{key} {"fence":N}: 200, 409 for a stale token, 404 for a read of
// a key never written. A delete keeps the key's max.
func (kv *fencedKV) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Fence json.Number `json:"fence"`
		Value string      `json:"value"`
	}
	key, read := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/items/"), "/read")
	del := r.Method == http.MethodDelete && !read
	if r.Method != http.MethodPost && !del || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	token, err := strconv.ParseUint(string(req.Fence), 10, 64)
	if err != nil || token == 0 {
		http.Error(w, `{"error":"bad token"}`, http.StatusBadRequest)
		return
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if !(del && kv.openDeletes) && !kv.admit(key, string(req.Fence), token, !read || !kv.readsKeepMax) {
		http.Error(w, fmt.Sprintf(`{"error":"stale token %d, max %d"}`, token, kv.max[key]), http.StatusConflict)
		return
	}
	switch {
	case del:
		delete(kv.vals, key)
	case !read:
		kv.vals[key] = req.Value
	}
	if err := kv.save(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	v, ok := kv.vals[key]
	if del {
		json.NewEncoder(w).Encode(map[string]any{"key": key, "deleted": true})
		return
	}
	if read && !ok {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	json.NewEncoder(w).Encode(map[string]string{"key": key, "value": v})
}

// fencedKVArgs are the fence-check flags that describe a fencedKV at addr.
func fencedKVArgs(addr string) []string {
	return []string{
		"--write-method", "POST", "--write-url", "http://" + addr + "/items/{key}",
		"--write-body", `{"fence":{token},"value":"{value}"}`, "--header", "Content-Type: application/json",
		"--read-method", "POST", "--read-url", "http://" + addr + "/items/{key}/read", "--read-body", `{"fence":{token}}`,
		"--refuse-status", "409",
	}
}

// withDeletes adds the fencedKV's delete to args.
func withDeletes(addr string, args []string) []string {
	return append(args, "--delete-url", "http://"+addr+"/items/{key}", "--delete-body", `{"fence":{token}}`)
}

// startFencedKV serves kv in process and returns its address.
func startFencedKV(t *testing.T, kv *fencedKV) string {
	t.Helper()
	if err := kv.load(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: kv}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// fencedKVEnv, when set, makes the test binary a fencedKV process (see
// TestFenceCheckHelperFencedKV): "ADDR STATEFILE memory|disk".
const fencedKVEnv = "FENCE_CHECK_TEST_KV"

// TestFenceCheckHelperFencedKV is not a test: with fencedKVEnv set, the
// test binary serves a fencedKV until it is killed, so that a script can
// restart it as a process.
func TestFenceCheckHelperFencedKV(t *testing.T) {
	spec := os.Getenv(fencedKVEnv)
	if spec == "" {
		return
	}
	var addr, file, maxIn string
	fmt.Sscan(spec, &addr, &file, &maxIn)
	kv := &fencedKV{stateFile: file, maxInMemory: maxIn == "memory"}
	if err := kv.load(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatal(http.Serve(ln, kv))
}

// restartable is a server process and the --restart-cmd that kills it
// (SIGKILL: a crash) and starts it again on the same address.
type restartable struct {
	addr       string
	restartCmd string
	dir        string
}

// startRestartable runs argv (env added) on addr, writes the restart
// script, and waits until addr accepts connections. The first process is
// the test's child; the ones the script starts are killed at cleanup.
func startRestartable(t *testing.T, addr string, env []string, argv ...string) *restartable {
	t.Helper()
	r := &restartable{addr: addr, dir: t.TempDir()}
	start := fmt.Sprintf("env %s %s >>%s 2>&1 </dev/null &\necho $! >%s\n",
		shellQuote(env...), shellQuote(argv...), shellQuote(r.path("log")), shellQuote(r.path("pid")))
	restart := fmt.Sprintf(`pid=$(cat %s)
kill -KILL "$pid"
n=0
while kill -0 "$pid" 2>/dev/null; do n=$((n+1)); [ $n -lt 400 ] || exit 1; sleep 0.05; done
`, shellQuote(r.path("pid"))) + start
	if err := os.WriteFile(r.path("restart.sh"), []byte("#!/bin/sh\n"+restart), 0o700); err != nil {
		t.Fatal(err)
	}
	r.restartCmd = shellQuote(r.path("restart.sh"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(lockEnv(), env...)
	logf, err := os.OpenFile(r.path("log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(r.path("pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600)
	go cmd.Wait() // reaps it when the script kills it
	t.Cleanup(func() { r.stop(t) })
	zktest.Eventually(t, 30*time.Second, "the server to listen on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return r
}

func (r *restartable) path(name string) string { return filepath.Join(r.dir, name) }

// stop kills the process the pid file names: the first one, or the one
// the restart script started.
func (r *restartable) stop(t *testing.T) {
	b, _ := os.ReadFile(r.path("pid"))
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if t.Failed() {
		log, _ := os.ReadFile(r.path("log"))
		t.Logf("output of the restarted server:\n%s", log)
	}
}

func shellQuote(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

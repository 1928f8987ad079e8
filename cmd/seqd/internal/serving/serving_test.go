package serving

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/httpserve"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/policy"
	"github.com/seqd/seqd/store"
)

// A store run writes the address it listens on, fences writes by token,
// and on cancellation stops cleanly with the acknowledged write on disk.
func TestRunStoreServesAndStops(t *testing.T) {
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- RunStore(ctx, Store{
			Log:              store.Options{Dir: filepath.Join(dir, "log"), Fence: store.FenceFull, CompactBytes: store.DefaultCompactBytes},
			Listen:           "127.0.0.1:0",
			AddrFile:         addrFile,
			Logger:           slog.New(slog.NewTextHandler(&logs, nil)),
			BareTokenWarning: "bare tokens admitted",
			BareTokenFlag:    "--verify-keys-file",
		})
	}()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		if b, err := os.ReadFile(addrFile); err == nil {
			addr = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatalf("no address file after 30s: %v", err)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	put := func(token, value string) int {
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/v1/kv/k", strings.NewReader(value))
		req.Header.Set("Fencing-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put("5", "new"); code/100 != 2 {
		t.Fatalf("PUT with token 5: %d, want 2xx", code)
	}
	if code := put("3", "old"); code != http.StatusConflict {
		t.Fatalf("PUT with token 3 after 5: %d, want 409", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunStore: %v", err)
	}
	if !strings.Contains(logs.String(), "bare tokens admitted") || !strings.Contains(logs.String(), "flag=--verify-keys-file") {
		t.Errorf("no bare-token warning naming its flag in the log:\n%s", logs.String())
	}
	st, err := store.Open(store.Options{Dir: filepath.Join(dir, "log"), Fence: store.FenceFull, CompactBytes: store.DefaultCompactBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if e, err := st.Get("k", 0); err != nil || string(e.Value) != "new" || e.Token != 5 {
		t.Errorf("after the stop the log holds %q, token %d (%v), want the write of token 5", e.Value, e.Token, err)
	}
}

// Shutdown of a server that stopped cleanly is nil; a listen address that
// cannot be listened on is an error before anything is served.
func TestStartAndShutdown(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv, ln, served, err := Start("127.0.0.1:0", h, nil, httpserve.Options{WriteTimeout: time.Second}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := Shutdown(context.Background(), srv, served); err != nil {
		t.Errorf("Shutdown: %v, want nil", err)
	}
	if _, _, _, err := Start(ln.Addr().String()+"0", h, nil, httpserve.Options{}, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("Start on a port out of range: no error")
	}
}

// A CPU profile is written to its file by stop; no file does nothing; a
// file that cannot be made is an error before anything runs.
func TestStartCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := StartCPUProfile(file)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
		t.Errorf("the profile %s: %v, size %v; want a written profile", file, err, fi)
	}
	stop, err = StartCPUProfile("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof")); err == nil {
		t.Error("a profile in a missing directory: no error")
	}
}

// Only an address that binds to loopback alone counts as loopback: a
// wildcard or a routable address does not, and a bad one is an error.
func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7070", true}, {"[::1]:7070", true}, {"localhost:7070", true},
		{":7070", false}, {"0.0.0.0:7070", false}, {"10.0.0.1:7070", false}, {"seqd.example:7070", false},
	} {
		if got, err := Loopback(tc.addr); err != nil || got != tc.want {
			t.Errorf("Loopback(%q) = %v, %v; want %v", tc.addr, got, err, tc.want)
		}
	}
	if _, err := Loopback("127.0.0.1"); err == nil {
		t.Error("Loopback without a port: no error")
	}
}

// Poll reloads the files it is given and skips the ones that are not: a
// changed tokens file comes into force without a policy file, and stop
// ends the polling.
func TestIdentitiesPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(line string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice 0123456789abcdef0123")
	tokens, err := policy.WatchTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.NewRegistry(), metrics.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	Identities{}.Poll(context.Background(), log, m)() // nothing to poll: returns at once

	stop := Identities{Tokens: tokens}.Poll(context.Background(), log, m)
	defer stop()
	write("bob 0123456789abcdef0123")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if name, ok := tokens.Load().Lookup("0123456789abcdef0123"); ok && name == "bob" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed tokens file was not reloaded: %v", tokens.Load().Names())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Without --max-blocking-reads, blocking reads may take half the
// connection cap, at least one and at most the sequencer's default.
func TestBlockingReads(t *testing.T) {
	for _, tc := range []struct{ conns, want int }{
		{1, 1},
		{2, 1},
		{10, 5},
		{2 * sequencer.DefaultMaxBlockingReads, sequencer.DefaultMaxBlockingReads},
		{100000, sequencer.DefaultMaxBlockingReads},
		{0, max(1, min(httpserve.DefaultMaxConnections()/2, sequencer.DefaultMaxBlockingReads))},
	} {
		if got := BlockingReads(tc.conns); got != tc.want {
			t.Errorf("BlockingReads(%d) = %d, want %d", tc.conns, got, tc.want)
		}
	}
}

package layering

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// TestBuildFromAnotherModule builds, vets and runs a program of a module of
// its own (testdata/importer) that imports zklock and client, as a user of
// seqd would: its go.mod requires seqd and replaces only seqd itself, by
// this checkout. Go ignores the replace directives of a dependency's go.mod,
// so this is what `go get github.com/seqd/seqd/...` gets. The program takes
// a zklock grant and then a daemon's lease of the same lock; both tokens
// must be the czxid of their contender node, the lease's above the mutex's.
func TestBuildFromAnotherModule(t *testing.T) {
	goTool := goCommand(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeImporterModule(t, root, dir, "importer")
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	bin := filepath.Join(dir, "importer")
	for _, args := range [][]string{{"build", "-o", bin, "."}, {"vet", "."}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a module that requires seqd: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	c := zktest.StartT(t, testenv.Options{})
	addr := startDaemon(t, c.Servers())
	zc := zkConn(t, c.Servers())
	const name = "importer/check"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-zk", c.ConnectString(), "-addr", addr, "-name", name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	next := func(want string) []string {
		t.Helper()
		select {
		case line, ok := <-lines:
			f := strings.Fields(line)
			if !ok || len(f) == 0 || f[0] != want {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("importer printed %q (open: %v), want a %q line; its stderr:\n%s", line, ok, want, stderr.String())
			}
			return f
		case <-ctx.Done():
			t.Fatalf("no %q line from the importer: %v", want, ctx.Err())
		}
		return nil
	}

	f := next("mutex")
	mutexToken := czxidToken(t, zc, f, len(f) == 3)
	fmt.Fprintln(stdin)
	next("refused")
	f = next("lease")
	leaseToken := czxidToken(t, zc, f, len(f) == 3)
	if want := name + "@" + f[1]; f[2] != want {
		t.Errorf("lease sequencer %q, want %q", f[2], want)
	}
	if leaseToken <= mutexToken {
		t.Errorf("lease token %d is not above the earlier mutex grant's %d", leaseToken, mutexToken)
	}
	fmt.Fprintln(stdin)
	next("released")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("importer: %v\n%s", err, stderr.String())
	}
}

// czxidToken checks a "mutex TOKEN PATH" or "lease TOKEN SEQUENCER" line:
// the token must be the creation zxid of the grant's contender, a node of
// the lock owned by a live session. A lease names no path: its contender is
// the lock's only child.
func czxidToken(t *testing.T, zc *zk.Conn, f []string, ok bool) uint64 {
	t.Helper()
	if !ok {
		t.Fatalf("line %q: want 3 fields", strings.Join(f, " "))
	}
	token, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || token == 0 {
		t.Fatalf("token %q: want a positive integer (%v)", f[1], err)
	}
	node := f[2]
	if f[0] == "lease" {
		lock := path.Join(zklock.DefaultRoot, strings.SplitN(f[2], "@", 2)[0])
		children, _, err := zc.Children(lock)
		if err != nil || len(children) != 1 {
			t.Fatalf("children of %s: %v %v, want the lease's contender alone", lock, children, err)
		}
		node = lock + "/" + children[0]
	}
	ok, st, err := zc.Exists(node)
	if err != nil || !ok {
		t.Fatalf("contender %s of the %s grant: exists %v, %v", node, f[0], ok, err)
	}
	if uint64(st.Czxid) != token || st.EphemeralOwner == 0 {
		t.Errorf("%s token %d: its contender %s has czxid %d, ephemeral owner 0x%x; want the token and a session", f[0], token, node, st.Czxid, st.EphemeralOwner)
	}
	return token
}

// writeImporterModule lays out dir as a module of its own around
// testdata/<program>, requiring seqd at root, with root's go.sum so that
// the build needs no checksum database.
func writeImporterModule(t *testing.T, root, dir, program string) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := ""
	for _, l := range strings.Split(string(gomod), "\n") {
		if strings.HasPrefix(l, "go ") {
			goLine = l
		}
	}
	if goLine == "" {
		t.Fatalf("%s/go.mod has no go directive", root)
	}
	files := map[string]string{
		"go.mod": fmt.Sprintf("module example.com/%s\n\n%s\n\nrequire github.com/seqd/seqd v0.0.0\n\nreplace github.com/seqd/seqd => %s\n", program, goLine, root),
	}
	for dst, src := range map[string]string{"go.sum": filepath.Join(root, "go.sum"), "main.go": filepath.Join("testdata", program, "main.go")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		files[dst] = string(b)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAPIAloneFromAnotherModule builds a program of a module of its own
// (testdata/apionly) that imports the wire contract, package api, and
// nothing else of seqd, as a client or a resource written against the
// contract would; it links nothing of seqd but api and fence, and it reads
// a lease answer as the daemon writes it.
func TestAPIAloneFromAnotherModule(t *testing.T) {
	goTool := goCommand(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeImporterModule(t, root, dir, "apionly")
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	bin := filepath.Join(dir, "apionly")
	for _, args := range [][]string{{"build", "-o", bin, "."}, {"vet", "."}, {"list", "-deps", "."}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in a module that requires seqd: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] != "list" {
			continue
		}
		for _, dep := range strings.Fields(string(out)) {
			first, _, _ := strings.Cut(dep, "/")
			if strings.Contains(first, ".") && dep != mod+"api" && dep != mod+"fence" && dep != "example.com/apionly" {
				t.Errorf("a program importing api links %s", dep)
			}
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(`{"name":"jobs/x","token":18446744073709551615,"sequencer":"jobs/x@18446744073709551615","lease_id":"0123456789abcdef0123456789abcdef","owner":"me","ttl":"15s","expires_at":"2026-01-02T03:04:05Z"}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apionly: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "18446744073709551615 jobs/x@18446744073709551615 true locks"; got != want {
		t.Errorf("apionly printed %q, want %q", got, want)
	}
}

// startDaemon serves the HTTP API in process on servers, on a loopback port.
func startDaemon(t *testing.T, servers []string) string {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	svc := sequencer.New(sequencer.Config{
		Servers:        servers,
		SessionTimeout: 10 * time.Second,
		Logger:         logger,
		Metrics:        metrics.New(reg, metrics.Options{}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start the daemon: %v", err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.HandlerOptions{Gatherer: reg, Logger: logger}))
	t.Cleanup(func() {
		srv.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		svc.Close(cctx)
	})
	return srv.URL
}

// zkConn is a plain go-zookeeper connection for looking at the nodes.
func zkConn(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

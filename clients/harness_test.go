package clients_test

// The harness that runs each language client's own test suite against real
// daemons: one ZooKeeper (testenv), a plain `seqd serve` and a locked-down
// one (HTTPS with a client certificate and an API token), and a control
// server through which a suite breaks a lease from outside (deleting the
// contender in ZooKeeper) or restarts the plain daemon. Every foreign
// runtime (Python, a JVM through build.sh, Node) is found by one helper
// here and started by run, with the caller's environment minus every SEQD_*
// variable. A client suite's process gets besides:
//
//	SEQD_ADDR                      the plain daemon, http://127.0.0.1:PORT
//	SEQD_TEST_CONTROL              the control server, http://127.0.0.1:PORT
//	SEQD_TEST_SECURE_ADDR          the locked-down daemon, https://127.0.0.1:PORT
//	SEQD_TEST_SECURE_API_TOKEN_FILE its bearer token's file
//	SEQD_TEST_SECURE_CACERT        the CA that signed its certificate
//	SEQD_TEST_SECURE_CERT          a client certificate it accepts
//	SEQD_TEST_SECURE_KEY           the key of that certificate
//
// The SECURE variables are what a suite copies into SEQD_API_TOKEN_FILE,
// SEQD_CACERT, SEQD_CERT and SEQD_KEY to show that its client reads them.
//
// The control server answers (POST, no body):
//
//	/break?kind=lock|semaphore|election&name=NAME
//	    deletes every contender of that lock, semaphore or election in
//	    ZooKeeper, as another client or an operator could: the leases
//	    on it are lost. 200 {"deleted":N}.
//	/restart
//	    kills the plain daemon (SIGKILL) and starts it again on the same
//	    address; answers 200 once the new one is ready. Its leases are
//	    unknown to the new daemon.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// Roots of the daemons' kinds: the defaults of `seqd serve`.
var kindRoots = map[string]string{"lock": "/seqd/locks", "semaphore": "/seqd/semaphores", "election": "/seqd/elections"}

// sessionTimeout is the daemons' ZooKeeper session timeout: short, so that
// a killed daemon's contenders go soon.
const sessionTimeout = "4s"

var zkLazy zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	for _, l := range []interface{ Close() }{&zkLazy, &pgLazy, &mariaLazy, &redisLazy, &redisCasesLazy} {
		l.Close()
	}
	os.Exit(code)
}

// env is the daemons and the control server of one suite.
type env struct {
	t             *testing.T
	plain, secure *daemon
	control       string
	vars          map[string]string
}

// environ is the suite's variables as NAME=VALUE.
func (e *env) environ() []string {
	var out []string
	for k, v := range e.vars {
		out = append(out, k+"="+v)
	}
	return out
}

var seqdBuild struct {
	sync.Once
	bin string
	err error
}

// seqdBinary builds cmd/seqd once per test binary.
func seqdBinary(t *testing.T) string {
	t.Helper()
	seqdBuild.Do(func() {
		dir, err := os.MkdirTemp("", "seqd-clients-bin-")
		if err != nil {
			seqdBuild.err = err
			return
		}
		seqdBuild.bin = filepath.Join(dir, "seqd")
		if out, err := exec.Command("go", "build", "-o", seqdBuild.bin, "github.com/seqd/seqd/cmd/seqd").CombinedOutput(); err != nil {
			seqdBuild.err = fmt.Errorf("go build seqd: %v\n%s", err, out)
		}
	})
	if seqdBuild.err != nil {
		t.Fatal(seqdBuild.err)
	}
	return seqdBuild.bin
}

// newEnv starts the daemons and the control server for one suite; they
// stop at the test's cleanup.
func newEnv(t *testing.T) *env {
	t.Helper()
	e, dir := &env{t: t}, t.TempDir()
	e.plain = e.startDaemon("plain")
	ca, err := testenv.NewCA(dir, "clients")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.Issue("server", true)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := ca.Issue("client", false)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "api-token")
	writeFile(t, tokenFile, "clients-test-token-0123456789abcdef\n")
	e.secure = e.startDaemon("secure", "--tls-cert-file", srvCert, "--tls-key-file", srvKey,
		"--tls-client-ca-file", ca.CertFile, "--api-token-file", tokenFile)
	e.control = e.serveControl()
	e.vars = map[string]string{
		"SEQD_ADDR":                       "http://" + e.plain.addr,
		"SEQD_TEST_CONTROL":               e.control,
		"SEQD_TEST_SECURE_ADDR":           "https://" + e.secure.addr,
		"SEQD_TEST_SECURE_API_TOKEN_FILE": tokenFile,
		"SEQD_TEST_SECURE_CACERT":         ca.CertFile,
		"SEQD_TEST_SECURE_CERT":           cliCert,
		"SEQD_TEST_SECURE_KEY":            cliKey,
	}
	return e
}

// daemon is a `seqd serve` process, started again on its address by a
// restart; logs holds the output of every run.
type daemon struct {
	bin  string
	args []string
	addr string // host:port it listens on
	logs zktest.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startDaemon starts `seqd serve` on a free loopback port with extra flags.
func (e *env) startDaemon(name string, extra ...string) *daemon {
	e.t.Helper()
	d := &daemon{bin: seqdBinary(e.t), args: append([]string{"serve", "--zk", zkLazy.Get(e.t).ConnectString(),
		"--session-timeout", sessionTimeout, "--log-format", "text"}, extra...)}
	if err := d.start("127.0.0.1:0"); err != nil {
		e.t.Fatalf("start %s daemon: %v", name, err)
	}
	e.t.Cleanup(func() {
		d.stop(syscall.SIGTERM)
		if e.t.Failed() {
			e.t.Logf("%s daemon's log:\n%s", name, d.logs.String())
		}
	})
	return d
}

// start runs the daemon on listen and waits for its "listening" line.
func (d *daemon) start(listen string) error {
	cmd := exec.Command(d.bin, append(slices.Clone(d.args), "--listen", listen)...)
	cmd.Env = withoutSeqdVars(os.Environ())
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return err
	}
	found, done := make(chan string, 1), make(chan struct{})
	go func() { // ends when the daemon and its output do
		defer close(done)
		for sc := bufio.NewScanner(pr); sc.Scan(); {
			d.logs.Write(append(sc.Bytes(), '\n'))
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		pr.Close()
		cmd.Wait()
	}()
	d.mu.Lock()
	d.cmd, d.done = cmd, done
	d.mu.Unlock()
	select {
	case d.addr = <-found:
		return nil
	case <-done:
		return fmt.Errorf("seqd exited before listening:\n%s", d.logs.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return fmt.Errorf("seqd did not listen within 60s:\n%s", d.logs.String())
	}
}

func (d *daemon) stop(sig syscall.Signal) {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// restart kills the daemon and starts it again on its address.
func (d *daemon) restart() error {
	d.stop(syscall.SIGKILL)
	var err error
	for range 50 { // the port may linger for a moment
		if err = d.start(d.addr); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func withoutSeqdVars(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "SEQD_") })
}

// serveControl starts the control server and returns its URL.
func (e *env) serveControl() string {
	e.t.Helper()
	conn, _, err := zk.Connect(zkLazy.Get(e.t).Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(conn.Close)
	var restartMu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /break", func(w http.ResponseWriter, r *http.Request) {
		kind, name := r.URL.Query().Get("kind"), r.URL.Query().Get("name")
		root, ok := kindRoots[kind]
		if !ok || name == "" {
			http.Error(w, "want ?kind=lock|semaphore|election&name=NAME", http.StatusBadRequest)
			return
		}
		dir := path.Join(root, name)
		if kind == "semaphore" {
			dir = path.Join(dir, "leases")
		}
		n, err := deleteChildren(conn, dir)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"deleted": n})
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		restartMu.Lock()
		defer restartMu.Unlock()
		if err := e.plain.restart(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"restarted":true}`)
	})
	return serve(e.t, mux)
}

// serve serves h on a loopback port until the test's cleanup.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// deleteChildren deletes every child of dir (and their children), and says
// how many children of dir it deleted.
func deleteChildren(conn *zk.Conn, dir string) (int, error) {
	kids, _, err := conn.Children(dir)
	if err == zk.ErrNoNode {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range kids {
		p := dir + "/" + k
		if _, err := deleteChildren(conn, p); err != nil {
			return n, err
		}
		switch err := conn.Delete(p, -1); err {
		case nil:
			n++
		case zk.ErrNoNode:
		default:
			return n, err
		}
	}
	return n, nil
}

// output is what a command wrote: to stdout alone, and to stdout and
// stderr as they came.
type output struct{ stdout, all string }

// run runs name args in dir, killed after timeout, with the caller's
// environment minus every SEQD_* variable, with vars, and without Python
// bytecode files in the tree; it fails the test when the command does not
// finish in time.
func run(t *testing.T, timeout time.Duration, dir string, vars []string, name string, args ...string) (output, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, slices.Concat(withoutSeqdVars(os.Environ()), vars, []string{"PYTHONDONTWRITEBYTECODE=1"}), 5*time.Second
	var stdout bytes.Buffer
	var all zktest.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, &all), &all
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not finish within %v:\n%s", name, strings.Join(args, " "), timeout, all.String())
	}
	return output{stdout.String(), all.String()}, err
}

// runSuite runs a suite's command with run, logs its output, and fails
// the test when it fails.
func runSuite(t *testing.T, timeout time.Duration, dir string, vars []string, name string, args ...string) output {
	t.Helper()
	out, err := run(t, timeout, dir, vars, name, args...)
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out.all)
	if err != nil {
		t.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out
}

// debianPython is the interpreter whose packages (python3-psycopg,
// python3-tooz, python3-celery, python3-pyflakes, python3-mypy …) the
// suites and the checks use; the client itself needs none of them.
const debianPython = "/usr/bin/python3"

// python is debianPython, after it imported modules; the test fails
// (never skips) without them.
func python(t *testing.T, modules ...string) string {
	t.Helper()
	if out, err := exec.Command(debianPython, "-c", "import sys"+strings.Join(append([]string{""}, modules...), ", ")).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %v (scripts/deps.sh installs the python3-* packages): %v\n%s", debianPython, modules, err, out)
	}
	return debianPython
}

// node is Node.js 20 or later; the test fails (never skips) without it.
func node(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client's tests need Node.js 20 or later")
	}
	out, err := exec.Command(p, "--version").Output()
	version := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0]); err != nil || major < 20 {
		t.Fatalf("node %q (%v): the JavaScript client's tests need Node.js 20 or later", version, err)
	}
	return p
}

// nodeTests are node's arguments to run dir's *.test.js one file at a
// time (a file may restart the plain daemon the others use), as paths
// relative to base.
func nodeTests(t *testing.T, base, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(base, dir, "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", filepath.Join(base, dir), err)
	}
	args := []string{"--test", "--test-concurrency=1", "--test-reporter=spec"}
	for _, f := range files {
		args = append(args, filepath.Join(dir, filepath.Base(f)))
	}
	return args
}

// npmDeps installs what dir's lock file pins with npm ci, unless
// node_modules holds it already: npm writes node_modules/.package-lock.json
// on install, and a lock file newer than it means a change since.
func npmDeps(t *testing.T, dir string) {
	t.Helper()
	lock, lerr := os.Stat(filepath.Join(dir, "package-lock.json"))
	inst, ierr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if lerr == nil && ierr == nil && !inst.ModTime().Before(lock.ModTime()) {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is not installed: the tests in %s install what its lock file pins with npm ci", dir)
	}
	if out, err := run(t, 5*time.Minute, dir, nil, npm, "ci", "--no-audit", "--no-fund"); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out.all)
	}
}

// matchDocOutput compares what an example printed with what a document
// shows, line by line; "…" in a shown line stands for any text (a token).
func matchDocOutput(got, want string) error {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	w := strings.Split(strings.TrimRight(want, "\n"), "\n")
	for i, line := range w {
		if i >= len(g) {
			return fmt.Errorf("it printed %d lines, the document shows %d (the next: %q)", len(g), len(w), line)
		}
		parts := strings.Split(line, "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".+?") + "$").MatchString(g[i]) {
			return fmt.Errorf("line %d: it printed %q, the document shows %q", i+1, g[i], line)
		}
	}
	if len(g) > len(w) {
		return fmt.Errorf("it printed %d lines more than the document shows: %q", len(g)-len(w), g[len(w):])
	}
	return nil
}

// TestDocOutputMatcherCatchesDrift is matchDocOutput's negative control: a
// changed word, a missing line, an extra line and an empty "…" are each
// refused, and a token shown as "…" matches any.
func TestDocOutputMatcherCatchesDrift(t *testing.T) {
	for want, good := range map[string]string{
		"holding docs/x@…\nwaiters left behind: 0\n":               "holding docs/x@4711\nwaiters left behind: 0\n",
		"holding demo/java, fence …\nsame fence on re-entry: true": "holding demo/java, fence 15\nsame fence on re-entry: true",
	} {
		if err := matchDocOutput(good, want); err != nil {
			t.Errorf("the output as shown: %v", err)
		}
	}
	for got, want := range map[string]string{
		"holding docs/x@4711\nwaiters left behind: 1\n":              "holding docs/x@…\nwaiters left behind: 0\n",
		"holding docs/x@4711\n":                                      "holding docs/x@…\nwaiters left behind: 0\n",
		"holding docs/x@4711\nwaiters left behind: 0\nextra\n":       "holding docs/x@…\nwaiters left behind: 0\n",
		"holding docs/y@4711\nwaiters left behind: 0\n":              "holding docs/x@…\nwaiters left behind: 0\n",
		"holding demo/java, fence 15\nsame fence on re-entry: false": "holding demo/java, fence …\nsame fence on re-entry: true",
		"holding demo/java, fence \nsame fence on re-entry: true":    "holding demo/java, fence …\nsame fence on re-entry: true",
		"holding demo/java, fence 15":                                "holding demo/java, fence …\nsame fence on re-entry: true",
	} {
		if matchDocOutput(got, want) == nil {
			t.Errorf("output %q matched %q", got, want)
		}
	}
}

// TestHarnessControl checks the harness itself: a lease broken through the
// control server is lost at the daemon, and a restart forgets leases.
func TestHarnessControl(t *testing.T) {
	e := newEnv(t)
	post := func(url, body string) (map[string]any, int) {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := map[string]any{"body": string(b)}
		json.Unmarshal(b, &m)
		return m, resp.StatusCode
	}
	acquire := func(name string) map[string]any {
		l, code := post(e.vars["SEQD_ADDR"]+"/v1/locks/"+name+"/acquire", `{"owner":"harness"}`)
		if code != 200 {
			t.Fatalf("acquire: got %d %v, want 200", code, l)
		}
		return l
	}
	renew := func(l map[string]any) (map[string]any, int) {
		return post(e.vars["SEQD_ADDR"]+"/v1/locks/"+l["name"].(string)+"/renew", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, l["lease_id"], l["token"]))
	}
	control := func(path string) map[string]any {
		m, code := post(e.control+path, "")
		if code != 200 {
			t.Fatalf("POST %s: %d %v", path, code, m)
		}
		return m
	}

	l := acquire("harness/broken")
	if got := control("/break?kind=lock&name=harness/broken"); got["deleted"] != float64(1) {
		t.Fatalf("break deleted %v, want 1", got["deleted"])
	}
	zktest.Eventually(t, 10*time.Second, "the broken lease's renew to fail with 409", func() bool {
		_, code := renew(l)
		return code == http.StatusConflict
	})

	l = acquire("harness/restarted")
	control("/restart")
	if m, code := renew(l); code != http.StatusConflict || m["code"] != "lost" {
		t.Fatalf("renew after a restart: got %d %v, want 409 lost", code, m)
	}
}

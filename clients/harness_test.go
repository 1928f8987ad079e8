package clients_test

// The harness that runs each language client's own test suite against real
// daemons: one ZooKeeper (testenv), a plain `seqd serve` and a locked-down
// one (HTTPS with a client certificate and an API token), and a control
// server through which a suite breaks a lease from outside (deleting the
// contender in ZooKeeper) or restarts the plain daemon.
//
// A suite's process gets, besides the caller's environment minus every
// SEQD_* variable:
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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
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
var kindRoots = map[string]string{
	"lock":      "/seqd/locks",
	"semaphore": "/seqd/semaphores",
	"election":  "/seqd/elections",
}

// sessionTimeout is the daemons' ZooKeeper session timeout: short, so that
// a killed daemon's contenders go soon.
const sessionTimeout = "4s"

var zkLazy zktest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	zkLazy.Close()
	pgLazy.Close()
	mariaLazy.Close()
	redisLazy.Close()
	os.Exit(code)
}

// env is the daemons and the control server of one suite.
type env struct {
	t       *testing.T
	bin     string
	zk      *testenv.Cluster
	dir     string
	plain   *daemon
	secure  *daemon
	control string
	vars    map[string]string
}

// daemon is a `seqd serve` process.
type daemon struct {
	args []string
	addr string // host:port it listens on

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *zktest.Buffer
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// seqdBinary builds cmd/seqd once per test binary.
func seqdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seqd-clients-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		bin := filepath.Join(dir, "seqd")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/seqd/seqd/cmd/seqd").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build seqd: %v\n%s", err, out)
			return
		}
		buildOnce.bin = bin
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

// newEnv starts the daemons and the control server for one suite; they
// stop at the test's cleanup.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, bin: seqdBinary(t), zk: zkLazy.Get(t), dir: t.TempDir()}
	e.plain = e.startDaemon("plain", nil)

	ca, err := testenv.NewCA(e.dir, "clients")
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
	tokenFile := filepath.Join(e.dir, "api-token")
	if err := os.WriteFile(tokenFile, []byte("clients-test-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.secure = e.startDaemon("secure", []string{
		"--tls-cert-file", srvCert, "--tls-key-file", srvKey,
		"--tls-client-ca-file", ca.CertFile, "--api-token-file", tokenFile,
	})
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

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startDaemon starts `seqd serve` on a free loopback port with extra flags.
func (e *env) startDaemon(name string, extra []string) *daemon {
	e.t.Helper()
	args := append([]string{"serve", "--zk", e.zk.ConnectString(), "--listen", "127.0.0.1:0",
		"--session-timeout", sessionTimeout, "--log-format", "text"}, extra...)
	d := &daemon{args: args}
	if err := d.start(e.bin, ""); err != nil {
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

// start runs the daemon, on addr if given (a restart), and waits for its
// "listening" line.
func (d *daemon) start(bin, addr string) error {
	args := append([]string(nil), d.args...)
	if addr != "" {
		for i, a := range args {
			if a == "--listen" {
				args[i+1] = addr
			}
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = withoutSeqdVars(os.Environ())
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(done)
	}()
	logs := &zktest.Buffer{}
	if d.logs != nil {
		logs.Write([]byte(d.logs.String()))
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			logs.Write([]byte(line + "\n"))
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	d.mu.Lock()
	d.cmd, d.done, d.logs = cmd, done, logs
	d.mu.Unlock()
	select {
	case a := <-found:
		d.addr = a
		return nil
	case <-done:
		return fmt.Errorf("seqd exited before listening:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return fmt.Errorf("seqd did not listen within 60s:\n%s", logs.String())
	}
}

func (d *daemon) stop(sig syscall.Signal) {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// restart kills the daemon and starts it again on its address.
func (d *daemon) restart(bin string) error {
	d.stop(syscall.SIGKILL)
	var err error
	for range 50 { // the port may linger for a moment
		if err = d.start(bin, d.addr); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func withoutSeqdVars(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "SEQD_") {
			out = append(out, kv)
		}
	}
	return out
}

// serveControl starts the control server and returns its URL.
func (e *env) serveControl() string {
	e.t.Helper()
	conn, _, err := zk.Connect(e.zk.Servers(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(conn.Close)
	var restartMu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /break", func(w http.ResponseWriter, r *http.Request) {
		root, ok := kindRoots[r.URL.Query().Get("kind")]
		name := r.URL.Query().Get("name")
		if !ok || name == "" {
			http.Error(w, "want ?kind=lock|semaphore|election&name=NAME", http.StatusBadRequest)
			return
		}
		dir := path.Join(root, name)
		if r.URL.Query().Get("kind") == "semaphore" {
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
		if err := e.plain.restart(e.bin); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"restarted":true}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	e.t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
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

// run runs a suite's command in dir with the env's variables, logging its
// output, and fails the test if it exits non-zero.
func (e *env) run(dir string, timeout time.Duration, name string, args ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = withoutSeqdVars(os.Environ())
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	e.t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if ctx.Err() != nil {
		e.t.Fatalf("%s did not finish within %v", name, timeout)
	}
	if err != nil {
		e.t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

// TestHarnessControl checks the harness itself: a lease broken through the
// control server is lost at the daemon, and a restart forgets leases.
func TestHarnessControl(t *testing.T) {
	e := newEnv(t)
	acquire := func(name string) (map[string]any, int) {
		resp, err := http.Post(e.vars["SEQD_ADDR"]+"/v1/locks/"+name+"/acquire", "application/json", strings.NewReader(`{"owner":"harness"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m, resp.StatusCode
	}
	renew := func(l map[string]any) (map[string]any, int) {
		body := fmt.Sprintf(`{"lease_id":%q,"token":%v}`, l["lease_id"], l["token"])
		resp, err := http.Post(e.vars["SEQD_ADDR"]+"/v1/locks/"+l["name"].(string)+"/renew", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m, resp.StatusCode
	}
	post := func(path string) map[string]any {
		resp, err := http.Post(e.control+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}

	l, code := acquire("harness/broken")
	if code != 200 {
		t.Fatalf("acquire: got %d %v, want 200", code, l)
	}
	if got := post("/break?kind=lock&name=harness/broken"); got["deleted"] != float64(1) {
		t.Fatalf("break deleted %v, want 1", got["deleted"])
	}
	zktest.Eventually(t, 10*time.Second, "the broken lease's renew to fail with 409", func() bool {
		_, code := renew(l)
		return code == http.StatusConflict
	})

	l, code = acquire("harness/restarted")
	if code != 200 {
		t.Fatalf("acquire: got %d %v, want 200", code, l)
	}
	post("/restart")
	if m, code := renew(l); code != http.StatusConflict || m["code"] != "lost" {
		t.Fatalf("renew after a restart: got %d %v, want 409 lost", code, m)
	}
}

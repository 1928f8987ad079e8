// Package testenv starts real ZooKeeper servers, standalone or as a 3-node
// ensemble, for tests, benchmarks and `seqd dev`. It runs the Debian package's
// server (org.apache.zookeeper.server.quorum.QuorumPeerMain with the package's
// zookeeper.jar on the classpath) on free loopback ports, each member in its
// own temporary directory with its own config. It is not a mock: what runs is
// ZooKeeper.
//
// Members can be stopped, killed, paused (SIGSTOP) and resumed for fault
// tests, and, with Options.PeerProxies, partitioned from each other through
// loopback proxies (Proxy, Cluster.Link); a Proxy put in front of a
// member's client port does the same between a client and the member. The plain API (Start) is usable outside tests; StartT and Lazy add
// testing conveniences on top.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Options.
const (
	DefaultJar      = "/usr/share/java/zookeeper.jar"
	DefaultTickTime = 100 * time.Millisecond
	slf4jSimple     = "/usr/share/java/slf4j-simple.jar"
)

// ErrNotInstalled says that Java or the ZooKeeper jar is missing.
var ErrNotInstalled = errors.New("testenv: ZooKeeper is not installed (apt-get install zookeeper)")

// Options configures Start.
type Options struct {
	// Servers is the number of members: 1 (standalone, the default) or an
	// odd number for an ensemble.
	Servers int
	// TickTime is ZooKeeper's tick; session timeouts range from 2 to 600
	// ticks. Default DefaultTickTime.
	TickTime time.Duration
	// Java is the java binary; default $SEQD_ZK_JAVA or "java".
	Java string
	// Classpath is the classpath; default $SEQD_ZK_CLASSPATH or the Debian
	// package's zookeeper.jar (its manifest names the rest) plus slf4j-simple
	// so that server logs reach stderr.
	Classpath string
	// Dir is where member directories are made; default a new temporary
	// directory, removed by Stop.
	Dir string
	// StartTimeout bounds how long Start waits for the members to serve.
	// Default 60s.
	StartTimeout time.Duration
	// PeerProxies routes the traffic between members through a Proxy per
	// ordered pair (see Cluster.Link), so that tests can cut, delay or drop
	// it. Each member's config keeps its own ports and names the other
	// members by the addresses of its proxies to them.
	PeerProxies bool
	// ClientPort, when not 0, is the loopback client port of a standalone
	// server (Servers 1); Start fails with ErrPortInUse if it is taken.
	// Default: a free port.
	ClientPort int
	// TLS, if set, makes every member also serve TLS on a secure client
	// port (Member.SecureAddr) with Netty, a certificate issued by
	// TLS.CA and PEM key and trust stores. The plain client port stays
	// open (for the srvr readiness probe and four-letter words).
	TLS *TLSOptions
}

// ErrPortInUse says that Options.ClientPort is taken.
var ErrPortInUse = errors.New("testenv: client port in use")

// TLSOptions configures the members' secure client ports.
type TLSOptions struct {
	// CA issues the servers' certificates and is the servers' trust store
	// for client certificates. Default a new CA in the cluster's directory.
	CA *CA
	// ClientAuth requires a client certificate issued by CA
	// (ssl.clientAuth=need); otherwise none is asked for.
	ClientAuth bool
}

// nettyJars are the jars the Netty server connection factory needs that the
// Debian zookeeper.jar's manifest does not name: they sit next to it.
var nettyJars = []string{"netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar"}

// Cluster is a running standalone server or ensemble.
type Cluster struct {
	Members []*Member
	// CA issued the members' TLS certificates (nil without TLS): issue
	// client certificates with it, and trust its CertFile.
	CA     *CA
	dir    string
	ownDir bool
	links  map[[2]int]*Proxy
}

// Member is one ZooKeeper server process.
type Member struct {
	ID         int
	ClientAddr string // host:port for clients
	peerPorts  [2]int // quorum, election
	SecureAddr string // host:port of the TLS client port; "" without TLS
	dir        string
	cfg        string
	java       string
	classpath  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	logs   *tailBuffer
	run    int64 // logs.written when the running process started
}

// Start starts a cluster and waits until every member answers `srvr` with a
// Mode line (for an ensemble: a leader was elected and everyone serves).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if !errors.Is(err, errPortTaken) || attempt == 3 || opts.ClientPort != 0 {
			return c, err
		}
	}
}

// errPortTaken: a port chosen for a member was taken by another process
// before the member could bind it; Start tries again with new ports.
var errPortTaken = errors.New("testenv: a port was taken before the server could bind it")

func start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Servers <= 0 {
		opts.Servers = 1
	}
	if opts.TickTime <= 0 {
		opts.TickTime = DefaultTickTime
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.Java == "" {
		opts.Java = os.Getenv("SEQD_ZK_JAVA")
	}
	if opts.Java == "" {
		opts.Java = "java"
	}
	if opts.Classpath == "" {
		opts.Classpath = os.Getenv("SEQD_ZK_CLASSPATH")
	}
	if opts.Classpath == "" {
		if _, err := os.Stat(DefaultJar); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
		}
		opts.Classpath = DefaultJar
		if opts.TLS != nil {
			for _, j := range nettyJars {
				opts.Classpath += ":" + filepath.Join(filepath.Dir(DefaultJar), j)
			}
		}
		if _, err := os.Stat(slf4jSimple); err == nil {
			opts.Classpath += ":" + slf4jSimple
		}
	}
	if _, err := exec.LookPath(opts.Java); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}

	if opts.ClientPort != 0 && opts.Servers != 1 {
		return nil, fmt.Errorf("testenv: ClientPort is for a standalone server, not %d members", opts.Servers)
	}
	if opts.ClientPort != 0 && !PortFree(opts.ClientPort) {
		return nil, fmt.Errorf("%w: 127.0.0.1:%d", ErrPortInUse, opts.ClientPort)
	}

	c := &Cluster{dir: opts.Dir}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "seqd-zk-")
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		c.dir, c.ownDir = d, true
	}
	if opts.TLS != nil {
		if opts.TLS.CA == nil {
			ca, err := NewCA(c.dir, "zookeeper")
			if err != nil {
				c.Stop()
				return nil, err
			}
			opts.TLS.CA = ca
		}
		c.CA = opts.TLS.CA
	}
	// Three ports per member: client, quorum, election. All are taken from
	// the kernel, held until all are known, then released for ZooKeeper.
	// With TLS, one more per member: the secure client port.
	ports, release, err := holdPorts(4 * opts.Servers)
	if err != nil {
		c.Stop()
		return nil, err
	}
	if opts.ClientPort != 0 {
		ports[0] = opts.ClientPort
	}
	// servers[i] is member i's view of the ensemble.
	servers := make([]string, opts.Servers)
	if opts.Servers > 1 {
		// The proxies listen while the members' ports are still held, so
		// that none of them can take one of those.
		if opts.PeerProxies {
			err = c.startLinks(ports, opts.Servers)
		}
		release()
		if err != nil {
			c.Stop()
			return nil, err
		}
		for i := 0; i < opts.Servers; i++ {
			var b strings.Builder
			for j := 0; j < opts.Servers; j++ {
				quorum, election := fmt.Sprintf("127.0.0.1:%d", ports[3*j+1]), fmt.Sprintf("127.0.0.1:%d", ports[3*j+2])
				if l := c.links[[2]int{i + 1, j + 1}]; l != nil {
					quorum, election = l.routes[0], l.routes[1]
				}
				fmt.Fprintf(&b, "server.%d=%s:%s;127.0.0.1:%d\n", j+1, quorum, strings.TrimPrefix(election, "127.0.0.1:"), ports[3*j])
			}
			servers[i] = b.String()
		}
	} else {
		release()
	}
	tick := int(opts.TickTime / time.Millisecond)
	for i := 0; i < opts.Servers; i++ {
		m := &Member{
			ID:         i + 1,
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			peerPorts:  [2]int{ports[3*i+1], ports[3*i+2]},
			dir:        filepath.Join(c.dir, fmt.Sprintf("zk%d", i+1)),
			java:       opts.Java,
			classpath:  opts.Classpath,
		}
		if err := os.MkdirAll(filepath.Join(m.dir, "data"), 0o755); err != nil {
			c.Stop()
			return nil, fmt.Errorf("testenv: %w", err)
		}
		if err := os.WriteFile(filepath.Join(m.dir, "data", "myid"), []byte(fmt.Sprintf("%d\n", m.ID)), 0o644); err != nil {
			c.Stop()
			return nil, fmt.Errorf("testenv: %w", err)
		}
		// Every client of these servers comes from loopback: no cap per
		// address (ZooKeeper's default, 60, would refuse the sessions of a
		// bench of many clients).
		cfg := fmt.Sprintf(`tickTime=%d
initLimit=20
syncLimit=10
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxSessionTimeout=%d
4lw.commands.whitelist=*
maxClientCnxns=0
admin.enableServer=false
standaloneEnabled=true
reconfigEnabled=false
autopurge.purgeInterval=0
%s`, tick, filepath.Join(m.dir, "data"), ports[3*i], 600*tick, servers[i])
		if opts.TLS != nil {
			tlsCfg, err := m.secure(opts.TLS, ports[3*opts.Servers+i])
			if err != nil {
				c.Stop()
				return nil, err
			}
			cfg += tlsCfg
		}
		m.cfg = filepath.Join(m.dir, "zoo.cfg")
		if err := os.WriteFile(m.cfg, []byte(cfg), 0o644); err != nil {
			c.Stop()
			return nil, fmt.Errorf("testenv: %w", err)
		}
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		if err := m.start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.WaitServing(wctx); err != nil {
		if ctx.Err() != nil {
			// The caller gave up (a Ctrl-C): not a failure of ZooKeeper's,
			// so its logs would only be noise.
			c.Stop()
			return nil, fmt.Errorf("testenv: start cancelled: %w", context.Cause(ctx))
		}
		logs := c.Logs()
		c.Stop()
		return nil, fmt.Errorf("%w\n--- ZooKeeper logs ---\n%s", err, logs)
	}
	return c, nil
}

// Servers returns the members' client addresses.
func (c *Cluster) Servers() []string {
	s := make([]string, len(c.Members))
	for i, m := range c.Members {
		s[i] = m.ClientAddr
	}
	return s
}

// ConnectString is Servers joined by commas.
func (c *Cluster) ConnectString() string { return strings.Join(c.Servers(), ",") }

// WaitServing waits until every member that is running answers srvr with a
// Mode line.
func (c *Cluster) WaitServing(ctx context.Context) error {
	for _, m := range c.Members {
		if err := m.WaitServing(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Leader returns the member that reports Mode: leader (a standalone server
// is its own leader).
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	for {
		for _, m := range c.Members {
			mode, err := m.Mode()
			if err == nil && (mode == "leader" || mode == "standalone") {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("testenv: no leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Followers returns the members that report Mode: follower.
func (c *Cluster) Followers() []*Member {
	var f []*Member
	for _, m := range c.Members {
		if mode, err := m.Mode(); err == nil && mode == "follower" {
			f = append(f, m)
		}
	}
	return f
}

// Logs returns every member's recent output.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, m := range c.Members {
		fmt.Fprintf(&b, "=== zk%d (%s) ===\n%s\n", m.ID, m.ClientAddr, m.Logs())
	}
	return b.String()
}

// Stop kills every member and removes the cluster's directory if Start made
// it. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.Kill()
	}
	for _, l := range c.links {
		l.Close()
	}
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
}

// secure issues the member's certificate and returns the config lines that
// serve TLS on port.
func (m *Member) secure(opts *TLSOptions, port int) (string, error) {
	cert, key, err := opts.CA.Issue(fmt.Sprintf("zk%d-%d", m.ID, port), true)
	if err != nil {
		return "", err
	}
	// A PEM key store holds the key and the certificate in one file.
	keyStore := filepath.Join(m.dir, "keystore.pem")
	var pemData []byte
	for _, f := range []string{key, cert} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		pemData = append(pemData, b...)
	}
	if err := os.WriteFile(keyStore, pemData, 0o600); err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	clientAuth := "none"
	if opts.ClientAuth {
		clientAuth = "need"
	}
	m.SecureAddr = fmt.Sprintf("127.0.0.1:%d", port)
	return fmt.Sprintf(`secureClientPort=%d
secureClientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=%s
ssl.keyStore.type=PEM
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=%s
ssl.hostnameVerification=false
`, port, keyStore, opts.CA.CertFile, clientAuth), nil
}

// SecureServers returns the members' TLS client addresses (nil without
// TLS).
func (c *Cluster) SecureServers() []string {
	if c.CA == nil {
		return nil
	}
	s := make([]string, len(c.Members))
	for i, m := range c.Members {
		s[i] = m.SecureAddr
	}
	return s
}

func (m *Member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("testenv: zk%d is already running", m.ID)
	}
	if m.logs == nil {
		m.logs = &tailBuffer{max: 256 << 10}
	}
	cmd := exec.Command(m.java,
		"-Xmx256m", "-XX:+UseSerialGC",
		"-Dzookeeper.log.dir="+m.dir,
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", m.classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", m.cfg)
	cmd.Dir = m.dir
	cmd.Stdout = m.logs
	cmd.Stderr = m.logs
	// Its own process group, and killed if the process that started it dies
	// (a crashed test must not leave servers behind).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start zk%d: %w", m.ID, err)
	}
	exited := make(chan struct{})
	go func() { // owned by the Member: ends when the process does
		cmd.Wait()
		close(exited)
	}()
	m.cmd, m.exited, m.paused, m.run = cmd, exited, false, m.logs.mark()
	return nil
}

// PID is the server's process id, or 0 if it is not running.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Running says whether the process is running (paused counts as running).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

func (m *Member) signalAndWait(sig syscall.Signal, wait time.Duration) {
	m.mu.Lock()
	cmd, exited, paused := m.cmd, m.exited, m.paused
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	if paused && sig != syscall.SIGKILL {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(wait):
		cmd.Process.Kill()
		<-exited
	}
	m.mu.Lock()
	m.cmd, m.paused = nil, false
	m.mu.Unlock()
}

// Stop stops the server with SIGTERM (SIGKILL after 10s).
func (m *Member) Stop() { m.signalAndWait(syscall.SIGTERM, 10*time.Second) }

// Kill stops the server with SIGKILL.
func (m *Member) Kill() { m.signalAndWait(syscall.SIGKILL, 10*time.Second) }

// Pause freezes the server with SIGSTOP and returns once all its threads
// have stopped: it answers nobody, and its clients' sessions can expire on
// the other members.
func (m *Member) Pause() error { return m.pause(true) }

// Resume continues a paused server with SIGCONT.
func (m *Member) Resume() error { return m.pause(false) }

func (m *Member) pause(stop bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("testenv: zk%d is not running", m.ID)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("testenv: zk%d: %w", m.ID, err)
	}
	m.paused = stop
	if stop {
		if err := waitStopped([]int{m.cmd.Process.Pid}, stopWait); err != nil {
			return fmt.Errorf("testenv: zk%d: %w", m.ID, err)
		}
	}
	return nil
}

// Restart starts a stopped or killed member again with the same config and
// data, and waits until it serves.
func (m *Member) Restart(ctx context.Context) error {
	if m.Running() {
		m.Stop()
	}
	m.mu.Lock()
	m.cmd = nil
	m.mu.Unlock()
	if err := m.start(); err != nil {
		return err
	}
	return m.WaitServing(ctx)
}

// WaitServing waits until the member answers srvr with a Mode line.
func (m *Member) WaitServing(ctx context.Context) error {
	for {
		if _, err := m.Mode(); err == nil {
			// The port is released between choosing it and the server
			// binding it: make sure the server answering is this one, not
			// another test's that took the port in between.
			conf, err := FourLetter(m.ClientAddr, "conf", time.Second)
			if err == nil && !strings.Contains(conf, m.dir) {
				return fmt.Errorf("%w: zk%d: another server answers on %s", errPortTaken, m.ID, m.ClientAddr)
			}
			if err == nil {
				return nil
			}
		}
		if !m.Running() {
			// Another process bound the port between its choice and
			// the server's bind: Start tries again with new ports.
			if strings.Contains(m.runLogs(), "BindException: Address already in use") {
				return fmt.Errorf("%w: zk%d could not bind %s", errPortTaken, m.ID, m.ClientAddr)
			}
			return fmt.Errorf("testenv: zk%d exited before serving", m.ID)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: zk%d not serving: %w", m.ID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Mode asks the server with the srvr four-letter word and returns its mode:
// standalone, leader or follower.
func (m *Member) Mode() (string, error) {
	out, err := FourLetter(m.ClientAddr, "srvr", time.Second)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("testenv: zk%d not serving: %q", m.ID, strings.TrimSpace(out))
}

// runLogs is what the member's latest process wrote that is still held:
// an earlier run's lines are not its.
func (m *Member) runLogs() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		return ""
	}
	return m.logs.since(m.run)
}

// Logs returns the member's recent output.
func (m *Member) Logs() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		return ""
	}
	return m.logs.String()
}

// FourLetter sends a four-letter word to a server and returns its answer.
func FourLetter(addr, word string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", err
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(conn)
	return b.String(), err
}

// PortFree reports whether the loopback TCP port can be listened on now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// holdPorts asks the kernel for n distinct free loopback ports and holds
// them until release is called.
func holdPorts(n int) (ports []int, release func(), err error) {
	var ls []net.Listener
	release = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("testenv: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, release, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	b       []byte
	written int64 // bytes ever written
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += int64(len(p))
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// mark is where the output written from now on begins, for since.
func (t *tailBuffer) mark() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// since is the output written after mark that is still held.
func (t *tailBuffer) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := min(t.written-mark, int64(len(t.b)))
	return string(t.b[int64(len(t.b))-n:])
}

// DataDir is the member's ZooKeeper data directory (its myid and the
// version-2 directory of snapshots and transaction logs).
func (m *Member) DataDir() string { return filepath.Join(m.dir, "data") }

// BackUp copies every member's data directory into dst/zk<ID>, as an
// operator's backup of a stopped ensemble would. Stop the members first.
func (c *Cluster) BackUp(dst string) error {
	for _, m := range c.Members {
		if m.Running() {
			return fmt.Errorf("testenv: back up member %d: it is running", m.ID)
		}
		if err := os.CopyFS(filepath.Join(dst, fmt.Sprintf("zk%d", m.ID)), os.DirFS(m.DataDir())); err != nil {
			return fmt.Errorf("testenv: back up member %d: %w", m.ID, err)
		}
	}
	return nil
}

// RestoreData replaces every member's data directory by the copy BackUp
// made in src: the ensemble goes back to that older history. Stop the
// members first, and Restart them after.
func (c *Cluster) RestoreData(src string) error {
	for _, m := range c.Members {
		if m.Running() {
			return fmt.Errorf("testenv: restore member %d: it is running", m.ID)
		}
		if err := os.RemoveAll(m.DataDir()); err != nil {
			return fmt.Errorf("testenv: restore member %d: %w", m.ID, err)
		}
		if err := os.CopyFS(m.DataDir(), os.DirFS(filepath.Join(src, fmt.Sprintf("zk%d", m.ID)))); err != nil {
			return fmt.Errorf("testenv: restore member %d: %w", m.ID, err)
		}
	}
	return nil
}

// Wipe empties every member's data directory but for its myid: restarted,
// the ensemble is rebuilt from empty (zxids start again from the first
// epoch). Stop the members first.
func (c *Cluster) Wipe() error {
	for _, m := range c.Members {
		if m.Running() {
			return fmt.Errorf("testenv: wipe member %d: it is running", m.ID)
		}
		if err := os.RemoveAll(filepath.Join(m.DataDir(), "version-2")); err != nil {
			return fmt.Errorf("testenv: wipe member %d: %w", m.ID, err)
		}
	}
	return nil
}

// StopAll stops every member; RestartAll starts them all again (each with
// its data as it is now) and waits until the ensemble serves.
func (c *Cluster) StopAll() {
	for _, m := range c.Members {
		m.Stop()
	}
}

// RestartAll starts every stopped member again and waits until every one
// serves.
func (c *Cluster) RestartAll(ctx context.Context) error {
	for _, m := range c.Members {
		if m.Running() {
			continue
		}
		m.mu.Lock()
		m.cmd = nil
		m.mu.Unlock()
		if err := m.start(); err != nil {
			return err
		}
	}
	return c.WaitServing(ctx)
}

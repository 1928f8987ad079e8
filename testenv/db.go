package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The databases a DB can be. Their servers come from Debian's packages:
// postgresql-15, mariadb-server (10.11) and redis-server (7).
const (
	Postgres = "postgres"
	MariaDB  = "mariadb"
	Redis    = "redis"
)

// Where the servers' binaries are by default; each can be overridden with
// an environment variable (SEQD_PG_BIN, SEQD_MARIADB_BIN, SEQD_REDIS_BIN)
// naming the directory that holds them.
const (
	DefaultPostgresBin = "/usr/lib/postgresql/15/bin"
	DefaultMariaDBBin  = "/usr/sbin"
	DefaultRedisBin    = "/usr/bin"
)

// ErrDBNotInstalled says that a database server's binaries are missing.
var ErrDBNotInstalled = errors.New("testenv: database server not installed (scripts/deps.sh db)")

// DBOptions configures StartDB.
type DBOptions struct {
	// Kind is Postgres, MariaDB or Redis.
	Kind string
	// StartTimeout bounds how long a start or restart waits for the server
	// to serve. Default 60s.
	StartTimeout time.Duration
	// AppendOnly (Redis) turns the append-only file on; without it Redis
	// keeps nothing it was told across a SIGKILL (no snapshots either:
	// save is off).
	AppendOnly bool
	// AppendFsync (Redis, with AppendOnly) is "always", "everysec" or
	// "no". Default "always": the only setting that loses no acknowledged
	// write to a crash of the machine. A SIGKILL of the process alone
	// loses nothing the kernel was given under any of them.
	AppendFsync string
	// Fsync (PostgreSQL, MariaDB) flushes commits to the disk. Off by
	// default: a commit is still written to the kernel before it is
	// acknowledged, so every acknowledged commit survives a SIGKILL of the
	// server, but not a crash of the machine. The restart tests kill
	// processes, not machines.
	Fsync bool
}

// DB is a running database server on a free loopback port, in a temporary
// directory of its own that Stop removes. PostgreSQL and MariaDB refuse to
// run as root: when the caller is root they run as the unprivileged user
// "nobody", which owns the directory.
type DB struct {
	Kind string
	// Host and Port are where the server listens (127.0.0.1, TCP).
	Host string
	Port int
	// User, Password and Database are what a client logs in with: for
	// PostgreSQL the superuser "seqd" and database "postgres"; for MariaDB
	// user "seqd" (all privileges, no password) and database "seqd"; for
	// Redis no user and database "0".
	User, Password, Database string

	dir     string
	bin     string
	timeout time.Duration
	cred    *syscall.Credential
	args    []string // how the server is started
	ready   func(ctx context.Context) error

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *tailBuffer
}

// StartDB starts a database server and waits until it serves. A port
// taken by someone else between choosing it and the server binding it
// makes it try again with another.
func StartDB(ctx context.Context, opts DBOptions) (*DB, error) {
	for attempt := 1; ; attempt++ {
		d, err := startDB(ctx, opts)
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			return d, err
		}
	}
}

func startDB(ctx context.Context, opts DBOptions) (*DB, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	d := &DB{Kind: opts.Kind, Host: "127.0.0.1", timeout: opts.StartTimeout, logs: &tailBuffer{max: 256 << 10}}
	var env, def, probe string
	switch opts.Kind {
	case Postgres:
		env, def, probe = "SEQD_PG_BIN", DefaultPostgresBin, "postgres"
	case MariaDB:
		env, def, probe = "SEQD_MARIADB_BIN", DefaultMariaDBBin, "mariadbd"
	case Redis:
		env, def, probe = "SEQD_REDIS_BIN", DefaultRedisBin, "redis-server"
	default:
		return nil, fmt.Errorf("testenv: unknown database kind %q: want %q, %q or %q", opts.Kind, Postgres, MariaDB, Redis)
	}
	d.bin = os.Getenv(env)
	if d.bin == "" {
		d.bin = def
	}
	if _, err := os.Stat(filepath.Join(d.bin, probe)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDBNotInstalled, err)
	}
	dir, err := os.MkdirTemp("", "seqd-"+opts.Kind+"-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	d.dir = dir
	if opts.Kind != Redis && os.Geteuid() == 0 {
		if d.cred, err = unprivileged(); err != nil {
			d.Stop()
			return nil, err
		}
		if err := os.Chown(dir, int(d.cred.Uid), int(d.cred.Gid)); err != nil {
			d.Stop()
			return nil, fmt.Errorf("testenv: %w", err)
		}
	}
	ports, release, err := holdPorts(1)
	if err != nil {
		d.Stop()
		return nil, err
	}
	d.Port = ports[0]
	release()
	switch opts.Kind {
	case Postgres:
		err = d.setupPostgres(ctx, opts)
	case MariaDB:
		err = d.setupMariaDB(ctx, opts)
	case Redis:
		err = d.setupRedis(opts)
	}
	if err != nil {
		d.Stop()
		return nil, err
	}
	if err := d.startAndWait(ctx); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// unprivileged is the user a server that refuses root runs as.
func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("testenv: a database server refuses to run as root, and there is no user nobody to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("testenv: user nobody: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// run runs a setup command as the server's user and says what it printed
// if it fails.
func (d *DB) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, name), args...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), "HOME="+d.dir, "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: d.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("testenv: %s: %w\n%s", name, err, out)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (d *DB) setupPostgres(ctx context.Context, opts DBOptions) error {
	d.User, d.Database = "seqd", "postgres"
	data := filepath.Join(d.dir, "data")
	if err := d.run(ctx, "initdb", "-D", data, "-U", d.User, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return err
	}
	d.args = []string{filepath.Join(d.bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(d.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + d.dir,
		"-c", "fsync=" + onOff(opts.Fsync),
		// synchronous_commit stays on: a commit is acknowledged only
		// once its WAL is written (to the kernel at least), so that a
		// SIGKILL loses no acknowledged commit.
		"-c", "full_page_writes=" + onOff(opts.Fsync),
		"-c", "shared_buffers=16MB",
		"-c", "max_connections=60",
		"-c", "logging_collector=off",
		"-c", "log_min_messages=warning",
	}
	pidFile := filepath.Join(data, "postmaster.pid")
	d.ready = func(ctx context.Context) error {
		// postmaster.pid: line 1 the pid, line 4 the port, line 8 the
		// status, "ready" once it accepts connections.
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return err
		}
		// A killed server's file stays behind until the new one
		// writes its own: the pid says whose it is.
		lines := strings.Split(string(b), "\n")
		if len(lines) < 8 || strings.TrimSpace(lines[0]) != strconv.Itoa(d.PID()) ||
			strings.TrimSpace(lines[7]) != "ready" || strings.TrimSpace(lines[3]) != strconv.Itoa(d.Port) {
			return errors.New("not ready")
		}
		return dialOnce(d.Addr())
	}
	return nil
}

func (d *DB) setupMariaDB(ctx context.Context, opts DBOptions) error {
	d.User, d.Database = "seqd", "seqd"
	data := filepath.Join(d.dir, "data")
	install := filepath.Join(filepath.Dir(d.bin), "bin", "mariadb-install-db")
	if _, err := os.Stat(install); err != nil {
		install = "/usr/bin/mariadb-install-db"
	}
	u := "nobody"
	if d.cred == nil {
		cur, err := user.Current()
		if err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		u = cur.Username
	}
	// A temporary directory of the server's own: a starting server
	// deletes every "#sql*" file of its tmpdir, so servers started at
	// once (packages' tests run in parallel) that shared /tmp deleted one
	// another's bootstrap tables ("Unknown table mysql.tmp_user_nopasswd").
	tmp := filepath.Join(d.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if d.cred != nil {
		if err := os.Chown(tmp, int(d.cred.Uid), int(d.cred.Gid)); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+data, "--user="+u, "--tmpdir="+tmp,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), "HOME="+d.dir, "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: d.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testenv: mariadb-install-db: %w\n%s", err, out)
	}
	initFile := filepath.Join(d.dir, "init.sql")
	initSQL := "CREATE DATABASE IF NOT EXISTS seqd;\n" +
		"CREATE USER IF NOT EXISTS 'seqd'@'%';\n" +
		"GRANT ALL PRIVILEGES ON *.* TO 'seqd'@'%' WITH GRANT OPTION;\n"
	if err := os.WriteFile(initFile, []byte(initSQL), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	flush := "2"
	if opts.Fsync {
		flush = "1"
	}
	d.args = []string{filepath.Join(d.bin, "mariadbd"), "--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--port=" + strconv.Itoa(d.Port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(d.dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(d.dir, "mysqld.pid"),
		"--init-file=" + initFile,
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M",
		"--innodb-flush-log-at-trx-commit=" + flush,
		"--max-connections=100",
		"--log-error=", // to stderr
	}
	if d.cred == nil && os.Geteuid() == 0 {
		d.args = append(d.args, "--user=root")
	}
	d.ready = func(ctx context.Context) error {
		// The server writes its pid file once it accepts connections
		// (a killed server's stays behind: the pid says whose it is),
		// and greets a client at once with its version.
		b, err := os.ReadFile(filepath.Join(d.dir, "mysqld.pid"))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) != strconv.Itoa(d.PID()) {
			return errors.New("the pid file is a killed server's")
		}
		return mariadbGreets(d.Addr())
	}
	return nil
}

func (d *DB) setupRedis(opts DBOptions) error {
	d.Database = "0"
	fsync := opts.AppendFsync
	if fsync == "" {
		fsync = "always"
	}
	switch fsync {
	case "always", "everysec", "no":
	default:
		return fmt.Errorf("testenv: Redis appendfsync %q: want always, everysec or no", fsync)
	}
	appendOnly := "no"
	if opts.AppendOnly {
		appendOnly = "yes"
	}
	conf := fmt.Sprintf(`port %d
bind 127.0.0.1
protected-mode no
dir %s
save ""
appendonly %s
appendfsync %s
daemonize no
logfile ""
`, d.Port, d.dir, appendOnly, fsync)
	cfg := filepath.Join(d.dir, "redis.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	d.args = []string{filepath.Join(d.bin, "redis-server"), cfg}
	d.ready = func(ctx context.Context) error {
		got, err := redisCommand(d.Addr(), "CONFIG", "GET", "dir")
		if err != nil {
			return err
		}
		if !strings.Contains(got, d.dir) {
			return fmt.Errorf("%w: another Redis answers on %s", errPortTaken, d.Addr())
		}
		// A restarted Redis answers CONFIG (and PING) while it is still
		// loading its AOF, and refuses reads and writes with LOADING until
		// it is done: ready means loaded.
		info, err := redisCommand(d.Addr(), "INFO", "persistence")
		if err != nil {
			return err
		}
		if v, ok := redisInfoField(info, "loading"); !ok || v != "0" {
			return errors.New("still loading its data")
		}
		return nil
	}
	return nil
}

// redisInfoField is the value of field in an INFO answer, read by its whole
// line: Redis 7 also reports async_loading, whose "async_loading:0" holds
// "loading:0" while the server is still loading.
func redisInfoField(info, field string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v, true
		}
	}
	return "", false
}

// Addr is host:port.
func (d *DB) Addr() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// Dir is the server's directory.
func (d *DB) Dir() string { return d.dir }

// URL is a connection URL in each database's usual form:
// postgres://seqd@127.0.0.1:PORT/postgres?sslmode=disable,
// mysql://seqd@127.0.0.1:PORT/seqd, redis://127.0.0.1:PORT/0.
func (d *DB) URL() string {
	switch d.Kind {
	case Postgres:
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", d.User, d.Addr(), d.Database)
	case MariaDB:
		return fmt.Sprintf("mysql://%s@%s/%s", d.User, d.Addr(), d.Database)
	}
	return fmt.Sprintf("redis://%s/%s", d.Addr(), d.Database)
}

// DSN is the data source name of the Go driver a test uses: pgx's URL for
// PostgreSQL, go-sql-driver/mysql's for MariaDB, go-redis's URL for Redis.
func (d *DB) DSN() string {
	if d.Kind == MariaDB {
		return fmt.Sprintf("%s@tcp(%s)/%s", d.User, d.Addr(), d.Database)
	}
	return d.URL()
}

// Env is the database's address as environment variables for a test
// suite in another language, with prefix (e.g. "SEQD_TEST_PG") before
// _HOST, _PORT, _USER, _PASSWORD, _DATABASE and _URL.
func (d *DB) Env(prefix string) []string {
	return []string{
		prefix + "_HOST=" + d.Host,
		prefix + "_PORT=" + strconv.Itoa(d.Port),
		prefix + "_USER=" + d.User,
		prefix + "_PASSWORD=" + d.Password,
		prefix + "_DATABASE=" + d.Database,
		prefix + "_URL=" + d.URL(),
	}
}

func (d *DB) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		return fmt.Errorf("testenv: %s is already running", d.Kind)
	}
	cmd := exec.Command(d.args[0], d.args[1:]...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), "HOME="+d.dir, "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	// Its own process group, so that a kill reaches the server's children
	// too (PostgreSQL's backends), and killed with the process that
	// started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: d.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start %s: %w", d.Kind, err)
	}
	exited := make(chan struct{})
	go func() { // owned by the DB: ends when the process does
		cmd.Wait()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
	return nil
}

func (d *DB) startAndWait(ctx context.Context) error {
	if err := d.start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := d.WaitServing(wctx); err != nil {
		if errors.Is(err, errPortTaken) {
			return err
		}
		return fmt.Errorf("%w\n--- %s log ---\n%s", err, d.Kind, d.Logs())
	}
	return nil
}

// WaitServing waits until the server accepts clients.
func (d *DB) WaitServing(ctx context.Context) error {
	for {
		err := d.ready(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, errPortTaken) {
			return err
		}
		if !d.Running() {
			if strings.Contains(d.logs.String(), "in use") {
				return fmt.Errorf("%w: %s on %s", errPortTaken, d.Kind, d.Addr())
			}
			return fmt.Errorf("testenv: %s exited before serving", d.Kind)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s not serving on %s (%v): %w", d.Kind, d.Addr(), err, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Running says whether the server runs (paused counts).
func (d *DB) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// PID is the server's process id, 0 when it is not running.
func (d *DB) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

func (d *DB) signalAndWait(sig syscall.Signal) {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, sig)
	if sig != syscall.SIGKILL {
		syscall.Kill(-pgid, syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	if sig == syscall.SIGKILL {
		// The server's children (a PostgreSQL backend) die with it:
		// wait until none is left, or a restart finds its shared memory
		// still attached.
		for i := 0; i < 200 && syscall.Kill(-pgid, 0) == nil; i++ {
			syscall.Kill(-pgid, syscall.SIGKILL)
			time.Sleep(10 * time.Millisecond)
		}
	}
	d.mu.Lock()
	d.cmd = nil
	d.mu.Unlock()
}

// Kill stops the server and its children with SIGKILL, as a crash would:
// nothing gets to flush or shut down. Restart starts it again.
func (d *DB) Kill() { d.signalAndWait(syscall.SIGKILL) }

// Shutdown stops the server cleanly (SIGTERM; SIGKILL after 15s), keeping
// its directory for Restart.
func (d *DB) Shutdown() { d.signalAndWait(syscall.SIGTERM) }

// Pause freezes the server and its children with SIGSTOP and returns once
// all their threads have stopped.
func (d *DB) Pause() error { return d.groupSignal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (d *DB) Resume() error { return d.groupSignal(syscall.SIGCONT) }

func (d *DB) groupSignal(sig syscall.Signal) error {
	pid := d.PID()
	if pid == 0 {
		return fmt.Errorf("testenv: %s is not running", d.Kind)
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("testenv: %s: %w", d.Kind, err)
	}
	if sig == syscall.SIGSTOP {
		pids, err := groupPIDs(pid)
		if err == nil {
			err = waitStopped(pids, stopWait)
		}
		if err != nil {
			return fmt.Errorf("testenv: %s: %w", d.Kind, err)
		}
	}
	return nil
}

// Restart starts a stopped or killed server again on the same port with
// the same data (a running one is killed first), and waits until it
// serves. PostgreSQL replays its WAL, MariaDB its redo log, Redis its
// append-only file.
func (d *DB) Restart(ctx context.Context) error {
	if d.Running() {
		d.Kill()
	}
	return d.startAndWait(ctx)
}

// Stop kills the server and removes its directory. It is safe to call
// more than once.
func (d *DB) Stop() {
	d.Kill()
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// Logs returns the server's recent output.
func (d *DB) Logs() string { return d.logs.String() }

func dialOnce(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// mariadbGreets reads the handshake a MySQL-protocol server sends first and
// checks that it is a MariaDB's.
func mariadbGreets(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if n < 6 {
		return fmt.Errorf("no greeting: %v", err)
	}
	if !strings.Contains(string(buf[5:n]), "MariaDB") {
		return fmt.Errorf("%w: a server that is not MariaDB answers on %s", errPortTaken, addr)
	}
	return nil
}

// redisCommand sends one command and returns its answer as text (an error
// reply is an error).
func redisCommand(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	var out strings.Builder
	if err := readRESP(r, &out); err != nil {
		return "", err
	}
	return out.String(), nil
}

func readRESP(r *bufio.Reader, out *strings.Builder) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return errors.New("empty reply")
	}
	switch line[0] {
	case '-':
		return errors.New(line[1:])
	case '+', ':':
		out.WriteString(line[1:])
		out.WriteByte('\n')
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		out.Write(b[:n])
		out.WriteByte('\n')
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := readRESP(r, out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

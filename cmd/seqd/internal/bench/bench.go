// Package bench measures lock cycles (take a lock, let it go) against a
// ZooKeeper, in one run and on equal terms: the raw create+delete of an
// ephemeral-sequential node (the floor every ZooKeeper lock pays),
// go-zookeeper's own zk.Lock, package zklock, and the daemon's HTTP API. Each
// runs with one client and with many, each client on a lock of its own and
// all of them on one hot lock; each case reports cycles per second, the
// latency percentiles of one cycle and its throughput against the floor and
// zk.Lock measured alongside. It is what `seqd bench` runs.
package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/zklock"
)

// The kinds of client a case runs, in report order.
const (
	KindRaw     = "raw"     // create an ephemeral-sequential node, delete it
	KindGoZK    = "gozk"    // go-zookeeper's zk.Lock: Lock, Unlock
	KindZklock  = "zklock"  // zklock: Mutex.Acquire, Grant.Release
	KindSession = "session" // zklock with every client on one session, as in the daemon
	KindHTTP    = "http"    // the daemon: POST acquire, POST release
)

// Kinds are all the kinds, in report order.
var Kinds = []string{KindRaw, KindGoZK, KindZklock, KindSession, KindHTTP}

// The lock layouts of a case.
const (
	LocksOwn = "own" // each client a lock of its own: nobody waits
	LocksHot = "hot" // every client on one lock: each cycle waits its turn
)

// DefaultBase is the znode under which each run makes its own root.
const DefaultBase = "/seqd-bench"

// ParseKinds reads a comma-separated list of kinds ("" is all of them) and
// returns them in report order.
func ParseKinds(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return append([]string(nil), Kinds...), nil
	}
	want := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !isKind(k) {
			return nil, fmt.Errorf("unknown case %q: want %s", k, strings.Join(Kinds, ", "))
		}
		want[k] = true
	}
	var out []string
	for _, k := range Kinds {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

func isKind(k string) bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

// Config is one run.
type Config struct {
	// Servers are ZooKeeper's host:port.
	Servers []string
	// Auth, ACL and TLS are the ZooKeeper identity, the ACL policy of the
	// nodes the run creates and the TLS configuration, for every kind.
	Auth *zklock.DigestAuth
	ACL  zklock.ACLPolicy
	TLS  *tls.Config
	// SessionTimeout of every ZooKeeper session; default 10s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds each connection's wait for its session;
	// default 15s.
	ConnectTimeout time.Duration

	// Kinds to run, in any order; default all.
	Kinds []string
	// Clients is the many-clients count (the one-client cases always
	// run); default 16.
	Clients int
	// Duration is how long each case is measured; default 5s.
	Duration time.Duration
	// Warmup runs before each case's measurement; 0 takes a fifth of
	// Duration, at most 1s; negative: none.
	Warmup time.Duration

	// Daemon is the URL of a running daemon for the http kind; empty
	// starts one against Servers: as a process of its own with
	// DaemonCommand (as a sidecar runs), or with InProcess inside this one.
	Daemon string
	// DaemonCommand is the program and first arguments that run the daemon
	// (the seqd binary and "serve", with its ZooKeeper security flags);
	// the run adds --zk, --listen, the roots and --session-timeout.
	DaemonCommand []string
	// InProcess runs the http kind's daemon inside this process, on
	// loopback: for profiling, not as deployed.
	InProcess bool
	// CPUProfile is a file for the CPU profile of a daemon started here
	// (in process: of this process while the daemon runs).
	CPUProfile string
	// DaemonToken is the bearer token Daemon requires, if any.
	DaemonToken string
	// DaemonTLS is the client TLS configuration for an https Daemon.
	DaemonTLS *tls.Config
	// DaemonRoot is Daemon's --root: the run removes the lock nodes it
	// made there. Default zklock.DefaultRoot.
	DaemonRoot string

	// ZKPIDs are ZooKeeper's server processes, whose CPU per cycle the
	// report gives; none: not reported.
	ZKPIDs []int
	// ZKStats are the servers' client addresses, asked for their request
	// counters (srvr) to give the requests per cycle; none: not reported.
	ZKStats []string
	// ZKWarmup runs the requests of every kind against ZooKeeper for this
	// long before the first case, for a ZooKeeper just started: its JVM
	// compiles its hot code during the first seconds of load, which would
	// slow the first cases down and take CPU from the others.
	ZKWarmup time.Duration
	// RTT is the round-trip time a delay proxy adds between every client
	// and ZooKeeper, for the report (the caller sets the proxy up), and
	// RTTMeasured what it was seen to add.
	RTT, RTTMeasured time.Duration

	// Base is the znode under which the run makes its root,
	// Base/<time>-<random>; default DefaultBase. The run removes its root
	// at the end, and Base too if nothing else is left in it.
	Base string

	// Progress gets a line per case; nil: none. With Live, the line is
	// rewritten in place while the case runs (for a terminal).
	Progress io.Writer
	Live     bool
}

func (c Config) withDefaults() Config {
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = zklock.DefaultSessionTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 15 * time.Second
	}
	if len(c.Kinds) == 0 {
		c.Kinds = Kinds
	}
	if c.Clients == 0 {
		c.Clients = 16
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = min(time.Second, c.Duration/5)
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.DaemonRoot == "" {
		c.DaemonRoot = zklock.DefaultRoot
	}
	if c.Base == "" {
		c.Base = DefaultBase
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

func (c Config) validate() error {
	for _, k := range c.Kinds {
		if !isKind(k) {
			return fmt.Errorf("bench: unknown case %q", k)
		}
	}
	switch {
	case c.Clients < 1:
		return fmt.Errorf("bench: %d clients: want 1 or more", c.Clients)
	case c.Duration < 0:
		return fmt.Errorf("bench: negative duration %v", c.Duration)
	case len(c.Servers) == 0 && c.needsZK():
		return errors.New("bench: no ZooKeeper servers")
	case c.has(KindHTTP) && c.Daemon == "" && !c.InProcess && len(c.DaemonCommand) == 0:
		return errors.New("bench: no daemon command for the http cases (or a running daemon, or in process)")
	case !strings.HasPrefix(c.Base, "/") || strings.HasSuffix(c.Base, "/"):
		return fmt.Errorf("bench: base %q is not a znode path", c.Base)
	}
	return nil
}

func (c Config) has(kind string) bool {
	for _, k := range c.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// needsZK: every kind but the http one against a running daemon talks to
// ZooKeeper itself.
func (c Config) needsZK() bool {
	for _, k := range c.Kinds {
		if k != KindHTTP || c.Daemon == "" {
			return true
		}
	}
	return false
}

// Group is a clients/locks combination: each kind runs once per group.
type Group struct {
	Clients int
	Locks   string
}

// Groups are the combinations a run measures with n clients: one client,
// then n on their own locks and n on one hot lock (with one client, own
// and hot are the same thing, measured once).
func Groups(n int) []Group {
	gs := []Group{{1, LocksOwn}}
	if n > 1 {
		gs = append(gs, Group{n, LocksOwn}, Group{n, LocksHot})
	}
	return gs
}

// runner is one run in progress.
type runner struct {
	cfg    Config
	root   string // this run's znode: Base/<id>
	id     string
	acl    []zk.ACL
	admin  *zk.Conn       // creates parents and cleans up
	daemon *client.Client // the http kind's
	// daemonPID is the http kind's daemon process when it runs apart.
	daemonPID int
	// daemonNames is the prefix of the http kind's lock names: a subtree
	// of the run's own on a running daemon, whose root is shared.
	daemonNames string
}

// Run measures every case of cfg and returns the report. On an error or
// when ctx ends, it returns the cases measured so far with the error (ctx's
// for an interruption), after removing the nodes it made.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	r := newRunner(cfg, runID(started))
	rep := &Report{
		Started:     started,
		Servers:     cfg.Servers,
		Daemon:      DaemonProcess,
		Root:        r.root,
		RTT:         cfg.RTT,
		RTTMeasured: cfg.RTTMeasured,
		Duration:    cfg.Duration,
		Warmup:      cfg.Warmup,
		Clients:     cfg.Clients,
		Kinds:       cfg.Kinds,
	}
	switch {
	case cfg.Daemon != "":
		rep.Daemon = cfg.Daemon
	case cfg.InProcess:
		rep.Daemon = DaemonInProcess
	}
	defer r.cleanup()
	if cfg.needsZK() {
		var err error
		if r.admin, err = r.connect(ctx); err != nil {
			return rep, err
		}
	}
	if cfg.ZKWarmup > 0 && r.admin != nil {
		if err := r.warmZK(ctx); err != nil {
			return rep, err
		}
	}
	if cfg.has(KindHTTP) {
		stop, err := r.startHTTP(ctx)
		if err != nil {
			return rep, err
		}
		defer stop()
	}
	for _, g := range Groups(cfg.Clients) {
		for _, k := range Kinds {
			if !cfg.has(k) {
				continue
			}
			res, err := r.runCase(ctx, k, g)
			if res != nil {
				rep.Results = append(rep.Results, *res)
				rep.ratios()
			}
			if err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// startHTTP readies the http kind: a client of the running daemon, or a
// daemon started here.
func (r *runner) startHTTP(ctx context.Context) (stop func(), err error) {
	tr := &http.Transport{
		// One kept-alive connection per client: the default two idle
		// connections per host would measure TCP handshakes, not seqd.
		MaxIdleConnsPerHost: 2 * r.cfg.Clients,
		TLSClientConfig:     r.cfg.DaemonTLS,
	}
	hc := &http.Client{Transport: tr}
	if r.cfg.Daemon != "" {
		if r.daemon, err = client.New(r.cfg.Daemon, client.WithoutEnv(), client.WithAPIToken(r.cfg.DaemonToken), client.WithHTTPClient(hc)); err != nil {
			return nil, err
		}
		r.daemonNames = strings.TrimPrefix(r.root, "/") + "/"
		return tr.CloseIdleConnections, nil
	}
	start := r.startProcess
	if r.cfg.InProcess {
		start = r.startInProcess
	}
	d, err := start(ctx)
	if err != nil {
		return nil, err
	}
	r.daemonPID = d.pid
	if r.daemon, err = client.New(d.addr, client.WithoutEnv(), client.WithHTTPClient(hc)); err != nil {
		_ = d.stop()
		return nil, err
	}
	return func() {
		tr.CloseIdleConnections()
		if err := d.stop(); err != nil {
			fmt.Fprintln(r.cfg.Progress, err)
		}
	}, nil
}

// cleanup removes the run's nodes: its root and, on a running daemon, the
// lock nodes its http cases made under the daemon's root. It is best effort:
// what it cannot remove is reported on Progress.
func (r *runner) cleanup() {
	conn := r.admin
	if conn == nil {
		if r.cfg.Daemon == "" || r.daemon == nil || len(r.cfg.Servers) == 0 {
			return
		}
		cfg := r.cfg
		cfg.ConnectTimeout = 5 * time.Second
		var err error
		if conn, err = (&runner{cfg: cfg}).connect(context.Background()); err != nil {
			fmt.Fprintf(r.cfg.Progress, "could not remove the bench's lock nodes under %s: %v\n", r.cfg.DaemonRoot, err)
			return
		}
	}
	defer conn.Close()
	if r.admin != nil {
		if err := removeTree(conn, r.root); err != nil {
			fmt.Fprintf(r.cfg.Progress, "could not remove %s: %v\n", r.root, err)
		}
		removeIfEmpty(conn, r.cfg.Base)
	}
	if r.cfg.Daemon != "" && r.daemon != nil {
		// The daemon's lock nodes: DaemonRoot/<run root without its slash>.
		top := strings.TrimSuffix(r.cfg.DaemonRoot, "/") + "/" + strings.TrimSuffix(r.daemonNames, "/")
		if err := removeTree(conn, top); err != nil {
			fmt.Fprintf(r.cfg.Progress, "could not remove the bench's lock nodes %s: %v\n", top, err)
		}
		removeIfEmpty(conn, strings.TrimSuffix(r.cfg.DaemonRoot, "/")+r.cfg.Base)
	}
}

// describe names a case for people: "zklock, 16 clients, own locks".
func describe(kind string, g Group) string {
	clients := fmt.Sprintf("%d clients", g.Clients)
	if g.Clients == 1 {
		clients = "1 client"
	}
	locks := "own locks"
	switch {
	case g.Locks == LocksHot:
		locks = "one hot lock"
	case g.Clients == 1:
		locks = "own lock"
	}
	return kind + ", " + clients + ", " + locks
}

// runCase sets up one case's clients, runs them for the warm-up and the
// measurement, and tears them down. It returns nil and ctx's error when
// interrupted, and a cycle's error when one fails.
func (r *runner) runCase(ctx context.Context, kind string, g Group) (*Result, error) {
	what := describe(kind, g)
	r.progress(what + ": connecting")
	cs, closeAll, err := r.setup(ctx, kind, g)
	if err != nil {
		r.progressDone(what + ": " + err.Error())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer closeAll()

	caseCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The phases of a case: the warm-up lasts Warmup and until every
	// client has finished a cycle (the first makes the lock's nodes);
	// the measurement lasts Duration and until a cycle has been measured,
	// so that a slow ZooKeeper still yields a latency.
	const (
		warming = iota
		measuring
		stopping
	)
	var (
		phase   atomic.Int32
		warmed  atomic.Int64 // clients with a finished cycle
		count   atomic.Int64 // measured cycles
		errOnce sync.Once
		failed  error
		wg      sync.WaitGroup
		lat     = make([][]time.Duration, len(cs))
		from    time.Time // start of the measurement, set before phase is
		before  usage     // read at from
	)
	for w, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := true; caseCtx.Err() == nil; first = false {
				p := phase.Load()
				if p == stopping {
					return
				}
				t0 := time.Now()
				if err := c.cycle(caseCtx); err != nil {
					if caseCtx.Err() == nil {
						errOnce.Do(func() { failed = fmt.Errorf("%s: client %d: %w", what, w, err) })
						cancel()
					}
					return
				}
				if p == measuring {
					lat[w] = append(lat[w], time.Since(t0))
					count.Add(1)
				}
				if first {
					warmed.Add(1)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// A client that cannot finish its cycle once the case is over (a
	// zk.Lock waiting for a predecessor that failed; go-zookeeper calls
	// take no context) is cut loose by closing the connections.
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var (
		grace   <-chan time.Time
		printed time.Time
	)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-caseCtx.Done():
			if grace == nil {
				grace = time.After(2 * time.Second)
			}
		case <-grace:
			closeAll()
			grace = nil
		case now := <-tick.C:
			switch phase.Load() {
			case warming:
				if now.Sub(start) >= r.cfg.Warmup && warmed.Load() == int64(len(cs)) {
					before = r.read()
					from = time.Now()
					phase.Store(measuring)
				}
			case measuring:
				if now.Sub(from) >= r.cfg.Duration && count.Load() > 0 {
					phase.Store(stopping)
				}
			}
			if now.Sub(printed) >= 250*time.Millisecond {
				printed = now
				if phase.Load() == warming {
					r.progress(what + ": warming up")
				} else {
					r.progress(fmt.Sprintf("%s: %.1fs %d cycles", what, now.Sub(from).Seconds(), count.Load()))
				}
			}
		}
	}
	stopped := time.Now()
	after := r.read()
	if failed != nil {
		r.progressDone(what + ": failed")
		return nil, failed
	}
	if ctx.Err() != nil {
		r.progressDone(what + ": interrupted")
		return nil, ctx.Err()
	}
	res := newResult(kind, g, lat, stopped.Sub(from))
	res.Cost = perCycle(before, after, res.Cycles, kind == KindHTTP)
	r.progressDone(fmt.Sprintf("%s: %.1fs %d cycles, %.0f/s", what, res.Elapsed.Seconds(), res.Cycles, res.PerSecond))
	return res, nil
}

// progress shows a case's state: in place on a terminal, not at all
// otherwise (progressDone prints the final line).
func (r *runner) progress(line string) {
	if r.cfg.Live {
		fmt.Fprintf(r.cfg.Progress, "\r\x1b[K%s", line)
	}
}

func (r *runner) progressDone(line string) {
	if r.cfg.Live {
		fmt.Fprintf(r.cfg.Progress, "\r\x1b[K%s\n", line)
		return
	}
	fmt.Fprintln(r.cfg.Progress, line)
}

// runID names a run started at started: its time and a random suffix, so
// that runs side by side never share a root.
func runID(started time.Time) string {
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	return started.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(rnd[:])
}

// newRunner is a run of cfg under Base/id.
func newRunner(cfg Config, id string) *runner {
	return &runner{cfg: cfg, id: id, root: cfg.Base + "/" + id, acl: aclFor(cfg.ACL, cfg.Auth)}
}

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

var (
	durationFlag = flag.Duration("chaos.duration", 60*time.Second, "length of the real-process run with fencing")
	controlFlag  = flag.Duration("chaos.control", 12*time.Second, "length of each real-process negative control")
	clientsFlag  = flag.Int("chaos.clients", 4, "client processes")
	outFlag      = flag.String("chaos.out", "", "directory for the histories and visualizations of failed runs (default: a new one under $TMPDIR)")
)

const (
	chaosTTL            = 2 * time.Second
	chaosSessionTimeout = 2 * time.Second
)

// Fault kinds of the real-process runs.
const (
	faultClientPause   = "client-pause"
	faultDaemonPause   = "daemon-pause"
	faultDaemonKill    = "daemon-kill"
	faultZKLeaderKill  = "zk-leader-kill"
	faultZKFollowKill  = "zk-follower-kill"
	faultZKMemberPause = "zk-member-pause"
	faultStoreKill     = "store-kill"
)

var allFaults = []string{faultClientPause, faultDaemonPause, faultDaemonKill, faultZKLeaderKill, faultZKFollowKill, faultZKMemberPause, faultStoreKill}

// env is the shared part of the real-process runs: a 3-node ZooKeeper
// ensemble and two seqd daemons on it.
type env struct {
	t       *testing.T
	dir     string
	bin     string
	zk      *testenv.Cluster
	zkLinks [][]*testenv.Proxy // [daemon][member], with startPartitionEnv
	daemons []*proc
	urls    []string
	names   []string
	procs   []*proc // everything started, for cleanup
	mu      sync.Mutex
}

func startEnv(t *testing.T) *env { return startEnvWith(t, false) }

// startEnvWith starts the env; with proxied, every member-to-member link
// and every daemon-to-member connection goes through a testenv.Proxy.
func startEnvWith(t *testing.T, proxied bool) *env {
	return startEnvOpts(t, testenv.Options{Servers: 3, PeerProxies: proxied}, nil)
}

// startEnvArgs is startEnvWith with more flags for each daemon (by its
// name, "a" or "b"), after the common ones.
func startEnvArgs(t *testing.T, proxied bool, extra func(daemon string) []string) *env {
	return startEnvOpts(t, testenv.Options{Servers: 3, PeerProxies: proxied}, extra)
}

// startEnvOpts is startEnvArgs with the ensemble's options.
func startEnvOpts(t *testing.T, zkOpts testenv.Options, extra func(daemon string) []string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), bin: seqdBinary(t)}
	t.Cleanup(e.cleanup)
	proxied := zkOpts.PeerProxies
	e.zk = zktest.StartT(t, zkOpts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for d, name := range []string{"a", "b"} {
		zk := e.zk.ConnectString()
		if proxied {
			var addrs []string
			e.zkLinks = append(e.zkLinks, nil)
			for _, m := range e.zk.Members {
				px := testenv.NewProxy(fmt.Sprintf("seqd-%s->zk%d", name, m.ID))
				t.Cleanup(px.Close)
				addr, err := px.Forward(m.ClientAddr)
				if err != nil {
					t.Fatal(err)
				}
				e.zkLinks[d] = append(e.zkLinks[d], px)
				addrs = append(addrs, addr)
			}
			zk = strings.Join(addrs, ",")
		}
		// seqd serve flags (kept on one line so that a rename is easy to apply).
		p := &proc{name: "seqd-" + name, log: filepath.Join(e.dir, "daemon-"+name+".log"), args: []string{e.bin, "serve",
			"--zk", zk, "--listen", "127.0.0.1:0", "--root", "/chaos",
			"--session-timeout", chaosSessionTimeout.String(), "--log-level", "debug"}} // debug: the checker reads the grant lines
		if extra != nil {
			p.args = append(p.args, extra(name)...)
		}
		e.track(p)
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		addr, err := p.waitLog(ctx, daemonListening)
		if err != nil {
			t.Fatal(err)
		}
		p.args[5] = addr // restarts listen where the clients look
		e.daemons = append(e.daemons, p)
		e.urls = append(e.urls, "http://"+addr)
		e.names = append(e.names, name)
	}
	return e
}

func (e *env) track(p *proc) {
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
}

func (e *env) cleanup() {
	e.mu.Lock()
	ps := append([]*proc(nil), e.procs...)
	e.mu.Unlock()
	for _, p := range ps {
		p.resume()
		p.kill()
	}
	if e.t.Failed() {
		for _, p := range e.daemons {
			if b, err := os.ReadFile(p.log); err == nil {
				e.t.Logf("%s log (tail):\n%s", p.name, tail(b, 4000))
			}
		}
	}
}

// diverged names the ensemble's members whose copy of the tree differs
// from the leader's, by ZooKeeper's own digest check (mntr's
// zk_digest_mismatches_count), for a failure's message; "" when none does.
// ZooKeeper 3.8.0 can leave a follower without transactions the others
// applied when its link to the leader breaks mid-sync (ZOOKEEPER-4541): a
// session that looks for its lost contender through that member never finds
// it to delete it, and the lock stays held by it.
func (e *env) diverged() string {
	var out []string
	for _, m := range e.zk.Members {
		ans, err := testenv.FourLetter(m.ClientAddr, "mntr", 2*time.Second)
		if err != nil {
			continue
		}
		if n, ok := digestMismatches(ans); ok && n != "0" {
			out = append(out, fmt.Sprintf("zk%d (%s mismatches)", m.ID, n))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; ZooKeeper's replicas diverged by its own digest check: " + strings.Join(out, ", ") +
		" (a ZooKeeper fault, ZOOKEEPER-4541 in 3.8.0: that member lacks transactions the others applied)"
}

// digestMismatches is zk_digest_mismatches_count in an mntr answer.
func digestMismatches(mntr string) (string, bool) {
	for _, line := range strings.Split(mntr, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "zk_digest_mismatches_count" {
			return f[1], true
		}
	}
	return "", false
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// storeProc is a `seqd store`, restartable on the same address and data.
type storeProc struct {
	*proc
	addr string
}

func (e *env) startStore(name, fence string) *storeProc {
	e.t.Helper()
	dir := filepath.Join(e.dir, "store-"+name)
	p := &proc{name: "store-" + name, log: filepath.Join(e.dir, "store-"+name+".log"),
		args: []string{e.bin, "store", "--dir", dir, "--listen", "127.0.0.1:0", "--fence", fence}}
	e.track(p)
	if err := p.start(); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := p.waitLog(ctx, storeListening)
	if err != nil {
		e.t.Fatal(err)
	}
	p.args[5] = addr // restarts listen where the clients look
	return &storeProc{proc: p, addr: addr}
}

// restart starts a killed store again and waits until it serves.
func (s *storeProc) restart(ctx context.Context) error {
	if err := s.start(); err != nil {
		return err
	}
	for {
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store did not come back: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// restartDaemon starts a killed daemon again on the address it had (the
// clients hold its URL) and waits until it listens. The port can be briefly
// unavailable (taken as the ephemeral port of an outgoing connection, say),
// and the daemon exits if it cannot reach ZooKeeper: a start that ends
// without listening is retried until ctx ends.
func restartDaemon(ctx context.Context, p *proc) error {
	for {
		from := p.logSize()
		if err := p.start(); err != nil {
			return err
		}
		_, err := p.waitLogFrom(ctx, daemonListening, from)
		if err == nil {
			return nil
		}
		p.kill() // reaps an exited process, stops one still starting
		if ctx.Err() != nil {
			return err
		}
		hold(ctx, 200*time.Millisecond)
	}
}

// run is one workload run: clients on one lock and one key.
type run struct {
	name    string
	e       *env
	lock    string
	locks   []LockKeys // several locks and keys; empty: lock and the key "set"
	renew   bool
	urls    []string
	names   []string
	store   *storeProc
	pg      *testenv.DB // the PostgreSQL of sql
	sql     *SQLStore   // set: the sets are in PostgreSQL, store is nil
	hist    string
	clients []*proc
	start   time.Time // of the clients, set by execute
	until   time.Time
	think   time.Duration
	wait    time.Duration
}

func (e *env) newRun(name string, store *storeProc) *run {
	hist := filepath.Join(e.dir, "history-"+name)
	if err := os.MkdirAll(hist, 0o755); err != nil {
		e.t.Fatal(err)
	}
	return &run{name: name, e: e, lock: "chaos/" + name, urls: e.urls, names: e.names, store: store, hist: hist,
		think: chaosTTL / 2, wait: chaosTTL}
}

func (r *run) config(id int, seed uint64, until time.Time) ClientConfig {
	cfg := ClientConfig{ID: id, Daemons: r.urls, DaemonNames: r.names, SQL: r.sql,
		Lock: r.lock, Key: "set", Locks: r.locks, Renew: r.renew, TTL: chaosTTL, Wait: r.wait, Think: r.think, Seed: seed,
		History: filepath.Join(r.hist, fmt.Sprintf("client-%d.jsonl", id)), Until: until.UnixNano()}
	if r.store != nil {
		cfg.Store = "http://" + r.store.addr
	}
	return cfg
}

func (r *run) startClients(n int, seed uint64, until time.Time) {
	for i := 0; i < n; i++ {
		cfg, _ := json.Marshal(r.config(i, seed, until))
		p := &proc{name: fmt.Sprintf("client-%d", i), log: filepath.Join(r.hist, fmt.Sprintf("client-%d.log", i)),
			args: []string{os.Args[0], "-test.run=^$"}, env: []string{clientEnv + "=" + string(cfg)}}
		r.e.track(p)
		if err := p.start(); err != nil {
			r.e.t.Fatal(err)
		}
		r.clients = append(r.clients, p)
	}
}

// finish waits for the clients, does the final read and checks.
func (r *run) finish(t *testing.T, until time.Time, seed uint64) Report {
	t.Helper()
	for _, c := range r.clients {
		if !c.wait(time.Until(until) + 30*time.Second) {
			t.Errorf("%s: %s did not stop within 30s of the end; killed", r.name, c.name)
		} else if code := c.exitCode(); code != 0 {
			b, _ := os.ReadFile(c.log)
			t.Errorf("%s: %s exited %d: %s", r.name, c.name, code, tail(b, 2000))
		}
	}
	fcfg := r.config(100, seed, time.Now())
	fcfg.Final = true
	fcfg.Daemons, fcfg.DaemonNames = r.e.urls[:1], r.e.names[:1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := RunClient(ctx, fcfg); err != nil {
		t.Errorf("%s: final read: %v%s", r.name, err, r.e.diverged())
	}
	ops, err := ReadHistoryFiles(filepath.Join(r.hist, "*.jsonl"))
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	locks := []string{r.lock}
	if len(r.locks) > 0 {
		locks = nil
		for _, lk := range r.locks {
			locks = append(locks, lk.Lock)
		}
	}
	logged := map[string]map[string][]uint64{}
	for _, lock := range locks {
		logged[lock] = map[string][]uint64{}
		// The Service's line, not zklock's "granted" of the same grant
		// (both at debug).
		re := regexp.MustCompile(`msg=granted component=sequencer .*?lock=` + regexp.QuoteMeta(lock) + ` token=(\d+)`)
		for i, d := range r.e.daemons {
			b, err := os.ReadFile(d.log)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				var n uint64
				fmt.Sscan(string(m[1]), &n)
				logged[lock][r.e.names[i]] = append(logged[lock][r.e.names[i]], n)
			}
		}
	}
	return Check(ops, logged)
}

// save writes a failed run's history and visualization where a person can
// find them.
func (r *run) save(t *testing.T, rep Report) {
	t.Helper()
	out := *outFlag
	if out == "" {
		var err error
		if out, err = os.MkdirTemp("", "seqd-chaos-"); err != nil {
			t.Errorf("save: %v", err)
			return
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Errorf("save: %v", err)
		return
	}
	ops, _ := ReadHistoryFiles(filepath.Join(r.hist, "*.jsonl"))
	var b bytes.Buffer
	WriteHistory(&b, ops)
	hp := filepath.Join(out, r.name+"-history.jsonl")
	vp := filepath.Join(out, r.name+"-linearizability.html")
	os.WriteFile(hp, b.Bytes(), 0o644)
	if err := rep.Linearizable.Visualize(vp); err != nil {
		t.Logf("visualize: %v", err)
	}
	t.Logf("%s: history written to %s, porcupine's visualization to %s", r.name, hp, vp)
}

// injector applies faults.
type injector struct {
	e      *env
	r      *run
	mu     sync.Mutex
	rand   *rand.Rand
	counts map[string]int
	zkMu   sync.Mutex // one ZooKeeper member down at a time
	seqdMu sync.Mutex // one daemon killed at a time
	netMu  sync.Mutex // one network fault at a time
	pgMu   sync.Mutex // one kill of PostgreSQL at a time
	log    func(format string, args ...any)
	errorf func(format string, args ...any) // a fault that could not be healed
}

func (in *injector) intn(n int) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rand.IntN(n)
}

// between draws a duration in [lo, hi).
func (in *injector) between(lo, hi time.Duration) time.Duration {
	in.mu.Lock()
	defer in.mu.Unlock()
	return lo + time.Duration(in.rand.Int64N(int64(hi-lo)))
}

func (in *injector) count(kind string) {
	in.mu.Lock()
	in.counts[kind]++
	in.mu.Unlock()
}

// hold waits d or until ctx ends.
func hold(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// inject applies one fault of kind and heals it before returning; ctx ending
// cuts the fault short, never the healing.
func (in *injector) inject(ctx context.Context, kind string) {
	heal, hcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer hcancel()
	switch kind {
	case faultClientPause:
		c := in.r.clients[in.intn(len(in.r.clients))]
		d := in.between(chaosTTL/2, 3*chaosTTL)
		c.pause()
		in.count(kind)
		hold(ctx, d)
		c.resume()
	case faultDaemonPause:
		d := in.e.daemons[in.intn(len(in.e.daemons))]
		dur := in.between(chaosSessionTimeout/2, 2*chaosSessionTimeout)
		d.pause()
		in.count(kind)
		hold(ctx, dur)
		d.resume()
	case faultDaemonKill:
		in.seqdMu.Lock()
		defer in.seqdMu.Unlock()
		i := in.intn(len(in.e.daemons))
		d := in.e.daemons[i]
		d.kill()
		in.count(kind)
		// Its ZooKeeper session, and the contenders and leases on it,
		// live on until the session times out.
		hold(ctx, in.between(200*time.Millisecond, 2*time.Second))
		if err := restartDaemon(heal, d); err != nil {
			in.errorf("restart seqd-%s on %s: %v", in.e.names[i], in.e.urls[i], err)
		}
	case faultZKLeaderKill, faultZKFollowKill, faultZKMemberPause:
		in.zkMu.Lock()
		defer in.zkMu.Unlock()
		var m *testenv.Member
		switch kind {
		case faultZKLeaderKill:
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			m, _ = in.e.zk.Leader(lctx)
			cancel()
		case faultZKFollowKill:
			if f := in.e.zk.Followers(); len(f) > 0 {
				m = f[in.intn(len(f))]
			}
		default:
			m = in.e.zk.Members[in.intn(len(in.e.zk.Members))]
		}
		if m == nil {
			return
		}
		in.count(kind)
		if kind == faultZKMemberPause {
			m.Pause()
			hold(ctx, in.between(time.Second, 4*time.Second))
			m.Resume()
			return
		}
		m.Kill()
		hold(ctx, in.between(500*time.Millisecond, 3*time.Second))
		if err := m.Restart(heal); err != nil {
			in.log("restart zk%d: %v", m.ID, err)
		}
	case faultPGKill:
		in.killPG(ctx)
	case faultZKClock:
		in.jumpClock(ctx)
	case faultStoreKill:
		in.r.store.kill()
		in.count(kind)
		hold(ctx, in.between(200*time.Millisecond, 1500*time.Millisecond))
		if err := in.r.store.restart(heal); err != nil {
			in.log("restart store: %v", err)
		}
	default:
		in.injectNet(ctx, kind)
	}
}

type phase struct {
	name     string
	kinds    []string
	d        time.Duration
	parallel int
}

// schedule: each fault alone, then all of them mixed, two at a time.
func schedule(total time.Duration, kinds []string) []phase {
	share := total / time.Duration(len(kinds)+2)
	var ps []phase
	for _, k := range kinds {
		ps = append(ps, phase{name: k, kinds: []string{k}, d: share, parallel: 1})
	}
	return append(ps, phase{name: "mixed", kinds: kinds, d: total - share*time.Duration(len(kinds)), parallel: 2})
}

func (in *injector) runPhases(ctx context.Context, phases []phase, current *phaseName) {
	for _, p := range phases {
		current.set(p.name)
		pctx, cancel := context.WithTimeout(ctx, p.d)
		var wg sync.WaitGroup
		for i := 0; i < p.parallel; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for pctx.Err() == nil {
					hold(pctx, in.between(200*time.Millisecond, time.Second))
					if pctx.Err() != nil {
						return
					}
					in.inject(pctx, p.kinds[in.intn(len(p.kinds))])
				}
			}()
		}
		wg.Wait()
		cancel()
	}
	current.set("done")
}

type phaseName struct {
	mu sync.Mutex
	s  string
}

func (p *phaseName) set(s string) { p.mu.Lock(); p.s = s; p.mu.Unlock() }
func (p *phaseName) get() string  { p.mu.Lock(); defer p.mu.Unlock(); return p.s }

// execute runs r for d under the phases and returns the report.
func (r *run) execute(t *testing.T, seed uint64, d time.Duration, phases []phase) (Report, map[string]int) {
	t.Helper()
	start := time.Now()
	until := start.Add(d)
	r.start, r.until = start, until
	r.startClients(*clientsFlag, seed, until)
	in := &injector{e: r.e, r: r, rand: rand.New(rand.NewPCG(seed, 0xfa17)), counts: map[string]int{}, log: t.Logf, errorf: t.Errorf}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	var cur phaseName
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.runPhases(ctx, phases, &cur)
	}()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
progress:
	for {
		select {
		case <-done:
			break progress
		case <-tick.C:
			ops, _ := ReadHistoryFiles(filepath.Join(r.hist, "*.jsonl"))
			var ok, stale, info int
			for _, op := range ops {
				switch op.Result {
				case ResultOK:
					ok++
				case ResultStale:
					stale++
				case ResultInfo:
					info++
				}
			}
			in.mu.Lock()
			nf := 0
			for _, n := range in.counts {
				nf += n
			}
			in.mu.Unlock()
			t.Logf("[%s] %3.0fs/%.0fs phase %-16s ops %5d (ok %d, stale %d, unknown %d), faults %d",
				r.name, time.Since(start).Seconds(), d.Seconds(), cur.get(), len(ops), ok, stale, info, nf)
		}
	}
	rep := r.finish(t, until, seed)
	return rep, in.counts
}

// executeStall is execute, plus the longest stretch of the run in which no
// client completed an operation.
func (r *run) executeStall(t *testing.T, seed uint64, d time.Duration, phases []phase) (Report, map[string]int, time.Duration) {
	t.Helper()
	rep, counts := r.execute(t, seed, d, phases)
	ops, err := ReadHistoryFiles(filepath.Join(r.hist, "client-*.jsonl"))
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	stall, _ := LongestStall(ops, r.start.UnixNano(), r.until.UnixNano())
	return rep, counts, stall
}

func faultTable(counts map[string]int) string {
	var b strings.Builder
	keys := make([]string, 0, len(counts))
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "%-18s %6s\n", "fault", "count")
	for _, k := range keys {
		fmt.Fprintf(&b, "%-18s %6d\n", k, counts[k])
	}
	fmt.Fprintf(&b, "%-18s %6d\n", "total", total)
	return b.String()
}

// TestChaos is the real-process suite: the lock-set workload with fencing
// under the seeded fault schedule (no violation allowed), then the negative
// controls (each must make a checker fail).
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process chaos: not in -short")
	}
	seed := chaosSeed(t)
	e := startEnv(t)

	t.Run("fenced", func(t *testing.T) {
		store := e.startStore("fenced", FenceFull)
		r := e.newRun("fenced", store)
		r.think = chaosTTL // some leases run out between read and write
		start := time.Now()
		rep, faults := r.execute(t, seed, *durationFlag, schedule(*durationFlag, allFaults))
		t.Logf("fenced run, seed %d, %v:\n%s%s", seed, time.Since(start).Round(time.Second), rep.Table(), faultTable(faults))
		if rep.Counts[KindWrite][ResultOK] == 0 || rep.Counts[KindAcquire][ResultOK] == 0 {
			t.Errorf("the workload made no progress: %v", rep.Counts)
		}
		if v := rep.Violations(); len(v) > 0 {
			for _, x := range v {
				t.Errorf("violation: %v", x)
			}
			r.save(t, rep)
		}
	})

	for _, tc := range []struct {
		name, fence string
		cached      bool
		want        []string // at least one of these checkers must fail
	}{
		{"control-fence-off", FenceOff, false, []string{"adds", "linearizable"}},
		{"control-fence-writes", FenceWrites, false, []string{"adds", "linearizable"}},
		{"control-cached-token", FenceFull, true, []string{"tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The race a control is for needs an unlucky interleaving
			// (a pause between a read and a write, another holder in
			// between). A short run may not meet one, so a control gets a
			// few attempts, each on a fresh store and seed; it fails only if
			// none of them trips a checker.
			const attempts = 4
			for attempt := 0; attempt < attempts; attempt++ {
				name := fmt.Sprintf("%s-%d", tc.name, attempt)
				store := e.startStore(name, tc.fence)
				r := e.newRun(name, store)
				// Slow clients: the think time spans the TTL, so leases run
				// out between read and write, as under a pause.
				r.think, r.wait = 3*chaosTTL/2, chaosTTL/4
				if tc.cached {
					p := newCachingProxy(e.urls[0])
					t.Cleanup(p.Close)
					r.urls, r.names = []string{p.URL}, []string{"caching-proxy"}
				}
				s := seed + uint64(attempt)
				rep, faults := r.execute(t, s, *controlFlag, []phase{{name: faultClientPause, kinds: []string{faultClientPause}, d: *controlFlag, parallel: 1}})
				t.Logf("%s, seed %d:\n%s%s", name, s, rep.Table(), faultTable(faults))
				bc := rep.ByChecker()
				caught := false
				for _, c := range tc.want {
					caught = caught || bc[c] > 0
				}
				if caught {
					for i, v := range rep.Violations() {
						if i == 3 {
							break
						}
						t.Logf("%s caught (as it must) on attempt %d: %v", tc.name, attempt+1, v)
					}
					return
				}
				t.Logf("%s: attempt %d found no violation (%v): the race did not happen in %v", tc.name, attempt+1, bc, *controlFlag)
				if attempt == attempts-1 {
					t.Errorf("%s: none of the checkers %v found a violation in %d attempts", tc.name, tc.want, attempts)
					r.save(t, rep)
				}
			}
		})
	}
}

// cachingProxy stands for a broken daemon: it forwards to a real one, keeps
// the last token it granted on each lock and, when it cannot get a fresh
// grant (the lock is held elsewhere, the session is gone), hands out that
// cached token as a new lease instead of failing. It answers in the shape a
// client checks (the lock's name, the lease id the client sent, JSON), so
// that only the resource can tell the lease is stale.
type cachingProxy struct {
	*httptest.Server
	mu     sync.Mutex
	cached map[string]api.Lease // by the acquire's path
	fake   map[string]api.Lease // the leases it made up, by lease id
}

func newCachingProxy(target string) *cachingProxy {
	p := &cachingProxy{cached: map[string]api.Lease{}, fake: map[string]api.Lease{}}
	hc := &http.Client{Timeout: 10 * time.Second}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if strings.HasSuffix(req.URL.Path, "/release") || strings.HasSuffix(req.URL.Path, "/renew") {
			var lr api.LeaseRequest
			json.Unmarshal(body, &lr)
			p.mu.Lock()
			l, made := p.fake[lr.LeaseID]
			p.mu.Unlock()
			if made {
				w.Header().Set("Content-Type", "application/json")
				if strings.HasSuffix(req.URL.Path, "/release") {
					io.WriteString(w, `{"released":true}`)
					return
				}
				l.ExpiresAt = time.Now().Add(time.Duration(l.TTL)).UTC()
				json.NewEncoder(w).Encode(l)
				return
			}
		}
		out, err := http.NewRequestWithContext(req.Context(), req.Method, target+req.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = req.Header.Clone()
		resp, err := hc.Do(out)
		var rb []byte
		status := http.StatusBadGateway
		if err == nil {
			rb, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		if strings.HasSuffix(req.URL.Path, "/acquire") {
			p.mu.Lock()
			if status == http.StatusOK {
				var l api.Lease
				json.Unmarshal(rb, &l)
				p.cached[req.URL.Path] = l
			} else if l := p.cached[req.URL.Path]; l.Token != 0 {
				var ar api.AcquireRequest
				json.Unmarshal(body, &ar)
				l.LeaseID, l.Owner = ar.LeaseID, ar.Owner
				if l.LeaseID == "" {
					l.LeaseID = api.NewLeaseID()
				}
				l.ExpiresAt = time.Now().Add(time.Duration(l.TTL)).UTC()
				p.fake[l.LeaseID] = l
				rb, _ = json.Marshal(l)
				status = http.StatusOK
			}
			p.mu.Unlock()
		}
		if err != nil && status != http.StatusOK {
			http.Error(w, err.Error(), status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(rb)
	}))
	return p
}

// The divergence a failed final read reports is read from the field that
// ZooKeeper's mntr answers with: a healthy server has it, at 0.
func TestDigestMismatchesReadFromMntr(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper: not in -short")
	}
	zk := zktest.StartT(t, testenv.Options{})
	ans, err := testenv.FourLetter(zk.Members[0].ClientAddr, "mntr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := digestMismatches(ans)
	if !ok || n != "0" {
		t.Fatalf("zk_digest_mismatches_count of a fresh server: %q, found %v; want 0 (mntr answered %q)", n, ok, ans)
	}
	if _, ok := digestMismatches("zk_version\t3.8.0\n"); ok {
		t.Error("an answer without the field reported a count")
	}
}

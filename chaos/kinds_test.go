package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	seqdclient "github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
)

var (
	kindsFlag        = flag.Duration("chaos.kinds", 4*time.Second, "length of each lease kind's run under faults")
	kindsControlFlag = flag.Duration("chaos.kinds-control", 3*time.Second, "length of each attempt of a lease kind's negative control")
)

// The faults of the kinds' runs: on the daemons and on ZooKeeper. The
// clients are goroutines of the test; a client's pause is a stall of its
// own (it stops renewing for longer than the TTL, then goes on as if it
// still held).
var kindFaults = []string{faultDaemonPause, faultDaemonKill, faultZKLeaderKill, faultZKMemberPause}

const (
	kindTTL     = time.Second
	kindAdmin   = "chaos-admin-token-0123456789abcdef"
	semLimit    = 2
	lockDelay   = 2 * time.Second
	sharedRatio = 0.7
)

// startKindsEnvOpts starts the env of the kinds' runs on an ensemble of
// zkOpts: daemons that keep an audit log and accept breaks.
func startKindsEnvOpts(t *testing.T, zkOpts testenv.Options) *env {
	t.Helper()
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin-token")
	if err := os.WriteFile(admin, []byte(kindAdmin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startEnvOpts(t, zkOpts, func(name string) []string {
		return []string{"--audit-log", filepath.Join(dir, "audit-"+name+".jsonl"), "--admin-token-file", admin}
	})
}

// auditBreaks reads the break lines of the audit logs of startKindsEnvOpts's
// daemons.
func (e *env) auditBreaks(t *testing.T) []AuditBreak {
	t.Helper()
	var out []AuditBreak
	for _, d := range e.daemons {
		var path string
		for i, a := range d.args {
			if a == "--audit-log" {
				path = d.args[i+1]
			}
		}
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var ev struct {
				Event, Name string
				Token       uint64
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "break" {
				out = append(out, AuditBreak{ev.Name, ev.Token})
			}
		}
		f.Close()
	}
	return out
}

// worker is one client goroutine of a kind's run.
type worker struct {
	id      int
	rec     *Recorder
	r       *rand.Rand
	clients []*seqdclient.Client // one per daemon (or per proxy)
	names   []string
	ttl     time.Duration
	stalls  *counter
	stallN  int // one round in stallN stalls
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (w *worker) pick() (*seqdclient.Client, string) {
	i := w.r.IntN(len(w.clients))
	return w.clients[i], w.names[i]
}

// do records op around fn, which fills in what the answer said.
func (w *worker) do(op Op, fn func(op *Op) error) Op {
	op.Invoke = now()
	op = w.rec.Invoke(op)
	err := fn(&op)
	op.Complete = now()
	op.Result, op.Err = classifyDaemon(err)
	w.rec.Complete(op)
	return op
}

func (w *worker) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.r.Int64N(int64(hi-lo)))
}

// holdLease keeps l for d, renewing it every third of the TTL (each renewal
// recorded); it stops at the first renewal that does not answer ok. With
// stall, it stops renewing after the first renewal and sleeps past the TTL,
// as a paused client would, then tries once more.
func (w *worker) holdLease(ctx context.Context, c *seqdclient.Client, daemon string, l api.Lease, d time.Duration, stall bool) {
	renew := func() bool {
		op := w.do(Op{Kind: KindRenew, Lock: l.Name, Daemon: daemon, Token: l.Token, Grant: l.LeaseID}, func(*Op) error {
			_, err := c.Renew(ctx, l, 0)
			return err
		})
		return op.Result == ResultOK
	}
	step := w.ttl / 3
	for left := d; left > 0 && ctx.Err() == nil; left -= step {
		hold(ctx, min(step, left))
		if !renew() {
			return
		}
		if stall {
			w.stalls.inc()
			hold(ctx, w.ttl*3/2)
			renew()
			return
		}
	}
}

func (w *worker) release(ctx context.Context, c *seqdclient.Client, daemon string, l api.Lease) {
	w.do(Op{Kind: KindRelease, Lock: l.Name, Daemon: daemon, Token: l.Token, Grant: l.LeaseID}, func(*Op) error {
		return c.Release(context.WithoutCancel(ctx), l)
	})
}

// leaseRound is one round of a lease kind: take (through a daemon picked
// at random), hold for a while renewing, and release, or, one time in
// w.stallN, stall and never release.
func (w *worker) leaseRound(ctx context.Context, lock, mode string, take func(c *seqdclient.Client) (api.Lease, error)) (api.Lease, bool) {
	c, daemon := w.pick()
	var l api.Lease
	op := w.do(Op{Kind: KindAcquire, Lock: lock, Mode: mode, Daemon: daemon}, func(op *Op) error {
		var err error
		l, err = take(c)
		op.Token, op.Grant = l.Token, l.LeaseID
		return err
	})
	if op.Result != ResultOK {
		hold(ctx, w.between(20*time.Millisecond, 100*time.Millisecond))
		return l, false
	}
	stall := w.r.IntN(w.stallN) == 0
	w.holdLease(ctx, c, daemon, l, w.between(w.ttl/2, w.ttl*3/2), stall)
	if !stall {
		w.release(ctx, c, daemon, l)
	}
	return l, true
}

// kindModel is one lease kind's run: its workload and its checker.
type kindModel struct {
	name    string
	workers int
	ttl     time.Duration
	stallN  int // one round in stallN stalls (default 5)
	// controlStallN, when set, is stallN in the control, and minControl
	// the shortest control attempt: a control whose bug shows only after
	// a client stalls must have its stalls.
	controlStallN int
	minControl    time.Duration
	// minRun is the shortest run under faults: a lock-delay's rounds
	// take a delay each.
	minRun time.Duration
	// work runs worker w until ctx ends.
	work func(ctx context.Context, w *worker, m *modelRun)
	// check checks the history.
	check func(t *testing.T, e *env, ops []Op) KindResult
	// control wraps the daemons' URLs for the negative control (a broken
	// daemon) or sets a broken client; it returns the URLs to use.
	control func(t *testing.T, e *env, m *modelRun) []string
}

// modelRun is what the workers of one run share.
type modelRun struct {
	mu       sync.Mutex
	tokens   []uint64 // the check model: tokens granted so far
	oneByOne bool     // the multi-lock control
}

func (m *modelRun) granted(tok uint64) {
	m.mu.Lock()
	m.tokens = append(m.tokens, tok)
	m.mu.Unlock()
}

func (m *modelRun) someToken(r *rand.Rand) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.tokens) == 0 {
		return 0
	}
	if r.IntN(2) == 0 {
		return m.tokens[len(m.tokens)-1]
	}
	return m.tokens[r.IntN(len(m.tokens))]
}

// awaitReady waits up to d for every daemon of e to answer /readyz with
// 200 (its ZooKeeper session connected), and logs the ones that did not.
func (e *env) awaitReady(t *testing.T, d time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	until := time.Now().Add(d)
	for i, u := range e.urls {
		for {
			last := ""
			resp, err := hc.Get(u + "/readyz")
			if err != nil {
				last = err.Error()
			} else {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				last = resp.Status
			}
			if time.Now().After(until) {
				t.Logf("daemon %s not ready after %v (last: %s)", e.names[i], d, last)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// runKind runs m for d under faults (none if nil), through urls, and returns
// the history's operations, the faults injected and the client stalls. It
// starts once every daemon is ready: a run under faults may have left one
// between sessions, and a control attempt spent on its refusals shows
// nothing.
func runKind(t *testing.T, e *env, m kindModel, name string, seed uint64, d time.Duration, urls []string, faults []string, mr *modelRun) ([]Op, map[string]int, int) {
	t.Helper()
	e.awaitReady(t, 30*time.Second)
	hist := filepath.Join(e.dir, "kinds-"+name)
	if err := os.MkdirAll(hist, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	var clients []*seqdclient.Client
	for _, u := range urls {
		c, err := seqdclient.New(u, seqdclient.WithoutEnv(), seqdclient.WithHTTPClient(hc), seqdclient.WithAPIToken(kindAdmin))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	names := e.names
	if len(urls) != len(e.names) {
		names = nil
		for i := range urls {
			names = append(names, fmt.Sprintf("proxy-%d", i))
		}
	}
	ttl := m.ttl
	if ttl == 0 {
		ttl = kindTTL
	}
	stalls := &counter{}
	stallN := m.stallN
	if stallN == 0 {
		stallN = 5
	}
	var files []*os.File
	var wg sync.WaitGroup
	for i := 0; i < m.workers; i++ {
		f, err := os.Create(filepath.Join(hist, fmt.Sprintf("worker-%d.jsonl", i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		w := &worker{id: i, rec: NewRecorder(f, i), r: rand.New(rand.NewPCG(seed, uint64(i))), clients: clients, names: names, ttl: ttl, stalls: stalls, stallN: stallN}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.work(ctx, w, mr)
		}()
	}
	in := &injector{e: e, rand: rand.New(rand.NewPCG(seed, 0xfa17)), counts: map[string]int{}, log: t.Logf, errorf: t.Errorf}
	if faults != nil {
		var cur phaseName
		in.runPhases(ctx, []phase{{name: "mixed", kinds: faults, d: d, parallel: 1}}, &cur)
	}
	wg.Wait()
	for _, f := range files {
		f.Close()
	}
	ops, err := ReadHistoryFiles(filepath.Join(hist, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return ops, in.counts, stalls.get()
}

// TestKinds runs a model of every lease kind other than the plain lock
// against the real daemons under faults (no violation allowed), then its
// negative control (a broken daemon or client), which must make the
// kind's checker fail; then, in "clock", some of the models again under
// clock faults on ZooKeeper. The ensemble runs under libfaketime from the
// start (its offsets 0 until a clock fault), so that one ensemble serves
// both.
func TestKinds(t *testing.T) {
	seed := chaosSeed(t)
	e := startKindsEnvOpts(t, testenv.Options{Servers: 3, Java: fakeJava(t)})
	for _, m := range kindModels() {
		t.Run(m.name, func(t *testing.T) {
			// A short run whose faults leave no grant to check (seen
			// once on a loaded machine) runs again, longer; every run's
			// history is checked, and one must have checked grants.
			const attempts = 2
			progressed := false
			for a := 0; a < attempts && !progressed; a++ {
				start := time.Now()
				name := m.name
				if a > 0 {
					name = fmt.Sprintf("%s-again-%d", m.name, a)
				}
				ops, faults, stalls := runKind(t, e, m, name, seed+uint64(a), max(*kindsFlag, m.minRun)*time.Duration(a+1), e.urls, kindFaults, &modelRun{})
				res := m.check(t, e, ops)
				t.Logf("%s, seed %d, %v: %d operations, %d client stalls, faults %v; %s",
					name, seed+uint64(a), time.Since(start).Round(100*time.Millisecond), len(ops), stalls, faults, res.Summary())
				progressed = len(ops) > 0 && res.Checked["grants"] > 0
				for _, v := range res.Violations {
					t.Errorf("violation: %v", v)
				}
				if len(res.Violations) > 0 {
					saveOps(t, name, ops)
				}
			}
			if !progressed {
				t.Errorf("%s: the workload made no progress in %d runs", m.name, attempts)
			}
		})
		t.Run(m.name+"/control", func(t *testing.T) {
			const attempts = 3
			for a := 0; a < attempts; a++ {
				mr := &modelRun{}
				urls := m.control(t, e, mr)
				name := fmt.Sprintf("%s-control-%d", m.name, a)
				mc := m
				if m.controlStallN > 0 {
					mc.stallN = m.controlStallN
				}
				ops, _, stalls := runKind(t, e, mc, name, seed+uint64(a)+1, max(*kindsControlFlag, m.minControl), urls, nil, mr)
				res := m.check(t, e, ops)
				t.Logf("%s: %d operations, %d client stalls; %s", name, len(ops), stalls, res.Summary())
				if len(res.Violations) > 0 {
					for i, v := range res.Violations {
						if i == 3 {
							break
						}
						t.Logf("%s caught (as it must) on attempt %d: %v", m.name, a+1, v)
					}
					return
				}
				t.Logf("%s caught nothing: %s", name, tally(ops))
			}
			t.Errorf("%s: the control made no violation in %d attempts", m.name, attempts)
		})
	}
	t.Run("clock", func(t *testing.T) { clockFaults(t, e, seed) })
}

func saveOps(t *testing.T, name string, ops []Op) {
	t.Helper()
	out := *outFlag
	if out == "" {
		var err error
		if out, err = os.MkdirTemp("", "seqd-chaos-"); err != nil {
			return
		}
	}
	os.MkdirAll(out, 0o755)
	f, err := os.Create(filepath.Join(out, strings.ReplaceAll(name, "/", "-")+"-history.jsonl"))
	if err != nil {
		return
	}
	defer f.Close()
	WriteHistory(f, ops)
	t.Logf("%s: history written to %s", name, f.Name())
}

func kindModels() []kindModel {
	return []kindModel{
		semaphoreModel(), sharedModel(), electionModel(), multiModel(), lockDelayModel(), breakModel(), checkModel(),
	}
}

func semaphoreModel() kindModel {
	const name = "chaos/semaphore"
	return kindModel{
		name: "semaphore", workers: 5,
		work: func(ctx context.Context, w *worker, _ *modelRun) {
			for ctx.Err() == nil {
				w.leaseRound(ctx, name, "", func(c *seqdclient.Client) (api.Lease, error) {
					return c.AcquireSemaphore(ctx, name, semLimit, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
				})
			}
		},
		check:   func(_ *testing.T, _ *env, ops []Op) KindResult { return CheckSemaphore(ops, semLimit) },
		control: twinControl,
	}
}

func sharedModel() kindModel {
	const name = "chaos/shared"
	return kindModel{
		// The control's extra holder comes only from a refused acquire,
		// and holds last up to 1.5 s: a short attempt on a loaded machine
		// can end without one.
		name: "shared", workers: 5, minControl: 8 * time.Second,
		work: func(ctx context.Context, w *worker, _ *modelRun) {
			for ctx.Err() == nil {
				mode, opts := "", []seqdclient.AcquireOption{seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl)}
				if w.r.Float64() < sharedRatio {
					mode, opts = "shared", append(opts, seqdclient.Shared())
				}
				w.leaseRound(ctx, name, mode, func(c *seqdclient.Client) (api.Lease, error) { return c.Acquire(ctx, name, opts...) })
			}
		},
		check:   func(_ *testing.T, _ *env, ops []Op) KindResult { return CheckShared(ops) },
		control: twinControl,
	}
}

func electionModel() kindModel {
	const name = "chaos/election"
	return kindModel{
		name: "election", workers: 5,
		work: func(ctx context.Context, w *worker, _ *modelRun) {
			if w.id >= 3 { // observers: leader reads
				for ctx.Err() == nil {
					c, daemon := w.pick()
					w.do(Op{Kind: KindLeader, Lock: name, Daemon: daemon}, func(op *Op) error {
						st, err := c.Election(ctx, name)
						if err == nil && st.Leader != nil {
							op.Token = st.Leader.Term
						}
						return err
					})
					hold(ctx, w.between(10*time.Millisecond, 60*time.Millisecond))
				}
				return
			}
			for ctx.Err() == nil {
				w.leaseRound(ctx, name, "", func(c *seqdclient.Client) (api.Lease, error) {
					return c.AcquireLeadership(ctx, name, fmt.Sprintf("w%d", w.id), seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
				})
			}
		},
		check: func(_ *testing.T, _ *env, ops []Op) KindResult { return CheckElection(ops) },
		control: func(t *testing.T, e *env, _ *modelRun) []string {
			p := newBrokenProxy(e.urls[0], brokenTwin|brokenStaleLeader)
			t.Cleanup(p.Close)
			return []string{p.URL}
		},
	}
}

var multiNames = []string{"chaos/multi/a", "chaos/multi/b", "chaos/multi/c", "chaos/multi/d"}

func multiModel() kindModel {
	return kindModel{
		name: "multilock", workers: 4,
		work: func(ctx context.Context, w *worker, mr *modelRun) {
			for ctx.Err() == nil {
				names := append([]string(nil), multiNames...)
				w.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
				names = names[:2+w.r.IntN(2)]
				if mr.oneByOne {
					w.oneByOne(ctx, names)
				} else {
					w.multiRound(ctx, names)
				}
			}
		},
		check: func(_ *testing.T, _ *env, ops []Op) KindResult { return CheckMulti(ops) },
		control: func(_ *testing.T, e *env, mr *modelRun) []string {
			mr.oneByOne = true
			return e.urls
		},
	}
}

func (w *worker) multiRound(ctx context.Context, names []string) {
	c, daemon := w.pick()
	var l api.MultiLease
	op := w.do(Op{Kind: KindMulti, Names: names, Daemon: daemon}, func(op *Op) error {
		var err error
		l, err = c.AcquireMulti(ctx, names, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
		if err == nil {
			op.Grant = l.LeaseID
			for _, lk := range l.Locks {
				op.Held = append(op.Held, lk.Name)
			}
			if len(l.Locks) > 0 {
				op.Token = l.Locks[0].Token
			}
		}
		return err
	})
	if op.Result != ResultOK {
		hold(ctx, w.between(20*time.Millisecond, 100*time.Millisecond))
		return
	}
	step := w.ttl / 3
	for left := w.between(w.ttl/2, w.ttl*3/2); left > 0 && ctx.Err() == nil; left -= step {
		hold(ctx, min(step, left))
		r := w.do(Op{Kind: KindRenew, Names: names, Daemon: daemon, Token: op.Token, Grant: l.LeaseID}, func(*Op) error {
			_, err := c.RenewMulti(ctx, l, 0)
			return err
		})
		if r.Result != ResultOK {
			break
		}
	}
	w.do(Op{Kind: KindRelease, Names: names, Daemon: daemon, Token: op.Token, Grant: l.LeaseID}, func(*Op) error {
		return c.ReleaseMulti(context.WithoutCancel(ctx), l)
	})
}

// oneByOne is the broken multi-lock of the control: each lock taken on its
// own, in the order asked, holding the ones it has while it waits for the
// next (the classic road to a deadlock).
func (w *worker) oneByOne(ctx context.Context, names []string) {
	c, daemon := w.pick()
	var got []api.Lease
	op := w.do(Op{Kind: KindMulti, Names: names, Daemon: daemon}, func(op *Op) error {
		for _, n := range names {
			l, err := c.Acquire(ctx, n, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
			if err != nil {
				return err
			}
			got = append(got, l)
			op.Held = append(op.Held, n)
		}
		return nil
	})
	if op.Result == ResultOK {
		hold(ctx, w.between(w.ttl/4, w.ttl/2))
	}
	for _, l := range got {
		c.Release(context.WithoutCancel(ctx), l)
	}
}

func lockDelayModel() kindModel {
	const name = "chaos/lock-delay"
	return kindModel{
		name: "lock-delay", workers: 3, stallN: 2, minRun: 8 * time.Second,
		// The control's bug (no delay after an unclean end) shows only
		// after a stall: every round of it stalls, and an attempt lasts
		// a stall, the TTL's expiry and the next grant.
		controlStallN: 1, minControl: 6 * time.Second,
		work: func(ctx context.Context, w *worker, _ *modelRun) {
			for ctx.Err() == nil {
				w.leaseRound(ctx, name, "", func(c *seqdclient.Client) (api.Lease, error) {
					return c.Acquire(ctx, name, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(3*lockDelay), seqdclient.LockDelay(lockDelay))
				})
			}
		},
		check: func(_ *testing.T, _ *env, ops []Op) KindResult { return CheckLockDelay(ops, lockDelay) },
		control: func(t *testing.T, e *env, _ *modelRun) []string {
			var urls []string
			for _, u := range e.urls {
				p := newBrokenProxy(u, brokenNoDelay)
				t.Cleanup(p.Close)
				urls = append(urls, p.URL)
			}
			return urls
		},
	}
}

func breakModel() kindModel {
	const name = "chaos/break"
	return kindModel{
		name: "break", workers: 4,
		work: func(ctx context.Context, w *worker, _ *modelRun) {
			if w.id == 0 { // the operator
				for ctx.Err() == nil {
					hold(ctx, w.between(300*time.Millisecond, 900*time.Millisecond))
					c, daemon := w.pick()
					st, err := c.Status(ctx, name)
					if err != nil || !st.Held {
						continue
					}
					w.do(Op{Kind: KindBreak, Lock: name, Daemon: daemon, Token: st.Token}, func(op *Op) error {
						_, err := c.Break(ctx, api.Locks, name, "chaos: breaking the holder", st.Token)
						return err
					})
				}
				return
			}
			for ctx.Err() == nil {
				w.leaseRound(ctx, name, "", func(c *seqdclient.Client) (api.Lease, error) {
					return c.Acquire(ctx, name, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
				})
			}
		},
		check: func(t *testing.T, e *env, ops []Op) KindResult { return CheckBreaks(ops, e.auditBreaks(t)) },
		control: func(t *testing.T, e *env, _ *modelRun) []string {
			p := newBrokenProxy(e.urls[0], brokenFakeBreak)
			t.Cleanup(p.Close)
			return []string{p.URL}
		},
	}
}

func checkModel() kindModel {
	const name = "chaos/check"
	return kindModel{
		name: "check", workers: 5,
		work: func(ctx context.Context, w *worker, mr *modelRun) {
			if w.id >= 3 { // checkers: /v1/check of tokens seen granted
				for ctx.Err() == nil {
					hold(ctx, w.between(5*time.Millisecond, 40*time.Millisecond))
					tok := mr.someToken(w.r)
					if tok == 0 {
						continue
					}
					c, daemon := w.pick()
					op := Op{Kind: KindCheck, Lock: name, Daemon: daemon, Token: tok, Invoke: now()}
					op = w.rec.Invoke(op)
					res, err := c.CheckToken(ctx, name, tok)
					op.Complete = now()
					var ae *api.APIError
					switch {
					case err == nil:
						op.Result, op.Valid = ResultOK, res.Valid
					case errors.As(err, &ae) && ae.Status == http.StatusConflict:
						op.Result, op.Valid, op.Err = ResultOK, false, ae.Code
					default:
						op.Result, op.Err = classifyDaemon(err)
						if op.Result == ResultOK {
							op.Result = ResultInfo
						}
					}
					w.rec.Complete(op)
				}
				return
			}
			for ctx.Err() == nil {
				w.leaseRound(ctx, name, "", func(c *seqdclient.Client) (api.Lease, error) {
					l, err := c.Acquire(ctx, name, seqdclient.Owner(fmt.Sprintf("w%d", w.id)), seqdclient.TTL(w.ttl), seqdclient.Wait(w.ttl))
					if err == nil {
						mr.granted(l.Token)
					}
					return l, err
				})
			}
		},
		check: func(_ *testing.T, _ *env, ops []Op) KindResult {
			r, _ := CheckValidity(ops, time.Minute)
			return r
		},
		control: func(t *testing.T, e *env, _ *modelRun) []string {
			p := newBrokenProxy(e.urls[0], brokenCachedCheck)
			t.Cleanup(p.Close)
			return []string{p.URL}
		},
	}
}

// twinControl puts a broken daemon in front of the first one: it answers
// a refused grant with a grant of a twin name.
func twinControl(t *testing.T, e *env, _ *modelRun) []string {
	p := newBrokenProxy(e.urls[0], brokenTwin)
	t.Cleanup(p.Close)
	return []string{p.URL}
}

// tally counts ops by kind and result, and names the commonest error: what
// a run that showed nothing spent its time on.
func tally(ops []Op) string {
	counts := map[string]int{}
	errs := map[string]int{}
	for _, op := range ops {
		res := op.Result
		if res == "" {
			res = "pending"
		}
		counts[op.Kind+" "+res]++
		if op.Err != "" {
			errs[op.Err]++
		}
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	out := strings.Join(parts, ", ")
	if len(errs) > 0 {
		top := ""
		for e, n := range errs {
			if top == "" || n > errs[top] || n == errs[top] && e < top {
				top = e
			}
		}
		out += fmt.Sprintf("; commonest error (%d): %s", errs[top], top)
	}
	return out
}

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
)

// The latency figures: what a user of a lock feels beyond throughput, each
// measured as deployed (the daemon and `seqd lock` are processes of their
// own; the clients and the observer that times ZooKeeper are this one):
//
//   - hand-over: on a hot lock, the holder's release answered → the next
//     holder's grant answered;
//   - loss detection: the holder's ZooKeeper session expired (an observer's
//     session sees the holder's node go) → the holder told (the Go client's
//     Held.Lost, `seqd lock` sending its command --kill-signal). The
//     holder's connection to ZooKeeper is cut to make the session expire.
//     A negative figure is the holder told before ZooKeeper let anyone else
//     in, which is what a holder wants;
//   - crash to successor: the holder's process SIGKILLed → a waiting
//     successor's grant answered: a `seqd lock` holder (its session must
//     expire), the same with --lock-delay, and a daemon lease whose client
//     died (its TTL must pass).

// Latency figure names, in report order.
const (
	FigHandover       = "handover"
	FigHandoverSent   = "handover-from-request"
	FigLossClient     = "loss-client"
	FigLossLock       = "loss-lock"
	FigCrashLock      = "crash-lock"
	FigCrashLockDelay = "crash-lock-delay"
	FigCrashLease     = "crash-lease"
)

// LatencyOptions shape a latency run; zero values take the defaults.
type LatencyOptions struct {
	// Handovers measured on the hot lock; default 50.
	Handovers int
	// FaultRounds of each loss and crash figure, each a session timeout or
	// a TTL long or more; default 5.
	FaultRounds int
	// SessionTimeout of the daemons' and `seqd lock`'s ZooKeeper sessions
	// in this run; default 2s.
	SessionTimeout time.Duration
	// TTL of the daemon's leases in this run; default 2s.
	TTL time.Duration
	// LockDelay of the lock-delay crash figure; default 1s.
	LockDelay time.Duration
}

func (o LatencyOptions) withDefaults() LatencyOptions {
	if o.Handovers <= 0 {
		o.Handovers = 50
	}
	if o.FaultRounds <= 0 {
		o.FaultRounds = 5
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 2 * time.Second
	}
	if o.TTL <= 0 {
		o.TTL = 2 * time.Second
	}
	if o.LockDelay <= 0 {
		o.LockDelay = time.Second
	}
	return o
}

// Figure is one latency figure over its rounds.
type Figure struct {
	Name string // one of the Fig constants
	What string // for people: the holder and the two events
	// Samples are the rounds' latencies, sorted; a negative one is the
	// second event before the first.
	Samples  []time.Duration
	P50, P99 time.Duration
}

// LatencyReport is a latency run.
type LatencyReport struct {
	Started        time.Time
	Servers        []string
	SessionTimeout time.Duration
	TTL            time.Duration
	LockDelay      time.Duration
	// RTT is what a delay proxy added to every round trip to ZooKeeper
	// (Config.RTT); 0: none.
	RTT     time.Duration
	Figures []Figure
}

// RunLatency measures the latency figures on cfg's ZooKeeper with daemons
// and `seqd lock` processes run from cfg.DaemonCommand's binary. On an
// error it returns the figures measured so far.
func RunLatency(ctx context.Context, cfg Config, o LatencyOptions) (*LatencyReport, error) {
	cfg, err := cfg.forDaemons("the latency figures need the seqd binary to run the daemon and seqd lock")
	if err != nil {
		return nil, err
	}
	o = o.withDefaults()
	cfg.SessionTimeout = o.SessionTimeout
	started := time.Now()
	r := newRunner(cfg, runID(started)+"-latency")
	rep := &LatencyReport{Started: started, Servers: cfg.Servers, SessionTimeout: o.SessionTimeout, TTL: o.TTL, LockDelay: o.LockDelay, RTT: cfg.RTT}
	l := &latencyRun{r: r, o: o}
	if r.admin, err = r.connect(ctx); err != nil {
		return rep, err
	}
	defer r.cleanup()
	defer l.close() // first: the daemons' nodes go before the tree does
	// Two daemons on one root: one straight to ZooKeeper, one through a
	// proxy the loss figure cuts.
	if l.direct, err = l.startDaemon(ctx, cfg.Servers); err != nil {
		return rep, err
	}
	l.proxy = testenv.NewProxy("zookeeper")
	proxied, err := l.proxy.Forward(cfg.Servers[0])
	if err != nil {
		return rep, unavailablef("start the proxy to ZooKeeper: %w", err)
	}
	l.proxied = []string{proxied}
	if l.cut, err = l.startDaemon(ctx, l.proxied); err != nil {
		return rep, err
	}
	for _, f := range []struct {
		name, what string
		rounds     int
		measure    func(context.Context, string) (time.Duration, error)
	}{
		{FigHandover, "hand-over on a hot lock (daemon): release answered → next holder's grant answered", o.Handovers, l.handover(false)},
		{FigHandoverSent, "the same from the release sent", o.Handovers, l.handover(true)},
		{FigLossClient, "loss detection, Go client (daemon): session expired → Held.Lost", o.FaultRounds, l.lossClient},
		{FigLossLock, "loss detection, seqd lock: session expired → --kill-signal sent", o.FaultRounds, l.lossLock},
		{FigCrashLock, "crash to successor, seqd lock holder SIGKILLed → successor granted", o.FaultRounds, l.crashLock(0)},
		{FigCrashLockDelay, fmt.Sprintf("the same with --lock-delay %v", o.LockDelay), o.FaultRounds, l.crashLock(o.LockDelay)},
		{FigCrashLease, "crash to successor, daemon lease: holder's process gone → successor granted", o.FaultRounds, l.crashLease},
	} {
		fig := Figure{Name: f.name, What: f.what}
		for i := range f.rounds {
			r.progress(fmt.Sprintf("%s: round %d of %d", f.name, i+1, f.rounds))
			d, err := f.measure(ctx, fmt.Sprintf("%s/%s-%d", r.id, f.name, i))
			if err != nil {
				r.progressDone(f.name + ": failed")
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				return rep, fmt.Errorf("%s, round %d: %w", f.name, i+1, err)
			}
			fig.Samples = append(fig.Samples, d)
		}
		slices.Sort(fig.Samples)
		fig.P50, fig.P99 = Percentile(fig.Samples, 0.50), Percentile(fig.Samples, 0.99)
		r.progressDone(fmt.Sprintf("%s: p50 %s, p99 %s over %d", f.name, signedLatency(fig.P50), signedLatency(fig.P99), len(fig.Samples)))
		rep.Figures = append(rep.Figures, fig)
	}
	return rep, nil
}

// latencyRun is a latency run in progress.
type latencyRun struct {
	r       *runner
	o       LatencyOptions
	direct  *latencyDaemon // straight to ZooKeeper
	cut     *latencyDaemon // through proxy
	proxy   *testenv.Proxy
	proxied []string // the proxy's address, as ZooKeeper's
}

type latencyDaemon struct {
	*daemon
	c *client.Client
}

func (l *latencyRun) close() {
	for _, d := range []*latencyDaemon{l.direct, l.cut} {
		if d != nil {
			if err := d.stop(); err != nil {
				fmt.Fprintln(l.r.cfg.Progress, err)
			}
		}
	}
	if l.proxy != nil {
		l.proxy.Close()
	}
}

func (l *latencyRun) startDaemon(ctx context.Context, servers []string) (*latencyDaemon, error) {
	rr := *l.r
	rr.cfg.Servers = servers
	d, err := rr.startProcess(ctx)
	if err != nil {
		return nil, err
	}
	c, err := client.New(d.addr, client.WithoutEnv())
	if err != nil {
		_ = d.stop()
		return nil, err
	}
	return &latencyDaemon{daemon: d, c: c}, nil
}

// lockRoot is the daemons' lock root, which `seqd lock` shares.
func (l *latencyRun) lockRoot() string { return l.r.root + "/http" }

// queued waits until name has a holder and n waiters behind it, and
// returns the holder's node path.
func (l *latencyRun) queued(ctx context.Context, name string, n int) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := l.direct.c.Status(ctx, name)
		if err != nil {
			return "", err
		}
		if len(st.Holding) == 1 && len(st.Queue) == n {
			return l.lockRoot() + "/" + name + "/" + st.Holding[0].Node, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s: no holder with %d waiters within 30s (holding %d, queued %d)", name, n, len(st.Holding), len(st.Queue))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// granted is an acquire answered, and when.
type granted struct {
	lease api.Lease
	at    time.Time
	err   error
}

// waitFor starts an acquire that waits for name on c.
func waitFor(ctx context.Context, c *client.Client, name string, wait time.Duration) <-chan granted {
	ch := make(chan granted, 1)
	go func() {
		l, err := c.Acquire(ctx, name, client.Wait(wait), client.TTL(30*time.Second))
		ch <- granted{l, time.Now(), err}
	}()
	return ch
}

// handover times a hand-over from the release's answer, or fromRequest
// from the moment the release is sent.
func (l *latencyRun) handover(fromRequest bool) func(context.Context, string) (time.Duration, error) {
	return func(ctx context.Context, name string) (time.Duration, error) {
		c := l.direct.c
		held, err := c.Acquire(ctx, name, client.TTL(30*time.Second))
		if err != nil {
			return 0, err
		}
		next := waitFor(ctx, c, name, time.Minute)
		if _, err := l.queued(ctx, name, 1); err != nil {
			return 0, err
		}
		sent := time.Now()
		if err := c.Release(ctx, held); err != nil {
			return 0, err
		}
		from := time.Now()
		if fromRequest {
			from = sent
		}
		g := <-next
		if g.err != nil {
			return 0, g.err
		}
		if g.lease.Token <= held.Token {
			return 0, fmt.Errorf("the next holder's token %d is not above %d", g.lease.Token, held.Token)
		}
		return g.at.Sub(from), c.Release(ctx, g.lease)
	}
}

// expired watches the node at p and says when ZooKeeper removed it.
func (l *latencyRun) expired(p string) (<-chan time.Time, error) {
	ok, _, ev, err := l.r.admin.ExistsW(p)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", p, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s is gone before the fault", p)
	}
	ch := make(chan time.Time, 1)
	go func() {
		e := <-ev
		if e.Type == zk.EventNodeDeleted {
			ch <- time.Now()
		}
		close(ch)
	}()
	return ch, nil
}

// both waits for the expiry and the holder's signal, and gives signal −
// expiry.
func both(ctx context.Context, expiry <-chan time.Time, signal <-chan time.Time) (time.Duration, error) {
	bound := time.After(time.Minute)
	var e, s time.Time
	for e.IsZero() || s.IsZero() {
		select {
		case t, ok := <-expiry:
			if !ok {
				return 0, errors.New("the holder's node watch ended without its removal")
			}
			e, expiry = t, nil
		case t, ok := <-signal:
			if !ok {
				return 0, errors.New("the holder ended without its loss signal")
			}
			s, signal = t, nil
		case <-bound:
			return 0, fmt.Errorf("no expiry (%v) or no loss signal (%v) within a minute of the cut", !e.IsZero(), !s.IsZero())
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return s.Sub(e), nil
}

// healed passes the proxy again and waits until the cut daemon grants.
func (l *latencyRun) healed(ctx context.Context, name string) error {
	l.proxy.Pass()
	deadline := time.Now().Add(time.Minute)
	for {
		lease, err := l.cut.c.Acquire(ctx, name+"-healed", client.TTL(5*time.Second), client.Wait(time.Second))
		if err == nil {
			return l.cut.c.Release(ctx, lease)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the daemon behind the proxy grants nothing a minute after the heal: %w", err)
		}
	}
}

func (l *latencyRun) lossClient(ctx context.Context, name string) (time.Duration, error) {
	h, err := l.cut.c.Hold(ctx, name, client.TTL(l.o.TTL))
	if err != nil {
		return 0, err
	}
	defer func() { _ = h.Release(context.Background()) }()
	return l.cutHolder(ctx, name, func() <-chan time.Time {
		lost := make(chan time.Time, 1)
		go func() {
			<-h.Lost()
			lost <- time.Now()
		}()
		return lost
	})
}

// cutHolder cuts the proxy under name's holder and gives how long after
// ZooKeeper removed its node the holder said it lost the lock: watchLoss
// starts watching for that word once the node is watched. It heals the
// proxy before it returns.
func (l *latencyRun) cutHolder(ctx context.Context, name string, watchLoss func() <-chan time.Time) (time.Duration, error) {
	node, err := l.queued(ctx, name, 0)
	if err != nil {
		return 0, err
	}
	expiry, err := l.expired(node)
	if err != nil {
		return 0, err
	}
	lost := watchLoss()
	l.proxy.Cut()
	d, err := both(ctx, expiry, lost)
	if herr := l.healed(ctx, name); err == nil {
		err = herr
	}
	return d, err
}

// lockCommand runs `seqd lock` on servers for name, in a process group of
// its own, its command printing "held" once it runs and "lost" when sent
// TERM; lines carries the command's output lines with their times.
func (l *latencyRun) lockCommand(servers []string, name string, extra ...string) (cmd *lockProcess, lines <-chan timedLine, err error) {
	args := []string{"lock", "--zk", strings.Join(servers, ","), "--root", l.lockRoot(),
		"--session-timeout", l.o.SessionTimeout.String(), "--kill-grace", "5s"}
	args = append(args, l.r.cfg.DaemonCommand[2:]...) // the ZooKeeper security flags
	args = append(args, extra...)
	// The command runs in a process group of its own, which it names so
	// that a SIGKILLed seqd lock does not leave it behind.
	args = append(args, name, "--", "sh", "-c", `trap 'echo lost; exit 0' TERM; echo "held $$"; sleep 600 & wait`)
	c := exec.Command(l.r.cfg.DaemonCommand[0], args...)
	cmd = &lockProcess{Cmd: c}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQD_") {
			c.Env = append(c.Env, kv)
		}
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	// Stderr stays nil (/dev/null): a pipe would make Wait wait for the
	// command's group too.
	if err := c.Start(); err != nil {
		return nil, nil, fmt.Errorf("start seqd lock: %w", err)
	}
	ch := make(chan timedLine, 4)
	go func() { // owned by the command: ends with its output
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			text := sc.Text()
			if pid, ok := strings.CutPrefix(text, "held "); ok {
				cmd.group.Store(pid)
				text = "held"
			}
			ch <- timedLine{text, time.Now()}
		}
	}()
	return cmd, ch, nil
}

// lockProcess is a `seqd lock` and the process group of its command.
type lockProcess struct {
	*exec.Cmd
	group atomic.Value // the command's group, a string, once it printed it
}

// kill ends seqd lock's process group and its command's, and reaps it.
func (p *lockProcess) kill() {
	_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
	if g, ok := p.group.Load().(string); ok {
		if pgid, err := strconv.Atoi(g); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	_ = p.Wait()
}

type timedLine struct {
	text string
	at   time.Time
}

// line waits for want on lines.
func line(ctx context.Context, lines <-chan timedLine, want string) (time.Time, error) {
	bound := time.After(time.Minute)
	for {
		select {
		case ln, ok := <-lines:
			if !ok {
				return time.Time{}, fmt.Errorf("seqd lock's command ended before it printed %q", want)
			}
			if ln.text == want {
				return ln.at, nil
			}
		case <-bound:
			return time.Time{}, fmt.Errorf("seqd lock's command did not print %q within a minute", want)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (l *latencyRun) lossLock(ctx context.Context, name string) (time.Duration, error) {
	cmd, lines, err := l.lockCommand(l.proxied, name)
	if err != nil {
		return 0, err
	}
	defer cmd.kill()
	if _, err := line(ctx, lines, "held"); err != nil {
		return 0, err
	}
	return l.cutHolder(ctx, name, func() <-chan time.Time {
		lost := make(chan time.Time, 1)
		go func() {
			if at, err := line(ctx, lines, "lost"); err == nil {
				lost <- at
			}
			close(lost)
		}()
		return lost
	})
}

func (l *latencyRun) crashLock(delay time.Duration) func(context.Context, string) (time.Duration, error) {
	return func(ctx context.Context, name string) (time.Duration, error) {
		var extra []string
		if delay > 0 {
			extra = []string{"--lock-delay", delay.String()}
		}
		cmd, lines, err := l.lockCommand(l.r.cfg.Servers, name, extra...)
		if err != nil {
			return 0, err
		}
		defer cmd.kill()
		if _, err := line(ctx, lines, "held"); err != nil {
			return 0, err
		}
		next := waitFor(ctx, l.direct.c, name, time.Minute)
		if _, err := l.queued(ctx, name, 1); err != nil {
			return 0, err
		}
		killed := time.Now()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		g := <-next
		if g.err != nil {
			return 0, g.err
		}
		if err := l.direct.c.Release(ctx, g.lease); err != nil {
			return 0, fmt.Errorf("release the successor's lease (token %d, granted %v after the kill): %w", g.lease.Token, g.at.Sub(killed), err)
		}
		return g.at.Sub(killed), nil
	}
}

func (l *latencyRun) crashLease(ctx context.Context, name string) (time.Duration, error) {
	// seqd acquire takes a lease and exits without renewing it: its client
	// is gone the moment it has its grant, as a holder killed then.
	cmd := exec.Command(l.r.cfg.DaemonCommand[0], "acquire", "--addr", l.direct.addr, "--ttl", l.o.TTL.String(), "--token-only", name)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("seqd acquire: %v: %s", err, out)
	}
	gone := time.Now()
	g := <-waitFor(ctx, l.direct.c, name, time.Minute)
	if g.err != nil {
		return 0, g.err
	}
	return g.at.Sub(gone), l.direct.c.Release(ctx, g.lease)
}

// signedLatency is FormatLatency with a sign for a negative d.
func signedLatency(d time.Duration) string {
	if d < 0 {
		return "−" + FormatLatency(-d)
	}
	return FormatLatency(d)
}

// WriteTable prints the figures for people.
func (rep *LatencyReport) WriteTable(w io.Writer) error {
	rtt := "ZooKeeper on this machine"
	if rep.RTT > 0 {
		rtt = fmt.Sprintf("ZooKeeper %v of round trip away", rep.RTT)
	}
	fmt.Fprintf(w, "latency figures: sessions of %v, leases of %v, %s; each holder and daemon a process of its own\n\n",
		rep.SessionTimeout, rep.TTL, rtt)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tROUNDS\tP50\tP99\tWHAT")
	for _, f := range rep.Figures {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", f.Name, len(f.Samples), signedLatency(f.P50), signedLatency(f.P99), f.What)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\na negative loss figure: the holder was told before ZooKeeper expired its session, so before anyone else could be granted")
	return err
}

// WriteJSON prints the figures for machines, durations in milliseconds.
func (rep *LatencyReport) WriteJSON(w io.Writer) error {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	type fig struct {
		Name    string    `json:"name"`
		What    string    `json:"what"`
		Rounds  int       `json:"rounds"`
		P50MS   float64   `json:"p50_ms"`
		P99MS   float64   `json:"p99_ms"`
		Samples []float64 `json:"samples_ms"`
	}
	out := struct {
		Started          time.Time `json:"started"`
		Servers          []string  `json:"servers"`
		SessionTimeoutMS float64   `json:"session_timeout_ms"`
		TTLMS            float64   `json:"ttl_ms"`
		LockDelayMS      float64   `json:"lock_delay_ms"`
		RTTMS            float64   `json:"rtt_ms"`
		Figures          []fig     `json:"figures"`
	}{rep.Started, rep.Servers, ms(rep.SessionTimeout), ms(rep.TTL), ms(rep.LockDelay), ms(rep.RTT), []fig{}}
	for _, f := range rep.Figures {
		j := fig{Name: f.Name, What: f.What, Rounds: len(f.Samples), P50MS: ms(f.P50), P99MS: ms(f.P99), Samples: []float64{}}
		for _, s := range f.Samples {
			j.Samples = append(j.Samples, ms(s))
		}
		out.Figures = append(out.Figures, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

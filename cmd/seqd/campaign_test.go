package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// campaigner is a `seqd serve --campaign` process.
type campaigner struct {
	id     int
	cmd    *exec.Cmd
	stderr *zktest.Buffer
	client *client.Client
	done   chan struct{}
}

var serveListeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

func startCampaigner(t *testing.T, id int, zkHosts string, session time.Duration) *campaigner {
	t.Helper()
	p := &campaigner{id: id, stderr: &zktest.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(lockTestBinary(t), "serve", "--zk", zkHosts, "--listen", "127.0.0.1:0",
		"--session-timeout", session.String(), "--campaign", fmt.Sprintf("sidecar=pod-%d", id))
	p.cmd.Env = lockEnv()
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("seqd serve %d stderr:\n%s", id, p.stderr.String())
		}
	})
	zktest.Eventually(t, 30*time.Second, "seqd serve to listen", func() bool { return serveListeningRE.MatchString(p.stderr.String()) })
	cl, err := client.New("http://"+serveListeningRE.FindStringSubmatch(p.stderr.String())[1], client.WithoutEnv())
	if err != nil {
		t.Fatal(err)
	}
	p.client = cl
	return p
}

func (p *campaigner) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// self asks the daemon "am I leader", as the app next to it does.
func (p *campaigner) self() (bool, uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := p.client.Election(ctx, "sidecar")
	if err != nil || !st.Self || st.Leader == nil {
		return false, 0
	}
	return true, st.Leader.Term
}

// sampler asks every live daemon continuously and records the runs of
// self=true per daemon, to find two daemons that were leader at once.
type sampler struct {
	mu   sync.Mutex
	runs map[int][][2]time.Time
	open map[int]bool
	per  map[int]int // samples per daemon
	n    int
	stop chan struct{}
	wg   sync.WaitGroup
}

func sample(ps []*campaigner) *sampler {
	s := &sampler{runs: map[int][][2]time.Time{}, open: map[int]bool{}, per: map[int]int{}, stop: make(chan struct{})}
	for _, p := range ps {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for p.alive() {
				select {
				case <-s.stop:
					return
				default:
				}
				from := time.Now()
				self, _ := p.self()
				s.record(p.id, from, time.Now(), self)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return s
}

func (s *sampler) record(id int, from, to time.Time, self bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.per[id]++
	switch {
	case self && s.open[id]:
		s.runs[id][len(s.runs[id])-1][1] = from
	case self:
		s.runs[id] = append(s.runs[id], [2]time.Time{to, to})
		s.open[id] = true
	default:
		s.open[id] = false
	}
}

// sampled waits until every live daemon of ps has answered two more
// samples: each one's state after the last event is on record before the
// next fault.
func (s *sampler) sampled(t *testing.T, ps []*campaigner) {
	t.Helper()
	s.mu.Lock()
	from := maps.Clone(s.per)
	s.mu.Unlock()
	zktest.Eventually(t, 30*time.Second, "two more samples of every daemon", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range ps {
			if p.alive() && s.per[p.id] < from[p.id]+2 {
				return false
			}
		}
		return true
	})
}

func (s *sampler) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	for a, ra := range s.runs {
		for b, rb := range s.runs {
			if a >= b {
				continue
			}
			for _, x := range ra {
				for _, y := range rb {
					if x[0].Before(y[1]) && y[0].Before(x[1]) {
						t.Errorf("daemons %d and %d both answered self=true: %v–%v and %v–%v", a, b, x[0].Format("15:04:05.000"), x[1].Format("15:04:05.000"), y[0].Format("15:04:05.000"), y[1].Format("15:04:05.000"))
					}
				}
			}
		}
	}
	t.Logf("%d samples of self", s.n)
}

// awaitLeader waits for one of ps to answer self=true and returns it with
// its term.
func awaitLeader(t *testing.T, ps []*campaigner, d time.Duration) (*campaigner, uint64) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, p := range ps {
			if !p.alive() {
				continue
			}
			if ok, term := p.self(); ok {
				return p, term
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no leader within %v", d)
	return nil, 0
}

func without(ps []*campaigner, x *campaigner) []*campaigner {
	var out []*campaigner
	for _, p := range ps {
		if p != x {
			out = append(out, p)
		}
	}
	return out
}

// Three daemons campaign for themselves: never two answer self=true at once;
// after kill -9 of the leader's daemon the next is elected within the
// session timeout (plus the time ZooKeeper takes to expire it), after
// SIGTERM at once (it resigns), and after a ZooKeeper leader failover there
// is a leader again; terms strictly rise throughout.
func TestCampaignersFailover(t *testing.T) {
	const session = 4 * time.Second
	c := zktest.StartT(t, testenv.Options{Servers: 3})
	ps := make([]*campaigner, 3)
	for i := range ps {
		ps[i] = startCampaigner(t, i, c.ConnectString(), session)
	}
	s := sample(ps)
	leader, term := awaitLeader(t, ps, 30*time.Second)
	s.sampled(t, ps)

	// kill -9: the session lives on until ZooKeeper expires it.
	killed := time.Now()
	leader.cmd.Process.Signal(syscall.SIGKILL)
	<-leader.done
	ps = without(ps, leader)
	_, nterm := awaitLeader(t, ps, 3*session)
	failover := time.Since(killed)
	if nterm <= term {
		t.Fatalf("term %d after %d", nterm, term)
	}
	t.Logf("failover after kill -9 of the leader's daemon: %v (%.2fx the session timeout %v)", failover.Round(time.Millisecond), float64(failover)/float64(session), session)
	s.sampled(t, ps)

	// ZooKeeper leader failover: the elected daemon stays leader or another
	// is elected; either way a leader again, with a term not lower.
	zkLeader, err := c.Leader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	zkKilled := time.Now()
	zkLeader.Kill()
	_, fterm := awaitLeader(t, ps, 6*session)
	t.Logf("a leader again %v after ZooKeeper's leader was killed", time.Since(zkKilled).Round(time.Millisecond))
	if fterm < nterm {
		t.Fatalf("term %d after ZooKeeper failover, below %d", fterm, nterm)
	}
	if err := zkLeader.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, nterm := awaitLeader(t, ps, 6*session)
	s.sampled(t, ps)

	// SIGTERM: the daemon resigns before it exits.
	termed := time.Now()
	next.cmd.Process.Signal(syscall.SIGTERM)
	ps = without(ps, next)
	_, lterm := awaitLeader(t, ps, 3*session)
	handover := time.Since(termed)
	if lterm <= nterm {
		t.Fatalf("term %d after %d", lterm, nterm)
	}
	t.Logf("hand-over after SIGTERM (resign): %v (%.3fx the session timeout)", handover.Round(time.Millisecond), float64(handover)/float64(session))
	if handover > session/2 {
		t.Errorf("hand-over after SIGTERM took %v, not well under the session timeout %v", handover, session)
	}
	select {
	case <-next.done:
	case <-time.After(20 * time.Second):
		t.Error("seqd serve did not exit after SIGTERM")
	}
	s.finish(t)
}

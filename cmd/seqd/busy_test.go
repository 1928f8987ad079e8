package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// TestBusyFloodKeepsLeasesAlive runs the daemon with 400 file descriptors
// (a connection cap of 272) under a flood of connections, most of them busy
// rather than quiet: 300 blocking reads, 300 request bodies sent a byte a
// second, 1,000 idle connections and 300 that dribble their headers, each
// reopened soon after the daemon closes or answers it. The flood comes from
// another process, as it would. Two owners renew 3s leases every second,
// retrying a renewal whose connection broke as any client must: one keeps
// its connection between renewals, as clients do; the other opens a new one
// for each, the worst case. Neither lease lapses. Before, the busy
// connections filled the cap, the renewals waited behind them and the
// leases expired.
func TestBusyFloodKeepsLeasesAlive(t *testing.T) {
	bin := buildSeqd(t)
	zkc := zktest.StartT(t, testenv.Options{})
	base := startLimited(t, bin, 400, "--zk", zkc.ConnectString(), "--root", "/seqd-busy", "--session-timeout", "10s")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	const ttl = 3 * time.Second
	owners := []*owner{{name: "kept"}, {name: "new-each-time", fresh: true}}
	for _, o := range owners {
		var err error
		o.cl, err = client.New(base, client.WithoutEnv(), client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: o.fresh}}))
		if err != nil {
			t.Fatal(err)
		}
		if o.lease, err = o.cl.Acquire(ctx, "busy-"+o.name, client.Owner(o.name), client.TTL(ttl)); err != nil {
			t.Fatal(err)
		}
	}

	// Until the flood is under way (a process to start, which a loaded
	// machine may take longer than a TTL to do), the leases are kept
	// renewed; what is measured starts with the flood.
	flooding := make(chan struct{})
	var warming sync.WaitGroup
	floodStarted := sync.OnceFunc(func() { close(flooding) })
	defer func() { floodStarted(); warming.Wait() }()
	for _, o := range owners {
		warming.Add(1)
		go func() {
			defer warming.Done()
			for {
				select {
				case <-flooding:
					return
				case <-time.After(time.Second):
				}
				if _, err := o.cl.Renew(ctx, o.lease, 0); err != nil {
					t.Errorf("owner %s: renewal before the flood: %v", o.name, err)
				}
			}
		}()
	}

	// The flood: this test binary again, running TestBusyFloodHelper.
	flood := exec.Command(os.Args[0], "-test.run=^TestBusyFloodHelper$", "-test.v")
	flood.Env = append(os.Environ(), floodAddrEnv+"="+base[len("http://"):])
	stdin, err := flood.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out zktest.Buffer
	flood.Stdout, flood.Stderr = &out, &out
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	defer flood.Process.Kill()
	zktest.Eventually(t, 30*time.Second, "the flood starting", func() bool { return strings.Contains(out.String(), "flooding") })
	floodStarted()
	warming.Wait()

	// Each owner renews every second for 12s from the start of the flood.
	var owned sync.WaitGroup
	for _, o := range owners {
		owned.Add(1)
		go func() {
			defer owned.Done()
			o.renew(ctx, ttl, 12*time.Second)
		}()
	}
	owned.Wait()
	stdin.Close() // the flood ends
	if err := flood.Wait(); err != nil {
		t.Errorf("the flood: %v\n%s", err, out.String())
	}
	m := floodRE.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the flood did not say what it opened:\n%s", out.String())
	}
	t.Logf("flood: %s blocking reads, %s slow bodies, %s idle and %s dribbling connections opened", m[1], m[2], m[3], m[4])
	for i, least := range []int{300, 300, 1000, 300} {
		if n, _ := strconv.Atoi(m[i+1]); n < least {
			t.Errorf("the flood opened %d connections of its kind %d, fewer than the %d it was to hold", n, i, least)
		}
	}
	for _, o := range owners {
		t.Logf("owner %s: %d renewals in %d attempts (%.2f), each answered within %v, the longest between two successes %v",
			o.name, o.rounds, o.attempts, float64(o.rounds)/float64(o.attempts), o.slowest.Round(time.Millisecond), o.gap.Round(time.Millisecond))
		for _, r := range o.retried {
			t.Logf("owner %s retried %s", o.name, r)
		}
		if o.err != nil {
			t.Errorf("owner %s: %v", o.name, o.err)
		}
	}
}

// floodAddrEnv names the daemon TestBusyFloodHelper floods.
const floodAddrEnv = "SEQD_TEST_FLOOD_ADDR"

var floodRE = regexp.MustCompile(`opened (\d+) (\d+) (\d+) (\d+)`)

// TestBusyFloodHelper is the flood of TestBusyFloodKeepsLeasesAlive, run in
// a process of its own; it floods until its standard input closes, then
// prints how many connections of each kind it opened.
func TestBusyFloodHelper(t *testing.T) {
	addr := os.Getenv(floodAddrEnv)
	if addr == "" {
		t.Skip("the flood of TestBusyFloodKeepsLeasesAlive, run by it")
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened [4]atomic.Int64
	attack := func(kind, n int, conn func(c net.Conn, i int)) {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err == nil {
						opened[kind].Add(1)
						closeOnStop(c, stop, func() { conn(c, i) })
					}
					select { // a pause before the next, not to spin on a loaded machine
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}()
		}
	}
	// Blocking reads on names nobody holds, each until answered or closed.
	attack(0, 300, func(c net.Conn, i int) {
		fmt.Fprintf(c, "GET /v1/locks/busy-%d?index=0&wait=60s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", i)
		bufio.NewReader(c).ReadByte()
	})
	// Bodies of renewals sent a byte a second.
	attack(1, 300, func(c net.Conn, i int) {
		if _, err := fmt.Fprintf(c, "POST /v1/locks/busy-kept/renew HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"); err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	})
	// Idle connections, until closed.
	attack(2, 1000, func(c net.Conn, i int) {
		bufio.NewReader(c).ReadByte()
	})
	// Headers dribbled a byte every 100ms.
	attack(3, 300, func(c net.Conn, i int) {
		if _, err := io.WriteString(c, "GET /v1/locks/busy-kept HTTP/1.1\r\n"); err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte("X")); err != nil {
				return
			}
		}
	})
	fmt.Println("flooding")
	io.Copy(io.Discard, os.Stdin)
	close(stop)
	wg.Wait()
	fmt.Printf("opened %d %d %d %d\n", opened[0].Load(), opened[1].Load(), opened[2].Load(), opened[3].Load())
}

// owner renews a lease during the flood.
type owner struct {
	name  string
	fresh bool // a new connection for every request
	cl    *client.Client
	lease api.Lease

	rounds, attempts int
	slowest, gap     time.Duration
	retried          []string // why the first few retries were needed
	err              error
}

// renew renews o's lease every second for d, waiting for each answer as
// long as the lease may still be alive and retrying at once a renewal whose
// connection broke; it stops at the first renewal that fails for good.
func (o *owner) renew(ctx context.Context, ttl, d time.Duration) {
	last := time.Now()
	for end := time.Now().Add(d); time.Now().Before(end); {
		o.rounds++
		for {
			o.attempts++
			start := time.Now()
			actx, cancel := context.WithDeadline(ctx, last.Add(ttl))
			_, err := o.cl.Renew(actx, o.lease, 0)
			cancel()
			o.slowest = max(o.slowest, time.Since(start))
			if err == nil {
				break
			}
			if len(o.retried) < 3 {
				o.retried = append(o.retried, fmt.Sprintf("renewal %d: %v", o.rounds, err))
			}
			var ae *api.APIError
			if errors.As(err, &ae) && ae.Status == http.StatusConflict || time.Since(last) >= ttl {
				o.err = fmt.Errorf("renewal %d failed %v after the last success (TTL %v; %d attempts in all): %w", o.rounds, time.Since(last).Round(time.Millisecond), ttl, o.attempts, err)
				return
			}
		}
		o.gap = max(o.gap, time.Since(last))
		last = time.Now()
		// A client's renewal cadence (TTL/3), in real time as a deployed
		// client's is: the flood must not stretch the gap between two
		// answered renewals past the TTL.
		time.Sleep(time.Second)
	}
}

// closeOnStop runs f on c and closes c when f returns or stop closes,
// whichever is first.
func closeOnStop(c net.Conn, stop <-chan struct{}, f func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-done:
		}
		c.Close()
	}()
	f()
	close(done)
}

// startLimited runs the seqd binary bin with serve and args under
// prlimit's file descriptor limit nofile, and returns its base URL. It is
// stopped when the test ends, or earlier by stopLimited.
func startLimited(t *testing.T, bin string, nofile int, args ...string) string {
	base, _ := startLimitedStop(t, bin, nofile, args...)
	return base
}

// startLimitedStop is startLimited, with a stop for an earlier end.
func startLimitedStop(t *testing.T, bin string, nofile int, args ...string) (base string, stop func()) {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to run the daemon with few descriptors: %v", err)
	}
	stderr := &addrWriter{addr: make(chan string, 1)}
	cmd := exec.Command(prlimit, append([]string{fmt.Sprintf("--nofile=%d", nofile), "--", bin, "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("seqd serve stderr (tail):\n%s", tail(stderr.String(), 3000))
			}
		})
	}
	t.Cleanup(stop)
	var addr string
	zktest.Eventually(t, 30*time.Second, "the daemon listening", func() bool {
		m := listenRE.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return "http://" + addr, stop
}

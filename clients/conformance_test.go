package clients_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv/zktest"
)

// conformanceSecret is the API token every conformance client sends; no
// error, printout or log line of a client may show it.
const conformanceSecret = "conformance-secret-7f3a9c"

// result is one line of a runner's results file.
type result struct {
	ID       string `json:"id"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
}

// runConformance plays every vector of clients/conformance/vectors.json
// against one client's runner (run in dir), which writes one JSON result
// per vector to the file named by SEQD_CONFORMANCE_RESULTS. The test
// fails for every vector the runner failed or left out.
//
// The runner's environment:
//
//	SEQD_CONFORMANCE_ADDR        the hostile daemon, http://127.0.0.1:PORT
//	SEQD_CONFORMANCE_TLS_ADDR    the same on https, with a certificate no CA the client trusts signed
//	SEQD_CONFORMANCE_VECTORS     the vectors file
//	SEQD_CONFORMANCE_TOKEN_FILE  the API token the client sends
//	SEQD_CONFORMANCE_SECRET      that token, which the runner looks for in what the client prints
//	SEQD_CONFORMANCE_RESULTS     where the runner writes its results
//	SEQD_CONFORMANCE_ONLY        (optional, passed on) the ids to run, comma-separated
func runConformance(t *testing.T, dir string, timeout time.Duration, name string, args ...string) {
	t.Helper()
	c := startConformance(t)
	resultsFile := filepath.Join(t.TempDir(), "results.jsonl")
	out, runErr := run(t, timeout, dir, []string{
		"SEQD_CONFORMANCE_ADDR=" + c.addr,
		"SEQD_CONFORMANCE_TLS_ADDR=" + c.tlsAddr,
		"SEQD_CONFORMANCE_VECTORS=" + abs(t, "conformance/vectors.json"),
		"SEQD_CONFORMANCE_TOKEN_FILE=" + c.tokenFile,
		"SEQD_CONFORMANCE_SECRET=" + conformanceSecret,
		"SEQD_CONFORMANCE_RESULTS=" + resultsFile,
		"SEQD_CONFORMANCE_ONLY=" + os.Getenv("SEQD_CONFORMANCE_ONLY"),
	}, name, args...)
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out.all)
	got := map[string]result{}
	if f, err := os.Open(resultsFile); err == nil {
		for sc := bufio.NewScanner(f); sc.Scan(); {
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("results line %q: %v", sc.Text(), err)
				continue
			}
			got[r.ID] = r
		}
		f.Close()
	}
	failed := 0
	for _, v := range c.vectors {
		r, ok := got[v.ID]
		switch {
		case !ok:
			t.Errorf("vector %s: the runner reported no result", v.ID)
			failed++
		case !r.Pass:
			t.Errorf("vector %s (%s): got %s, want %s", v.ID, v.About, r.Observed, r.Expected)
			failed++
		}
		delete(got, v.ID)
	}
	// A runner may play vectors a second time, through another API of its
	// client (Java's SeqdLock), as rows of ids of its own.
	for id, r := range got {
		if !r.Pass && !slices.ContainsFunc(c.all, func(v vector) bool { return v.ID == id }) {
			t.Errorf("%s: got %s, want %s", id, r.Observed, r.Expected)
			failed++
		}
	}
	if runErr != nil && failed == 0 {
		t.Errorf("%s failed (%v) although every vector passed", name, runErr)
	}
}

// conformance is a hostile daemon playing the vectors, and the API token
// file a client sends.
type conformance struct {
	addr, tlsAddr, tokenFile string
	all                      []vector // every vector of the file
	vectors                  []vector // those to play: SEQD_CONFORMANCE_ONLY's, or all
}

func startConformance(t *testing.T) conformance {
	t.Helper()
	vf := loadVectors(t)
	c := conformance{all: vf.Vectors, tokenFile: filepath.Join(t.TempDir(), "api-token")}
	c.addr, c.tlsAddr = startHostile(t, vf)
	writeFile(t, c.tokenFile, conformanceSecret+"\n")
	only := strings.Split(os.Getenv("SEQD_CONFORMANCE_ONLY"), ",")
	for _, v := range vf.Vectors {
		if len(only) == 1 && only[0] == "" || slices.Contains(only, v.ID) {
			c.vectors = append(c.vectors, v)
		}
	}
	return c
}

// TestPythonConformance runs the vectors through the Python client
// (clients/python/tests/conformance.py).
//
// The conformance tests run in parallel with one another: they mostly wait
// (on stalls, deadlines), each against a hostile daemon of its own.
func TestPythonConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, "python", 3*time.Minute, python(t), "-m", "tests.conformance")
}

// TestPythonAsyncConformance runs the vectors through the Python asyncio
// client, seqd.aio (clients/python/tests/conformance_aio.py).
func TestPythonAsyncConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, "python", 3*time.Minute, python(t), "-m", "tests.conformance_aio")
}

// TestJSConformance runs the vectors through the JavaScript client
// (clients/js/test/conformance.js).
func TestJSConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, "js", 3*time.Minute, node(t), "test/conformance.js")
}

// TestJavaConformance runs the vectors through the Java client
// (clients/java/src/test/java/dev/seqd/client/Conformance.java).
func TestJavaConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, "java", 5*time.Minute, "bash", "build.sh", "conformance")
}

func (v vector) expected() string {
	e := v.Expect
	s := e.Result
	for _, p := range [][2]string{{"token=%s", e.Token}, {"reason='%s'", e.Reason}, {"quotes='%s'", e.Quotes}} {
		if p[1] != "" {
			s += " " + fmt.Sprintf(p[0], p[1])
		}
	}
	if e.Within != nil {
		s += fmt.Sprintf(" within %vs", *e.Within)
	}
	if e.For != 0 {
		s += fmt.Sprintf(" for %vs", e.For)
	}
	return s
}

// goRunner plays the vectors through the Go client (package client).
type goRunner struct {
	addr, tlsAddr, tokenFile string
	logs                     *zktest.Buffer // what the standard logger got meanwhile
}

const goMargin = 5 * time.Second // what a call may take beyond its wait

// TestGoConformance runs the vectors of clients/conformance/vectors.json
// through the Go client, in this test binary: the same hostile daemon and
// table as the other clients' runners.
func TestGoConformance(t *testing.T) {
	t.Parallel()
	c := startConformance(t)
	r := &goRunner{addr: c.addr, tlsAddr: c.tlsAddr, tokenFile: c.tokenFile, logs: &zktest.Buffer{}}
	prev := log.Writer()
	log.SetOutput(r.logs)
	defer log.SetOutput(prev)
	var table strings.Builder
	pass := 0
	for _, v := range c.vectors {
		ok, observed := r.guarded(v)
		word := "FAIL"
		if ok {
			word, pass = "PASS", pass+1
		} else {
			t.Errorf("vector %s (%s): got %s, want %s", v.ID, v.About, observed, v.expected())
		}
		fmt.Fprintf(&table, "%s  %-26s want %-40s got %s\n", word, v.ID, v.expected(), observed)
	}
	t.Logf("go client:\n%sgo client: %d/%d vectors pass", table.String(), pass, len(c.vectors))
}

// guarded plays a vector in a goroutine of its own, so that a call that
// never returns fails that vector and not the whole run.
func (r *goRunner) guarded(v vector) (bool, string) {
	play := map[string]func(vector) (bool, string){"acquire": r.acquire, "hold": r.hold, "keepalive": r.keepalive, "print": r.print, "logs": r.logLines}[v.Op]
	if play == nil {
		return false, "unknown op " + v.Op
	}
	done := make(chan [2]any, 1)
	go func() {
		ok, observed := play(v)
		done <- [2]any{ok, observed}
	}()
	select {
	case o := <-done:
		return o[0].(bool), o[1].(string)
	case <-time.After(20 * time.Second):
		return false, "no return after 20s"
	}
}

func (r *goRunner) client(tls bool) *client.Client {
	addr := r.addr
	if tls {
		addr = r.tlsAddr
	}
	c, err := client.New(addr, client.WithoutEnv(), client.WithAPITokenFile(r.tokenFile), client.WithDefaultOwner("conformance"))
	if err != nil {
		panic(err)
	}
	return c
}

func shownSecret(texts ...string) bool {
	for _, s := range texts {
		if strings.Contains(s, conformanceSecret) {
			return true
		}
	}
	return false
}

func duration(s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// checkError says whether a failed call failed as the vector wants.
func (r *goRunner) checkError(v vector, c *client.Client, err error, took time.Duration) (bool, string) {
	e := v.Expect
	msg := err.Error()
	observed := fmt.Sprintf("%T after %.2fs: %.150s", errors.Unwrap(err), took.Seconds(), msg)
	if pe := (*client.ProtocolError)(nil); errors.As(err, &pe) {
		observed = fmt.Sprintf("*client.ProtocolError after %.2fs: %.150s", took.Seconds(), msg)
	}
	if e.Result != "protocol_error" && e.Result != "error" {
		return false, observed
	}
	within := duration(v.Wait, 0) + goMargin
	if e.Within != nil {
		within = time.Duration(*e.Within * float64(time.Second))
	}
	ok := took <= within && !shownSecret(msg, fmt.Sprintf("%#v", err))
	if e.Result == "protocol_error" {
		u, _ := url.Parse(c.Addr())
		ok = ok && errors.Is(err, client.ErrProtocol) && strings.Contains(msg, u.Host)
		if e.Quotes != "" {
			ok = ok && strings.Contains(msg, e.Quotes)
		}
	}
	if e.Reason != "" {
		ok = ok && strings.Contains(strings.ToLower(msg), strings.ToLower(e.Reason))
	}
	if shownSecret(msg, fmt.Sprintf("%#v", err)) {
		observed += " [shows the API token]"
	}
	return ok, observed
}

func (r *goRunner) acquire(v vector) (bool, string) {
	c := r.client(v.TLS)
	start := time.Now()
	l, err := c.Acquire(context.Background(), "conformance/"+v.ID, client.TTL(15*time.Second),
		client.Wait(duration(v.Wait, 0)), client.LeaseID(api.NewLeaseID()))
	if err != nil {
		return r.checkError(v, c, err, time.Since(start))
	}
	return v.Expect.Result == "grant" && fmt.Sprint(l.Token) == v.Expect.Token,
		fmt.Sprintf("grant token=%d after %.2fs", l.Token, time.Since(start).Seconds())
}

func (r *goRunner) hold(v vector) (bool, string) {
	e := v.Expect
	name := "conformance/" + v.ID
	c := r.client(false)
	ttl := duration(v.TTL, time.Second)
	start := time.Now()
	h, err := c.Hold(context.Background(), name, client.TTL(ttl))
	if err != nil {
		ok, observed := r.checkError(v, c, err, time.Since(start))
		return ok, "Hold: " + observed
	}
	defer h.Release(context.Background())
	if e.Result == "protocol_error" || e.Result == "error" {
		return false, fmt.Sprintf("Hold held it, token=%d", h.Lease().Token)
	}
	t0 := time.Now()
	if e.Result == "held" {
		// The vector, shared with the other languages' runners, says how
		// long the lease must stay held against this daemon: its TTLs run
		// on the daemon's real clock, so the runner waits that long.
		time.Sleep(time.Duration(e.For * float64(time.Second)))
		n := r.stats(name)["renews"]
		select {
		case <-h.Lost():
			return false, fmt.Sprintf("lost (%v) after %vs, %d renewals answered", h.Err(), e.For, n)
		default:
		}
		return n >= 2, fmt.Sprintf("held after %vs, %d renewals answered", e.For, n)
	}
	within := time.Duration(*e.Within * float64(time.Second))
	select {
	case <-h.Lost():
	case <-time.After(within + ttl + 2*time.Second):
		return false, fmt.Sprintf("<-Lost() did not return within %.2fs", time.Since(t0).Seconds())
	}
	took := time.Since(t0)
	time.Sleep(50 * time.Millisecond) // the loss is final: a late answer must not bring the lease back
	reason := fmt.Sprint(h.Err())
	observed := fmt.Sprintf("lost after %.2fs: %.150s", took.Seconds(), reason)
	ok := took <= within && h.Err() != nil && h.SafeFor() == 0
	if e.Reason != "" {
		ok = ok && strings.Contains(strings.ToLower(reason), strings.ToLower(e.Reason))
	}
	if shownSecret(reason) {
		observed += " [shows the API token]"
		ok = false
	}
	return ok, observed
}

func (r *goRunner) stats(name string) map[string]int {
	resp, err := http.Get(r.addr + "/conformance/stats?name=" + url.QueryEscape(name))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var m map[string]int
	json.NewDecoder(resp.Body).Decode(&m)
	return m
}

func (r *goRunner) keepalive(v vector) (bool, string) {
	name := "conformance/" + v.ID
	c := r.client(false)
	h, err := c.Hold(context.Background(), name, client.TTL(duration(v.TTL, time.Second)))
	if err != nil {
		return false, "Hold: " + err.Error()
	}
	// Three requests (the acquire and two renewals) are the event, the
	// release the fourth; the vector's time bounds the wait for them.
	deadline := time.Now().Add(time.Duration(v.Expect.For*float64(time.Second)) + 5*time.Second)
	for r.stats(name)["posts"] < 3 && time.Now().Before(deadline) {
		select {
		case <-h.Lost():
			return false, fmt.Sprintf("lost (%v) before three requests", h.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	h.Release(context.Background())
	s := r.stats(name)
	return s["posts"] >= 4 && s["connections"] == 1, fmt.Sprintf("%d requests on %d connection(s)", s["posts"], s["connections"])
}

func (r *goRunner) print(v vector) (bool, string) {
	c := r.client(false)
	texts := []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)}
	h, err := c.Hold(context.Background(), "conformance/"+v.ID, client.TTL(15*time.Second))
	if err != nil {
		return false, "Hold: " + err.Error()
	}
	texts = append(texts, fmt.Sprintf("%+v", h.Lease()), fmt.Sprintf("%#v", h.Lease()))
	h.Release(context.Background())
	for _, n := range []string{"grant-echo-token", "grant-401-echo-token"} {
		if _, err := c.Acquire(context.Background(), "conformance/"+n); err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		}
	}
	bad, first := 0, ""
	for _, s := range texts {
		if shownSecret(s) {
			if bad++; bad == 1 {
				first = ": " + s[:min(80, len(s))]
			}
		}
	}
	return bad == 0, fmt.Sprintf("%d printouts, %d show the API token%s", len(texts), bad, first)
}

func (r *goRunner) logLines(vector) (bool, string) {
	lines := strings.Count(r.logs.String(), "\n")
	if shownSecret(r.logs.String()) {
		return false, fmt.Sprintf("%d log lines, some show the API token", lines)
	}
	return true, fmt.Sprintf("%d log lines, 0 show the API token", lines)
}

// Every client renews at the cadence the wire contract states: each
// language's lease names the divisors as constants equal to api's (the Go
// client uses api's own).
func TestRenewCadenceMirrored(t *testing.T) {
	for _, c := range []struct {
		file string
		re   string
		want int
	}{
		{"java/src/main/java/dev/seqd/client/Lease.java", `static final int RENEW_DIVISOR = (\d+);`, api.RenewDivisor},
		{"java/src/main/java/dev/seqd/client/Lease.java", `static final int RETRY_DIVISOR = (\d+);`, api.RetryDivisor},
		{"js/lib/lease.js", `export const RENEW_DIVISOR = (\d+);`, api.RenewDivisor},
		{"js/lib/lease.js", `export const RETRY_DIVISOR = (\d+);`, api.RetryDivisor},
		{"python/seqd/_lease.py", `(?m)^RENEW_DIVISOR = (\d+)$`, api.RenewDivisor},
		{"python/seqd/_lease.py", `(?m)^RETRY_DIVISOR = (\d+)$`, api.RetryDivisor},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.re).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no %s: the lease must name the divisor the daemon's api states", c.file, c.re)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != c.want {
			t.Errorf("%s: %s is %d, want api's %d", c.file, c.re, got, c.want)
		}
	}
}

// The control of the cadence vector: the daemon's check refuses a client
// that renewed later than the bound, or never, and passes one in time.
func TestRenewedByCatchesALateClient(t *testing.T) {
	ttl := 6 * time.Second
	for _, c := range []struct {
		renews int
		first  time.Duration
		ok     bool
	}{
		{1, api.RenewInterval(ttl), true},
		{2, ttl / 2, true},
		{1, ttl/2 + time.Millisecond, false}, // renews at half the TTL and a bit
		{1, 2 * ttl / 3, false},
		{0, 0, false},
	} {
		why := renewedBy(&nameStats{Renews: c.renews, firstRenew: c.first}, ttl.Seconds()/2)
		if (why == "") != c.ok {
			t.Errorf("%d renewals, the first after %v: %q, want ok=%v", c.renews, c.first, why, c.ok)
		}
	}
}

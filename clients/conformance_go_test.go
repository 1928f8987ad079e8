package clients_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/testenv/zktest"
)

// goVector is a vector as the Go runner reads it.
type goVector struct {
	vector
	Wait   string `json:"wait"`
	TTL    string `json:"ttl"`
	TLS    bool   `json:"tls"`
	Expect struct {
		Result string   `json:"result"`
		Token  string   `json:"token"`
		Reason string   `json:"reason"`
		Quotes string   `json:"quotes"`
		Within *float64 `json:"within"`
		For    float64  `json:"for"`
	} `json:"expect"`
}

func (v goVector) expected() string {
	e := v.Expect
	parts := []string{e.Result}
	if e.Token != "" {
		parts = append(parts, "token="+e.Token)
	}
	if e.Reason != "" {
		parts = append(parts, fmt.Sprintf("reason='%s'", e.Reason))
	}
	if e.Quotes != "" {
		parts = append(parts, fmt.Sprintf("quotes='%s'", e.Quotes))
	}
	if e.Within != nil {
		parts = append(parts, fmt.Sprintf("within %vs", *e.Within))
	}
	if e.For != 0 {
		parts = append(parts, fmt.Sprintf("for %vs", e.For))
	}
	return strings.Join(parts, " ")
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
	b, err := os.ReadFile("conformance/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Token   string     `json:"token"`
		Vectors []goVector `json:"vectors"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	vf := vectorFile{Token: f.Token}
	for _, v := range f.Vectors {
		vf.Vectors = append(vf.Vectors, v.vector)
	}
	plain, secure := startHostile(t, vf)
	tokenFile := filepath.Join(t.TempDir(), "api-token")
	if err := os.WriteFile(tokenFile, []byte(conformanceSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &goRunner{addr: plain, tlsAddr: secure, tokenFile: tokenFile, logs: &zktest.Buffer{}}
	prev := log.Writer()
	log.SetOutput(r.logs)
	defer log.SetOutput(prev)
	only := map[string]bool{}
	for _, id := range strings.Split(os.Getenv("SEQD_CONFORMANCE_ONLY"), ",") {
		if id != "" {
			only[id] = true
		}
	}
	var table strings.Builder
	pass, n := 0, 0
	for _, v := range f.Vectors {
		if len(only) > 0 && !only[v.ID] {
			continue
		}
		ok, observed := r.guarded(v)
		n++
		word := "FAIL"
		if ok {
			word, pass = "PASS", pass+1
		} else {
			t.Errorf("vector %s (%s): got %s, want %s", v.ID, v.About, observed, v.expected())
		}
		fmt.Fprintf(&table, "%s  %-26s want %-40s got %s\n", word, v.ID, v.expected(), observed)
	}
	t.Logf("go client:\n%sgo client: %d/%d vectors pass", table.String(), pass, n)
}

// guarded plays a vector in a goroutine of its own, so that a call that
// never returns fails that vector and not the whole run.
func (r *goRunner) guarded(v goVector) (bool, string) {
	type outcome struct {
		ok       bool
		observed string
	}
	done := make(chan outcome, 1)
	go func() {
		ok, obs := r.play(v)
		done <- outcome{ok, obs}
	}()
	select {
	case o := <-done:
		return o.ok, o.observed
	case <-time.After(20 * time.Second):
		return false, "no return after 20s"
	}
}

func (r *goRunner) play(v goVector) (bool, string) {
	switch v.Op {
	case "acquire":
		return r.acquire(v)
	case "hold":
		return r.hold(v)
	case "keepalive":
		return r.keepalive(v)
	case "print":
		return r.print(v)
	case "logs":
		return r.logLines()
	}
	return false, "unknown op " + v.Op
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
func (r *goRunner) checkError(v goVector, c *client.Client, err error, took time.Duration) (bool, string) {
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

func (r *goRunner) acquire(v goVector) (bool, string) {
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

func (r *goRunner) hold(v goVector) (bool, string) {
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

func (r *goRunner) keepalive(v goVector) (bool, string) {
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

func (r *goRunner) print(v goVector) (bool, string) {
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
	bad := 0
	first := ""
	for _, s := range texts {
		if strings.Contains(s, conformanceSecret) {
			if bad == 0 {
				first = ": " + s[:min(80, len(s))]
			}
			bad++
		}
	}
	return bad == 0, fmt.Sprintf("%d printouts, %d show the API token%s", len(texts), bad, first)
}

func (r *goRunner) logLines() (bool, string) {
	lines := strings.Count(r.logs.String(), "\n")
	if shownSecret(r.logs.String()) {
		return false, fmt.Sprintf("%d log lines, some show the API token", lines)
	}
	return true, fmt.Sprintf("%d log lines, 0 show the API token", lines)
}

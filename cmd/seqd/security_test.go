package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

// TestSignedSequencersEndToEnd: keygen writes a key pair; a daemon with the
// signing key hands out signed sequencers; a store with the public key and
// a guard admits the holder's sequencer and refuses a bare huge token (403,
// nothing moves), which would have locked an unsigned store for ever.
func TestSignedSequencersEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	keys := t.TempDir()
	if code, out, errs := runCLI(ctx, "keygen", "--dir", keys, "--kid", "k2026"); code != 0 {
		t.Fatalf("keygen = %d\n%s%s", code, out, errs)
	}
	st, err := os.Stat(filepath.Join(keys, "signing.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("signing.key: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	if code, _, errs := runCLI(ctx, "keygen", "--dir", keys); code != ExitUsage || !strings.Contains(errs, "exists") {
		t.Fatalf("keygen over an existing key = %d %q, want 64 and no overwrite", code, errs)
	}

	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-signed", "--signing-key-file", filepath.Join(keys, "signing.key"))
	code, out, errs := runCLI(ctx, "acquire", "--addr", addr, "--owner", "A", "jobs/orders")
	if code != 0 {
		t.Fatalf("acquire = %d %s", code, errs)
	}
	var l api.Lease
	if err := json.Unmarshal([]byte(out), &l); err != nil || !strings.Contains(l.Sequencer, ".k2026.") {
		t.Fatalf("lease %s (%v): want a sequencer signed with key k2026", out, err)
	}

	storeAddr := startInProcessStore(t, "--verify-keys-file", filepath.Join(keys, "verify.keys"), "--guard", "orders/=jobs/orders")
	put := func(header, value string) int {
		req, _ := http.NewRequest("PUT", "http://"+storeAddr+"/v1/kv/orders/1", strings.NewReader("v"))
		req.Header.Set(header, value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := put("Fencing-Token", "18446744073709551615"); got != http.StatusForbidden {
		t.Fatalf("a bare huge token = %d, want 403", got)
	}
	if got := put("Fencing-Sequencer", l.Sequencer); got != http.StatusOK {
		t.Fatalf("the holder's signed sequencer = %d, want 200", got)
	}
}

// startInProcessStore runs `seqd store` in process with args and returns its
// address.
func startInProcessStore(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &addrWriter{addr: make(chan string, 1)}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		run(ctx, append([]string{"seqd", "store", "--dir", t.TempDir(), "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() { cancel(); <-exited })
	select {
	case addr := <-stderr.addr:
		return addr
	case <-exited:
		t.Fatalf("seqd store returned before listening\n%s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("seqd store did not log its address\n%s", stderr)
	}
	return ""
}

// TestServeTLS: the daemon serves HTTPS and requires client certificates;
// the client commands reach it with --cacert, --cert and --key, and are
// refused without a certificate; plain HTTP to the TLS port gets no lease.
func TestServeTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	ca, err := testenv.NewCA(dir, "seqd")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, _ := ca.Issue("daemon", true)
	cliCert, cliKey, _ := ca.Issue("client", false)
	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString(), "--root", "/seqd-tls",
		"--tls-cert-file", srvCert, "--tls-key-file", srvKey, "--tls-client-ca-file", ca.CertFile)
	https := strings.Replace(addr, "http://", "https://", 1)

	code, out, errs := runCLI(ctx, "acquire", "--addr", https, "--cacert", ca.CertFile, "--cert", cliCert, "--key", cliKey, "--token-only", "tls/lock")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("acquire over mTLS = %d %q %s", code, out, errs)
	}
	if code, _, errs := runCLI(ctx, "status", "--addr", https, "--cacert", ca.CertFile, "tls/lock"); code == 0 {
		t.Fatalf("status without a client certificate = 0, want refused\n%s", errs)
	}
	resp, err := http.Post(addr+"/v1/locks/plain/acquire", "application/json", strings.NewReader(`{"owner":"P"}`))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP to the TLS port was granted a lease: %s", b)
		}
	}
}

// TestTokenFilesMustBeSecret: a bearer token file others can read, or a
// short token, is a usage error, for the daemon and the store alike.
func TestTokenFilesMustBeSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), mode)
		os.Chmod(p, mode)
		return p
	}
	readable := write("readable", "0123456789abcdef0123", 0o644)
	short := write("short", "abc", 0o600)
	for _, args := range [][]string{
		{"serve", "--zk", "127.0.0.1:1", "--api-token-file", readable},
		{"serve", "--zk", "127.0.0.1:1", "--api-token-file", short},
		{"store", "--dir", t.TempDir(), "--api-token-file", readable},
		{"status", "--api-token-file", short, "x"},
	} {
		if code, _, errs := runCLI(ctx, args...); code != ExitUsage {
			t.Errorf("seqd %s = %d (%s), want 64", strings.Join(args, " "), code, strings.TrimSpace(errs))
		}
	}
}

// TestConnectionFlood runs the daemon with 256 file descriptors and opens
// thousands of connections that send nothing or dribble their headers: a
// lease owner keeps renewing all along, /readyz stays ready, and the daemon
// reconnects after a ZooKeeper restart. The control lifts the connection cap
// above the descriptor limit: the descriptors run out and the owner's
// renewals fail.
func TestConnectionFlood(t *testing.T) {
	bin := buildSeqd(t)
	zkc := zktest.StartT(t, testenv.Options{})
	if err := flood(t, bin, zkc, true); err != nil {
		t.Fatal(err)
	}
	if err := flood(t, bin, zkc, false); err == nil {
		t.Fatal("with no connection cap the flood did no harm: the check cannot fail")
	} else {
		t.Logf("control, no cap: %v", err)
	}
}

func flood(t *testing.T, bin string, zkc *testenv.Cluster, capped bool) error {
	t.Helper()
	args := []string{"--zk", zkc.ConnectString(), "--root", "/seqd-flood", "--session-timeout", "10s"}
	if !capped {
		args = append(args, "--max-connections", "100000")
	}
	base, stopDaemon := startLimitedStop(t, bin, 256, args...)
	defer stopDaemon()
	addr := strings.TrimPrefix(base, "http://")
	cl, err := client.New(base, client.WithoutEnv(), client.WithHTTPClient(&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	name := fmt.Sprintf("flood-%v", capped)
	l, err := cl.Acquire(ctx, name, client.Owner("owner"), client.TTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	// The flood: idle connections and header dribblers, held open.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened atomic.Int64
	for i := range 3000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return
			}
			opened.Add(1)
			defer c.Close()
			if i%3 == 0 {
				c.Write([]byte("POST /v1/locks/x/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
			}
			select {
			case <-stop:
			case <-time.After(60 * time.Second):
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	// The owner renews every 500ms and, as any client must, retries a
	// renewal whose connection broke; the lease must never lapse (6s TTL).
	renewals, retries, unready := 0, 0, 0
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		last := time.Now()
		for {
			_, err := cl.Renew(ctx, l, 0)
			if err == nil {
				break
			}
			var ae *api.APIError
			if errors.As(err, &ae) && ae.Status == http.StatusConflict || time.Since(last) > 4*time.Second {
				return fmt.Errorf("during the flood, renew failed after %d renewals: %w", renewals, err)
			}
			retries++
		}
		renewals++
		if code, _ := probe(base + "/readyz"); code != 200 {
			unready++
		}
		// The owner's renewal cadence, in real time as a deployed
		// client's is: what is measured is whether each renewal is
		// answered in time under the flood.
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("capped=%v: %d flood connections opened; %d renewals (%d retried), %d ready probes not answered ready", capped, opened.Load(), renewals, retries, unready)
	if unready > 0 {
		return fmt.Errorf("/readyz was not ready %d times during the flood", unready)
	}

	// ZooKeeper restarts: the daemon needs a descriptor to reconnect.
	m := zkc.Members[0]
	m.Stop()
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := probe(base + "/readyz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("not ready again within 30s of the ZooKeeper restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := cl.Acquire(ctx, name+"-after", client.Owner("owner"), client.TTL(6*time.Second)); err != nil {
		return fmt.Errorf("acquire after the ZooKeeper restart, during the flood: %w", err)
	}
	return nil
}

func probe(url string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("…%s", s[len(s)-n:])
}

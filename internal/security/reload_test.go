package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

func umask(m int) int { return syscall.Umask(m) }

// pair is a CA's certificate and key written to dir.
type pair struct{ cert, key string }

func writePair(t *testing.T, dir, name string, cert, key []byte) pair {
	t.Helper()
	p := pair{filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")}
	if err := os.WriteFile(p.cert, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.key, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func serverPair(t *testing.T, ca *CA) ([]byte, []byte) {
	t.Helper()
	c, k, err := ca.IssueServer(LoopbackHosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// servedSerial connects anew (no session reuse) and returns the serial of
// the certificate the server presents.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestServerTLSReloadsChangedFiles: a certificate written over the old
// one, in place or renamed into place, is served on the next connection;
// a certificate whose key has not been written yet leaves the previous one
// served until the key arrives.
func TestServerTLSReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	c1, k1 := serverPair(t, ca)
	p := writePair(t, dir, "server", c1, k1)
	var mu sync.Mutex
	var reloads []error
	cfg, err := ServerTLS(p.cert, p.key, "", OnReload(func(err error) { mu.Lock(); reloads = append(reloads, err); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	addr := ln.Addr().String()
	first := servedSerial(t, addr, roots)
	if again := servedSerial(t, addr, roots); again != first {
		t.Fatalf("unchanged files: serial %s, then %s", first, again)
	}

	// In place: the certificate first, then its key.
	c2, k2 := serverPair(t, ca)
	os.WriteFile(p.cert, c2, 0o644)
	if got := servedSerial(t, addr, roots); got != first {
		t.Errorf("certificate written, key not yet: serial %s, want the previous %s still served", got, first)
	}
	os.WriteFile(p.key, k2, 0o600)
	second := servedSerial(t, addr, roots)
	if second == first {
		t.Fatalf("certificate and key rewritten: still serial %s", first)
	}

	// Renamed into place (what mv and Kubernetes secret updates do).
	c3, k3 := serverPair(t, ca)
	q := writePair(t, dir, "next", c3, k3)
	os.Rename(q.key, p.key)
	os.Rename(q.cert, p.cert)
	if third := servedSerial(t, addr, roots); third == second || third == first {
		t.Errorf("certificate renamed into place: serial %s, want a new one", third)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reloads) < 3 || reloads[0] == nil {
		t.Errorf("reload reports %v: want a failure (certificate without its key) then successes", reloads)
	}
	if last := reloads[len(reloads)-1]; last != nil {
		t.Errorf("last reload: %v, want success", last)
	}
}

// TestServerTLSReloadsClientCA: with a new client CA file, clients of the
// new CA are served and those of the old one refused, without a restart.
func TestServerTLSReloadsClientCA(t *testing.T) {
	dir := t.TempDir()
	srvCA, oldCA, newCA := newTestCA(t), newTestCA(t), newTestCA(t)
	c, k := serverPair(t, srvCA)
	p := writePair(t, dir, "server", c, k)
	caFile := filepath.Join(dir, "clients.pem")
	os.WriteFile(caFile, oldCA.CertPEM, 0o644)
	cfg, err := ServerTLS(p.cert, p.key, caFile)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, cfg)
	caPath := filepath.Join(dir, "srv-ca.pem")
	os.WriteFile(caPath, srvCA.CertPEM, 0o644)
	get := func(ca *CA) error {
		cc, ck, _ := ca.IssueClient("client", time.Hour)
		cp := writePair(t, t.TempDir(), "client", cc, ck)
		rt, err := ClientTransport(caPath, cp.cert, cp.key)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: rt}).Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(oldCA); err != nil {
		t.Fatalf("client of the configured CA: %v", err)
	}
	if err := get(newCA); err == nil {
		t.Fatal("client of another CA was served")
	}
	os.WriteFile(caFile, newCA.CertPEM, 0o644)
	if err := get(newCA); err != nil {
		t.Errorf("client of the new CA after the CA file changed: %v", err)
	}
	var r *Refusal
	if err := get(oldCA); !errors.As(err, &r) || r.Kind != ClientCertRefused {
		t.Errorf("client of the old CA after the CA file changed: %v, want its certificate refused", err)
	}
}

// BenchmarkServerHandshake compares a full TLS 1.3 handshake (mutual TLS,
// over net.Pipe) against a fixed configuration and against ServerTLS's,
// which stats its three files each time: the cost of reloading.
func BenchmarkServerHandshake(b *testing.B) {
	dir := b.TempDir()
	ca, _ := NewCA("bench CA", time.Hour)
	sc, sk, _ := ca.IssueServer(LoopbackHosts, time.Hour)
	cc, ck, _ := ca.IssueClient("c", time.Hour)
	os.WriteFile(filepath.Join(dir, "s.pem"), sc, 0o644)
	os.WriteFile(filepath.Join(dir, "s-key.pem"), sk, 0o600)
	os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM, 0o644)
	reloading, err := ServerTLS(filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem"), filepath.Join(dir, "ca.pem"))
	if err != nil {
		b.Fatal(err)
	}
	pair, _ := tls.X509KeyPair(sc, sk)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	fixed := &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	cpair, _ := tls.X509KeyPair(cc, ck)
	clientCfg := &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{cpair}}
	for _, bc := range []struct {
		name string
		cfg  *tls.Config
	}{{"fixed", fixed}, {"reloading", reloading}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c, s := net.Pipe()
				errc := make(chan error, 1)
				go func() { errc <- tls.Server(s, bc.cfg).Handshake() }()
				cerr := tls.Client(c, clientCfg).Handshake()
				if serr := <-errc; cerr != nil || serr != nil {
					b.Fatalf("handshake: client %v, server %v", cerr, serr)
				}
				c.Close()
				s.Close()
			}
		})
	}
}

// BenchmarkReloadCheck is what ServerTLS adds to each handshake when no
// file changed: three stats and a comparison.
func BenchmarkReloadCheck(b *testing.B) {
	dir := b.TempDir()
	ca, _ := NewCA("bench CA", time.Hour)
	sc, sk, _ := ca.IssueServer(LoopbackHosts, time.Hour)
	os.WriteFile(filepath.Join(dir, "s.pem"), sc, 0o644)
	os.WriteFile(filepath.Join(dir, "s-key.pem"), sk, 0o600)
	os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM, 0o644)
	s := &serverFiles{files: [3]string{filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem"), filepath.Join(dir, "ca.pem")}}
	m, err := s.load(s.stat())
	if err != nil {
		b.Fatal(err)
	}
	s.cur.Store(m)
	for b.Loop() {
		s.current()
	}
}

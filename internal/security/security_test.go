package security

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seqd/seqd/testenv"
)

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	if tok, err := LoadToken(write("good", "0123456789abcdef0123\n", 0o600)); err != nil || tok != "0123456789abcdef0123" {
		t.Fatalf("LoadToken(good) = %q, %v", tok, err)
	}
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"world-readable": {"0123456789abcdef0123", 0o644},
		"world-writable": {"0123456789abcdef0123", 0o602},
		"short":          {"secret", 0o600},
		"empty":          {"", 0o600},
	} {
		if _, err := LoadToken(write(name, c.content, c.mode)); !errors.Is(err, ErrUnsafe) {
			t.Errorf("LoadToken(%s) = %v, want ErrUnsafe", name, err)
		}
	}
}

func TestLoadZKAuth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	if u, pw, err := LoadZKAuth(write("good", "seqd:pa:ss\n", 0o600)); err != nil || u != "seqd" || pw != "pa:ss" {
		t.Fatalf("LoadZKAuth(good) = %q, %q, %v; want seqd, pa:ss", u, pw, err)
	}
	if _, _, err := LoadZKAuth(write("readable", "seqd:pass", 0o644)); !errors.Is(err, ErrUnsafe) {
		t.Errorf("LoadZKAuth(readable by others) = %v, want ErrUnsafe", err)
	}
	for _, content := range []string{"", "seqd", ":pass", "seqd:"} {
		if _, _, err := LoadZKAuth(write("bad", content, 0o600)); err == nil {
			t.Errorf("LoadZKAuth(%q) accepted", content)
		}
	}
}

// TestMutualTLS: a server requiring client certificates serves a client
// that presents one from its CA, and refuses one without a certificate or
// with one from another CA; a client refuses a server its CA did not sign.
// serveTLS serves "ok" over TLS with cfg until the test ends and returns
// its URL. (httptest's StartTLS would add a certificate of its own, which
// crypto/tls prefers to cfg's GetCertificate for clients that send no
// server name.)
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		TLSConfig: cfg,
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := testenv.NewCA(dir, "seqd")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testenv.NewCA(dir, "other")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, _ := ca.Issue("server", true)
	cliCert, cliKey, _ := ca.Issue("client", false)
	strangerCert, strangerKey, _ := other.Issue("stranger", false)

	cfg, err := ServerTLS(srvCert, srvKey, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, cfg)

	get := func(c *tls.Config) error {
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: c}}).Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	good, err := ClientTLS(ca.CertFile, cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(good); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	noCert, _ := ClientTLS(ca.CertFile, "", "")
	if err := get(noCert); err == nil {
		t.Error("a client without a certificate was served")
	}
	stranger, _ := ClientTLS(ca.CertFile, strangerCert, strangerKey)
	if err := get(stranger); err == nil {
		t.Error("a client with another CA's certificate was served")
	}
	wrongCA, _ := ClientTLS(other.CertFile, cliCert, cliKey)
	if err := get(wrongCA); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA = %v, want a certificate error", err)
	}
	if _, err := ServerTLS("", "", ca.CertFile); err == nil {
		t.Error("a client CA without a server certificate was accepted")
	}
}

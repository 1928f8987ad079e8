package security

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestIssuedCertificatesVerify: the server certificate verifies for every
// host it was made for and for no other, only as a server; the client
// certificate only as a client; keys are PKCS#8, which every client reads.
func TestIssuedCertificatesVerify(t *testing.T) {
	ca, err := NewCA("test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := ServerHosts([]string{"seqd.example", "10.0.0.7", "SEQD.example"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"localhost", "127.0.0.1", "::1", "seqd.example", "10.0.0.7"}; !slices.Equal(hosts, want) {
		t.Fatalf("ServerHosts = %v, want %v", hosts, want)
	}
	srvPEM, srvKey, err := ca.IssueServer(hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cliPEM, cliKey, err := ca.IssueClient("c", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	parse := func(b []byte) *x509.Certificate {
		t.Helper()
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv, cli := parse(srvPEM), parse(cliPEM)
	for _, h := range hosts {
		if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: h}); err != nil {
			t.Errorf("server certificate for %s: %v", h, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
		t.Error("the server certificate verified for a host it was not made for")
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the server certificate verified as a client certificate")
	}
	if _, err := cli.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := cli.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("the client certificate verified as a server certificate")
	}
	for name, k := range map[string][]byte{"server": srvKey, "client": cliKey, "CA": ca.KeyPEM} {
		if blk, _ := pem.Decode(k); blk == nil || blk.Type != "PRIVATE KEY" {
			t.Errorf("%s key: want a PEM PRIVATE KEY (PKCS#8)", name)
		}
	}
	if _, err := tls.X509KeyPair(srvPEM, srvKey); err != nil {
		t.Errorf("server pair: %v", err)
	}
	for _, bad := range []string{"", "a..b", "-x.example", "x_y.example", "a b"} {
		if _, err := ServerHosts([]string{bad}); err == nil {
			t.Errorf("ServerHosts(%q) accepted", bad)
		}
	}
}

// TestWriteNewAllOrNothing: files get their exact modes and the directory
// 0700; an existing file, or a directory others can write, is refused and
// nothing is written.
func TestWriteNewAllOrNothing(t *testing.T) {
	old := umask(0o077)
	defer umask(old)
	dir := filepath.Join(t.TempDir(), "new")
	files := []NewFile{{"secret", []byte("s\n"), 0o600}, {"public", []byte("p\n"), 0o644}}
	if err := WriteNew(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, NewFile{Name: ".", Mode: 0o700 | os.ModeDir}) {
		st, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil || st.Mode() != f.Mode {
			t.Errorf("%s: mode %v (%v), want %v", f.Name, st.Mode(), err, f.Mode)
		}
	}

	again := []NewFile{{"other", []byte("o"), 0o600}, {"public", []byte("new"), 0o644}}
	var ee *ExistsError
	if err := WriteNew(dir, again); !errors.As(err, &ee) || !slices.Equal(ee.Names, []string{"public"}) {
		t.Fatalf("over an existing file: %v, want an ExistsError naming public", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("after a refusal the directory holds %d entries, want the 2 it had", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "public")); string(b) != "p\n" {
		t.Errorf("public was overwritten: %q", b)
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	var ue *UnsafeDirError
	if err := WriteNew(open, files); !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("a directory others can write: %v, want an UnsafeDirError", err)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Errorf("a refused directory got %d entries", len(entries))
	}
}

// Package security loads what seqd's servers and clients need to trust each
// other: bearer token files and TLS configurations from PEM files. Every
// loader refuses what would be unsafe to run with (a token file others can
// read, a short token, a client CA without a server certificate) with a
// sentence the user can act on.
package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinTokenBytes is the shortest bearer token accepted.
const MinTokenBytes = 16

// ErrUnsafe is wrapped by the errors of files that must not be used.
var ErrUnsafe = errors.New("unsafe")

// LoadToken reads a bearer token file: its first line, which must be at
// least MinTokenBytes long, in a file that not everyone can read (its owner
// and, for a Kubernetes secret mounted with fsGroup, its group may).
func LoadToken(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o007 != 0 {
		return "", fmt.Errorf("%w: %s can be read by anyone (mode %v): chmod 600 it", ErrUnsafe, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if len(tok) < MinTokenBytes {
		return "", fmt.Errorf("%w: the token in %s is %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", ErrUnsafe, path, len(tok), MinTokenBytes)
	}
	return tok, nil
}

// ClientTLS returns the TLS configuration of a client that trusts caFile
// (the system's roots if empty) and presents certFile/keyFile if given.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, errors.New("a client certificate needs both a certificate file and a key file")
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// LoadZKAuth reads a ZooKeeper digest identity from a file: one line
// "user:password" (the password may contain colons). A file that others can
// read is refused, as for tokens.
func LoadZKAuth(path string) (user, password string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", "", fmt.Errorf("%w: %s can be read by others (mode %v): chmod 600 it", ErrUnsafe, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	user, password, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok || user == "" || password == "" {
		return "", "", fmt.Errorf("%s must hold one line user:password", path)
	}
	return user, password, nil
}

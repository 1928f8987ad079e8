package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// Identities: who a caller is, for the policy, the quotas, the audit log
// and the metrics. There are three namespaces, and a name lives in one:
// the admin token names Admin; a named bearer token of the tokens file
// names the identity its line gives; a client certificate (mutual TLS)
// names what it says, unless that is Admin, Anonymous or a name of the
// tokens file, which a certificate is refused for. A caller named by none
// (the API token, or no token on a daemon without one) is Anonymous.

const (
	// Anonymous is a caller no certificate or named token names, and an
	// in-process caller that names none.
	Anonymous = "anonymous"
	// Admin is a caller with the admin token: the operator, whom no
	// policy rule or quota limits.
	Admin = "admin"
)

// maxIdentityBytes bounds an identity (a SPIFFE ID may be long).
const maxIdentityBytes = 256

// CertIdentity is the identity a client certificate names: its first URI
// SAN (a SPIFFE ID such as spiffe://example.org/team-a), else its first
// DNS SAN, else its subject's common name.
func CertIdentity(c *x509.Certificate) string {
	switch {
	case len(c.URIs) > 0:
		return c.URIs[0].String()
	case len(c.DNSNames) > 0:
		return c.DNSNames[0]
	}
	return c.Subject.CommonName
}

// ValidIdentity says what is wrong with an identity's name, "" if nothing:
// printable ASCII without spaces, so that it fits a tokens file line, a
// policy rule, an audit line and a metric label as it is.
func ValidIdentity(name string) string {
	switch {
	case name == "":
		return "an identity is empty"
	case len(name) > maxIdentityBytes:
		return fmt.Sprintf("an identity is at most %d bytes", maxIdentityBytes)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f {
			return fmt.Sprintf("identity %q has a space, a control or a non-ASCII character", name)
		}
	}
	return ""
}

// Tokens are named bearer tokens: a caller that sends one is the identity
// it names. Make them with ParseTokens or LoadTokens; the zero value names
// nobody.
type Tokens struct {
	names  []string
	hashes [][sha256.Size]byte // of each token, compared in constant time
}

// MinNamedTokenBytes is the shortest token a tokens file may hold.
const MinNamedTokenBytes = 16

// ParseTokens reads a tokens file: one "NAME TOKEN" per line, "#" comments
// and blank lines ignored. A name is an identity (as a policy names it);
// a token is at least MinNamedTokenBytes bytes without spaces. A name or
// a token given twice, or a reserved name (admin, anonymous), is refused
// with a sentence naming file and line.
func ParseTokens(file string, data []byte) (*Tokens, error) {
	t := &Tokens{}
	seenName := map[string]int{}
	seenTok := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		at := fmt.Sprintf("%s:%d", file, n)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: a line is NAME TOKEN (two words), this one has %d", at, len(f))
		}
		name, tok := f[0], f[1]
		if why := ValidIdentity(name); why != "" {
			return nil, fmt.Errorf("%s: %s", at, why)
		}
		if name == Admin || name == Anonymous {
			return nil, fmt.Errorf("%s: %q is reserved (the admin token's and an unnamed caller's identity)", at, name)
		}
		if len(tok) < MinNamedTokenBytes {
			return nil, fmt.Errorf("%s: the token of %q is %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", at, name, len(tok), MinNamedTokenBytes)
		}
		if prev, ok := seenName[name]; ok {
			return nil, fmt.Errorf("%s: %q has a token already, at line %d", at, name, prev)
		}
		h := sha256.Sum256([]byte(tok))
		if prev, ok := seenTok[h]; ok {
			return nil, fmt.Errorf("%s: the token of %q is the token of line %d: each identity needs its own", at, name, prev)
		}
		seenName[name], seenTok[h] = n, n
		t.names = append(t.names, name)
		t.hashes = append(t.hashes, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return t, nil
}

// LoadTokens reads the tokens file at path, which others must not be able
// to read.
func LoadTokens(path string) (*Tokens, error) {
	data, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	return ParseTokens(path, data)
}

// readPrivate reads a file of secrets: refused when others may read it.
func readPrivate(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("%s can be read by anyone (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	return os.ReadFile(path)
}

// Lookup is the identity whose token is tok. Every token is compared, in
// constant time, whichever matches: the time taken says nothing about
// which one is near.
func (t *Tokens) Lookup(tok string) (string, bool) {
	if t == nil || tok == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range t.hashes {
		if subtle.ConstantTimeCompare(h[:], t.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return t.names[found], true
}

// Has reports whether a token names identity id.
func (t *Tokens) Has(id string) bool {
	if t == nil {
		return false
	}
	for _, n := range t.names {
		if n == id {
			return true
		}
	}
	return false
}

// Names are the identities the tokens name.
func (t *Tokens) Names() []string {
	if t == nil {
		return nil
	}
	return append([]string(nil), t.names...)
}

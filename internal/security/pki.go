package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A CA signs the server and client certificates of one deployment: what
// seqd init makes in place of an openssl session. Keys are ECDSA P-256,
// written as PKCS#8 ("PRIVATE KEY"), which every client of seqd reads
// (Go, Python's ssl, Java's PKCS8EncodedKeySpec, Node's tls).
type CA struct {
	CertPEM, KeyPEM []byte
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// certSkew back-dates every certificate, so that a host whose clock is a
// little behind accepts it at once.
const certSkew = time.Hour

// NewCA makes a self-signed CA named name, valid for validity.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-certSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyPEM(key)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: certPEM(der), KeyPEM: keyPEM, cert: cert, key: key}, nil
}

// IssueServer returns a server certificate and its key for hosts (DNS
// names, or IP addresses), valid for validity.
func (ca *CA) IssueServer(hosts []string, validity time.Duration) (cert, key []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("a server certificate needs at least one host")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(tmpl, validity)
}

// IssueClient returns a client certificate named name and its key, valid
// for validity.
func (ca *CA) IssueClient(name string, validity time.Duration) (cert, key []byte, err error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, validity)
}

// IssueIdentity returns a client certificate that names identity as seqd
// reads it: a URI (such as a SPIFFE ID, spiffe://example.org/team-a) goes
// into a URI SAN, anything else into the subject's common name only.
func (ca *CA) IssueIdentity(identity string, validity time.Duration) (cert, key []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: identity},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if u, perr := url.Parse(identity); perr == nil && u.Scheme != "" && strings.Contains(identity, "://") {
		tmpl.URIs = []*url.URL{u}
		tmpl.Subject.CommonName = ""
	}
	return ca.issue(tmpl, validity)
}

func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration) (cert, key []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = randomSerial(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-certSkew), now.Add(validity)
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter // a leaf never outlives its CA
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &priv.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	if key, err = keyPEM(priv); err != nil {
		return nil, nil, err
	}
	return certPEM(der), key, nil
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// RandomHex is n random bytes in hex: a bearer token or a password.
func RandomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// LoopbackHosts are the names every server certificate carries, so that a
// daemon on loopback is reachable by each of them.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

var dnsLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// ServerHosts checks extra host names (DNS names, a leading "*." wildcard
// allowed, or IP addresses) and returns them after LoopbackHosts, without
// duplicates.
func ServerHosts(extra []string) ([]string, error) {
	hosts := slices.Clone(LoopbackHosts)
	for _, h := range extra {
		if err := checkHost(h); err != nil {
			return nil, err
		}
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		} else {
			h = strings.ToLower(h)
		}
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

func checkHost(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%q is not a host name or an IP address", h)
	}
	for _, label := range strings.Split(name, ".") {
		if !dnsLabel.MatchString(label) {
			return fmt.Errorf("%q is not a host name or an IP address (labels of letters, digits and '-', joined by dots)", h)
		}
	}
	return nil
}

// Package lockdown owns the files of a locked-down deployment: what seqd
// init writes into a new directory (a CA, server and client certificates,
// API and admin tokens, a signing key pair, a ZooKeeper digest identity and
// client.env), how seqd keygen adds a signing key to a directory without
// trusting a verify.keys someone else planted, and the serve and store
// command lines and environment variables that use the files.
//
// It writes files and returns what it wrote; printing them for people is
// the command's.
package lockdown

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/security"
)

// The files of a directory that seqd init wrote. SigningKeyFile and
// VerifyKeysFile are the names seqd keygen writes.
const (
	CAFile         = "ca.pem"
	CAKeyFile      = "ca-key.pem"
	ServerCertFile = "server.pem"
	ServerKeyFile  = "server-key.pem"
	ClientCertFile = "client.pem"
	ClientKeyFile  = "client-key.pem"
	APITokenFile   = "api-token"
	AdminTokenFile = "admin-token"
	ZKAuthFile     = "zk-auth"
	ClientEnvFile  = "client.env"
	SigningKeyFile = "signing.key"
	VerifyKeysFile = "verify.keys"
)

// ClientIdentity is the CN of the client certificate in ClientCertFile: an
// identity a policy can name (printable ASCII, no space), so that a rule
// for it lets client.env work under a policy.
const ClientIdentity = "seqd-client"

// Files are every file seqd init writes, in the order it lists them.
func Files() []string {
	return []string{
		CAFile, CAKeyFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile,
		APITokenFile, AdminTokenFile, SigningKeyFile, VerifyKeysFile, ZKAuthFile, ClientEnvFile,
	}
}

const (
	DefaultDays  = 365  // how long seqd init's certificates are valid by default
	MaxDays      = 3650 // and at most
	KeyID        = "k1" // the signing key's id; seqd keygen --kid names the next one
	zkDigestUser = "seqd"
	tokenBytes   = 32
)

// Dir is a directory seqd init wrote, and where its daemon and ZooKeeper
// are.
type Dir struct {
	Path string // absolute
	Addr string // the daemon's base URL, https://
	ZK   string
	// Names are the DNS names given with --host: the daemon serves /v1/
	// under them too (serve --host).
	Names []string
	// Identities are those given with --identity, each with a client
	// certificate of its own.
	Identities []string
}

// IdentityCertFiles are the certificate and key files of the i-th --identity
// (from 0).
func IdentityCertFiles(i int) (cert, key string) {
	return fmt.Sprintf("identity-%d.pem", i+1), fmt.Sprintf("identity-%d-key.pem", i+1)
}

// File is the path of the directory's file name.
func (l Dir) File(name string) string { return filepath.Join(l.Path, name) }

// DaemonURL is the https URL clients reach a daemon listening on listen
// by: its host, or for a wildcard address the first name given beyond the
// loopback ones (127.0.0.1 if none).
func DaemonURL(listen string, hosts []string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if len(hosts) > len(security.LoopbackHosts) {
			host = hosts[len(security.LoopbackHosts)]
		}
	}
	return "https://" + net.JoinHostPort(host, port)
}

// Write makes the material and writes it into l.Path: every file
// or none, never over an existing one.
func Write(l Dir, hosts []string, validity time.Duration) error {
	files, err := material(l, hosts, validity)
	if err != nil {
		return err
	}
	var exists *security.ExistsError
	var unsafe *security.UnsafeDirError
	switch err := security.WriteNew(l.Path, files); {
	case errors.As(err, &exists), errors.As(err, &unsafe):
		return exit.Usagef("%v", err)
	case err != nil:
		return fmt.Errorf("writing %s: %w", l.Path, err)
	}
	return nil
}

func material(l Dir, hosts []string, validity time.Duration) ([]security.NewFile, error) {
	host, _ := os.Hostname()
	ca, err := security.NewCA(fmt.Sprintf("seqd CA %s %s", host, time.Now().UTC().Format("2006-01-02")), validity)
	if err != nil {
		return nil, err
	}
	serverCert, serverKey, err := ca.IssueServer(hosts, validity)
	if err != nil {
		return nil, err
	}
	clientCert, clientKey, err := ca.IssueClient(ClientIdentity, validity)
	if err != nil {
		return nil, err
	}
	var secrets [3]string // API token, admin token, ZooKeeper password
	for i := range secrets {
		if secrets[i], err = security.RandomHex(tokenBytes); err != nil {
			return nil, err
		}
	}
	signing, verify, err := fence.GenerateKey(KeyID)
	if err != nil {
		return nil, err
	}
	const secret, public = 0o600, 0o644
	var idFiles []security.NewFile
	for i, id := range l.Identities {
		cert, key, err := ca.IssueIdentity(id, validity)
		if err != nil {
			return nil, err
		}
		cf, kf := IdentityCertFiles(i)
		idFiles = append(idFiles, security.NewFile{Name: cf, Data: cert, Mode: public}, security.NewFile{Name: kf, Data: key, Mode: secret})
	}
	return append([]security.NewFile{
		{Name: CAFile, Data: ca.CertPEM, Mode: public},
		{Name: CAKeyFile, Data: ca.KeyPEM, Mode: secret},
		{Name: ServerCertFile, Data: serverCert, Mode: public},
		{Name: ServerKeyFile, Data: serverKey, Mode: secret},
		{Name: ClientCertFile, Data: clientCert, Mode: public},
		{Name: ClientKeyFile, Data: clientKey, Mode: secret},
		{Name: APITokenFile, Data: []byte(secrets[0] + "\n"), Mode: secret},
		{Name: AdminTokenFile, Data: []byte(secrets[1] + "\n"), Mode: secret},
		{Name: SigningKeyFile, Data: signing, Mode: secret},
		// The header keygen writes: a later `seqd keygen --dir` in this
		// directory (a rotation) adds its key to this file.
		{Name: VerifyKeysFile, Data: append([]byte(VerifyKeysHeader), verify...), Mode: public},
		{Name: ZKAuthFile, Data: []byte(zkDigestUser + ":" + secrets[2] + "\n"), Mode: secret},
		{Name: ClientEnvFile, Data: []byte(l.ClientEnv()), Mode: public},
	}, idFiles...), nil
}

// ClientEnv is client.env: the variables every client of seqd reads (the
// CLI, the Go, Python, Java and JavaScript clients), and those of seqd
// lock, which talks to ZooKeeper itself.
func (l Dir) ClientEnv() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# seqd client settings, written by seqd init. In a shell: . %s\n", ShellWord(l.File(ClientEnvFile)))
	b.WriteString("# The CLI and the Go, Python, Java and JavaScript clients read these:\n")
	for _, kv := range l.ClientVars() {
		fmt.Fprintf(&b, "export %s\n", kv)
	}
	b.WriteString("# seqd lock and seqd campaign talk to ZooKeeper themselves, and sign the\n")
	b.WriteString("# sequencers they hand their command with the daemons' key:\n")
	for _, kv := range l.RunnerVars() {
		fmt.Fprintf(&b, "export %s\n", kv)
	}
	return b.String()
}

// ClientVars are NAME=VALUE pairs, quoted for a shell.
func (l Dir) ClientVars() []string {
	return []string{
		"SEQD_ADDR=" + ShellWord(l.Addr),
		"SEQD_API_TOKEN_FILE=" + ShellWord(l.File(APITokenFile)),
		"SEQD_CACERT=" + ShellWord(l.File(CAFile)),
		"SEQD_CERT=" + ShellWord(l.File(ClientCertFile)),
		"SEQD_KEY=" + ShellWord(l.File(ClientKeyFile)),
	}
}

// RunnerVars are the settings of seqd lock and seqd campaign: ZooKeeper,
// its identity, and the signing key, without which they would hand their
// command an unsigned sequencer that the locked-down store refuses.
func (l Dir) RunnerVars() []string {
	return []string{
		"SEQD_ZK=" + ShellWord(l.ZK),
		"SEQD_ZK_AUTH_FILE=" + ShellWord(l.File(ZKAuthFile)),
		"SEQD_SIGNING_KEY_FILE=" + ShellWord(l.File(SigningKeyFile)),
	}
}

// ServeArgs are the arguments of the `seqd serve` that uses the directory;
// admin adds the admin token's, for a serve that has the flag.
func (l Dir) ServeArgs(listen string, admin bool) []string {
	args := []string{"serve",
		"--zk", l.ZK,
		"--listen", listen,
		"--tls-cert-file", l.File(ServerCertFile),
		"--tls-key-file", l.File(ServerKeyFile),
		"--tls-client-ca-file", l.File(CAFile),
		"--api-token-file", l.File(APITokenFile),
	}
	if admin {
		args = append(args, "--admin-token-file", l.File(AdminTokenFile))
	}
	args = append(args,
		"--signing-key-file", l.File(SigningKeyFile),
		"--zk-auth-file", l.File(ZKAuthFile),
	)
	for _, n := range l.Names {
		args = append(args, "--host", n)
	}
	return args
}

// DNSNames are the names among hosts that are neither loopback nor IP
// addresses: a Host naming one is served only when serve is told so.
func DNSNames(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if net.ParseIP(h) == nil && !slices.Contains(security.LoopbackHosts, h) {
			out = append(out, h)
		}
	}
	return out
}

// StoreArgs are the arguments of a `seqd store` that admits only the
// daemon's signed sequencers, over mutual TLS with the same token.
func (l Dir) StoreArgs() []string {
	return []string{"store",
		"--dir", "seqd-store",
		"--listen", "127.0.0.1:7071",
		"--tls-cert-file", l.File(ServerCertFile),
		"--tls-key-file", l.File(ServerKeyFile),
		"--tls-client-ca-file", l.File(CAFile),
		"--api-token-file", l.File(APITokenFile),
		"--verify-keys-file", l.File(VerifyKeysFile),
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// ShellWord quotes s for a POSIX shell, when it needs it.
func ShellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

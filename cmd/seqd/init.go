package main

// seqd init: everything a locked-down deployment needs, in one directory,
// made with Go's crypto (no openssl), and the flags and environment that
// use it.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/sequencer"
)

// The files of a directory that seqd init wrote. signing.key and
// verify.keys are the names seqd keygen writes.
const (
	caFile         = "ca.pem"
	caKeyFile      = "ca-key.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
	clientCertFile = "client.pem"
	clientKeyFile  = "client-key.pem"
	apiTokenFile   = "api-token"
	adminTokenFile = "admin-token"
	zkAuthFile     = "zk-auth"
	clientEnvFile  = "client.env"
)

// lockdownFiles are every file seqd init writes, in the order it lists them.
var lockdownFiles = []string{
	caFile, caKeyFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile,
	apiTokenFile, adminTokenFile, signingKeyFile, verifyKeysFile, zkAuthFile, clientEnvFile,
}

const (
	defaultInitDays = 365
	maxInitDays     = 3650
	initKeyID       = "k1" // the signing key's id; seqd keygen --kid names the next one
	zkDigestUser    = "seqd"
	tokenBytes      = 32
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "write what a locked-down deployment needs into a new directory: a CA, server and client certificates, API and admin tokens, a signing key pair, a ZooKeeper identity and client.env; print the flags that use them",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the directory to write (made with mode 700 if missing; never overwritten); required", EnvVars: []string{"SEQD_DIR"}},
			&cli.StringSliceFlag{Name: "host", Usage: "a `NAME` or IP address clients reach the daemon by, besides localhost, 127.0.0.1 and ::1 (repeatable)", EnvVars: []string{"SEQD_HOST"}},
			&cli.IntFlag{Name: "days", Value: defaultInitDays, Usage: fmt.Sprintf("how long the certificates are valid, in days (1..%d)", maxInitDays), EnvVars: []string{"SEQD_DAYS"}},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7070", Usage: "the address the daemon will listen on: the serve flags and SEQD_ADDR in client.env use it", EnvVars: []string{"SEQD_LISTEN"}},
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", Usage: "the ZooKeeper servers: the serve flags and SEQD_ZK in client.env use them", EnvVars: []string{"SEQD_ZK"}},
			&cli.StringSliceFlag{Name: "identity", Usage: "also write a client certificate that names `NAME` for --policy-file (a URI such as spiffe://example.org/team-a goes into a URI SAN, anything else into the CN): identity-N.pem and identity-N-key.pem, N counting from 1 (repeatable)", EnvVars: []string{"SEQD_IDENTITY"}},
		},
		Action: initAction,
	}
}

func initAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("init takes no arguments, got %q", c.Args().Slice())
	}
	if c.String("dir") == "" {
		return usageErrorf("init needs --dir DIR, a new directory for the keys and certificates")
	}
	days := c.Int("days")
	if days < 1 || days > maxInitDays {
		return usageErrorf("--days %d is out of range: give 1..%d", days, maxInitDays)
	}
	listen := c.String("listen")
	listenHost, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usageErrorf("--listen %q is not host:port", listen)
	}
	extra := c.StringSlice("host")
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) {
		extra = append(extra, listenHost) // the address clients are told must be in the certificate
	}
	hosts, err := security.ServerHosts(extra)
	if err != nil {
		return usageErrorf("--host %v", err)
	}
	if _, err := splitServers(c.String("zk")); err != nil {
		return err
	}
	l := lockdown{addr: daemonURL(listen, hosts), zk: c.String("zk"), names: dnsNames(hosts), identities: c.StringSlice("identity")}
	for _, id := range l.identities {
		if why := sequencer.ValidIdentity(id); why != "" {
			return usageErrorf("--identity: %s", why)
		}
	}
	if l.dir, err = filepath.Abs(c.String("dir")); err != nil {
		return err
	}
	if err := writeLockdown(l, hosts, time.Duration(days)*24*time.Hour); err != nil {
		return err
	}
	if w := security.ParentWarning(l.dir); w != "" {
		fmt.Fprintf(c.App.ErrWriter, "seqd: warning: %s\n", w)
	}
	printLockdown(c.App.Writer, l, listen, hosts, days)
	return nil
}

// lockdown is a directory seqd init wrote, and where its daemon and
// ZooKeeper are.
type lockdown struct {
	dir  string // absolute
	addr string // the daemon's base URL, https://
	zk   string
	// names are the DNS names given with --host: the daemon serves /v1/
	// under them too (serve --host).
	names []string
	// identities are those given with --identity, each with a client
	// certificate of its own.
	identities []string
}

// identityCertFiles are the certificate and key files of the i-th --identity
// (from 0).
func identityCertFiles(i int) (cert, key string) {
	return fmt.Sprintf("identity-%d.pem", i+1), fmt.Sprintf("identity-%d-key.pem", i+1)
}

func (l lockdown) path(name string) string { return filepath.Join(l.dir, name) }

// daemonURL is the https URL clients reach a daemon listening on listen
// by: its host, or for a wildcard address the first name given beyond the
// loopback ones (127.0.0.1 if none).
func daemonURL(listen string, hosts []string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if len(hosts) > len(security.LoopbackHosts) {
			host = hosts[len(security.LoopbackHosts)]
		}
	}
	return "https://" + net.JoinHostPort(host, port)
}

// writeLockdown makes the material and writes it into l.dir: every file
// or none, never over an existing one.
func writeLockdown(l lockdown, hosts []string, validity time.Duration) error {
	files, err := lockdownMaterial(l, hosts, validity)
	if err != nil {
		return err
	}
	var exists *security.ExistsError
	var unsafe *security.UnsafeDirError
	switch err := security.WriteNew(l.dir, files); {
	case errors.As(err, &exists), errors.As(err, &unsafe):
		return usageErrorf("%v", err)
	case err != nil:
		return fmt.Errorf("writing %s: %w", l.dir, err)
	}
	return nil
}

func lockdownMaterial(l lockdown, hosts []string, validity time.Duration) ([]security.NewFile, error) {
	host, _ := os.Hostname()
	ca, err := security.NewCA(fmt.Sprintf("seqd CA %s %s", host, time.Now().UTC().Format("2006-01-02")), validity)
	if err != nil {
		return nil, err
	}
	serverCert, serverKey, err := ca.IssueServer(hosts, validity)
	if err != nil {
		return nil, err
	}
	clientCert, clientKey, err := ca.IssueClient("seqd client", validity)
	if err != nil {
		return nil, err
	}
	var secrets [3]string // API token, admin token, ZooKeeper password
	for i := range secrets {
		if secrets[i], err = security.RandomHex(tokenBytes); err != nil {
			return nil, err
		}
	}
	signing, verify, err := fence.GenerateKey(initKeyID)
	if err != nil {
		return nil, err
	}
	const secret, public = 0o600, 0o644
	var idFiles []security.NewFile
	for i, id := range l.identities {
		cert, key, err := ca.IssueIdentity(id, validity)
		if err != nil {
			return nil, err
		}
		cf, kf := identityCertFiles(i)
		idFiles = append(idFiles, security.NewFile{Name: cf, Data: cert, Mode: public}, security.NewFile{Name: kf, Data: key, Mode: secret})
	}
	return append([]security.NewFile{
		{Name: caFile, Data: ca.CertPEM, Mode: public},
		{Name: caKeyFile, Data: ca.KeyPEM, Mode: secret},
		{Name: serverCertFile, Data: serverCert, Mode: public},
		{Name: serverKeyFile, Data: serverKey, Mode: secret},
		{Name: clientCertFile, Data: clientCert, Mode: public},
		{Name: clientKeyFile, Data: clientKey, Mode: secret},
		{Name: apiTokenFile, Data: []byte(secrets[0] + "\n"), Mode: secret},
		{Name: adminTokenFile, Data: []byte(secrets[1] + "\n"), Mode: secret},
		{Name: signingKeyFile, Data: signing, Mode: secret},
		// The header keygen writes: a later `seqd keygen --dir` in this
		// directory (a rotation) adds its key to this file.
		{Name: verifyKeysFile, Data: append([]byte(verifyKeysHeader), verify...), Mode: public},
		{Name: zkAuthFile, Data: []byte(zkDigestUser + ":" + secrets[2] + "\n"), Mode: secret},
		{Name: clientEnvFile, Data: []byte(l.clientEnv()), Mode: public},
	}, idFiles...), nil
}

// clientEnv is client.env: the variables every client of seqd reads (the
// CLI, the Go, Python, Java and JavaScript clients), and those of seqd
// lock, which talks to ZooKeeper itself.
func (l lockdown) clientEnv() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# seqd client settings, written by seqd init. In a shell: . %s\n", shellWord(l.path(clientEnvFile)))
	b.WriteString("# The CLI and the Go, Python, Java and JavaScript clients read these:\n")
	for _, kv := range l.clientVars() {
		fmt.Fprintf(&b, "export %s\n", kv)
	}
	b.WriteString("# seqd lock and seqd campaign talk to ZooKeeper themselves, and sign the\n")
	b.WriteString("# sequencers they hand their command with the daemons' key:\n")
	for _, kv := range l.runnerVars() {
		fmt.Fprintf(&b, "export %s\n", kv)
	}
	return b.String()
}

// clientVars are NAME=VALUE pairs, quoted for a shell.
func (l lockdown) clientVars() []string {
	return []string{
		"SEQD_ADDR=" + shellWord(l.addr),
		"SEQD_API_TOKEN_FILE=" + shellWord(l.path(apiTokenFile)),
		"SEQD_CACERT=" + shellWord(l.path(caFile)),
		"SEQD_CERT=" + shellWord(l.path(clientCertFile)),
		"SEQD_KEY=" + shellWord(l.path(clientKeyFile)),
	}
}

// runnerVars are the settings of seqd lock and seqd campaign: ZooKeeper,
// its identity, and the signing key, without which they would hand their
// command an unsigned sequencer that the locked-down store refuses.
func (l lockdown) runnerVars() []string {
	return []string{
		"SEQD_ZK=" + shellWord(l.zk),
		"SEQD_ZK_AUTH_FILE=" + shellWord(l.path(zkAuthFile)),
		"SEQD_SIGNING_KEY_FILE=" + shellWord(l.path(signingKeyFile)),
	}
}

// serveArgs are the arguments of the `seqd serve` that uses the directory.
func (l lockdown) serveArgs(listen string) []string {
	args := []string{"serve",
		"--zk", l.zk,
		"--listen", listen,
		"--tls-cert-file", l.path(serverCertFile),
		"--tls-key-file", l.path(serverKeyFile),
		"--tls-client-ca-file", l.path(caFile),
		"--api-token-file", l.path(apiTokenFile),
	}
	if serveTakes("admin-token-file") {
		args = append(args, "--admin-token-file", l.path(adminTokenFile))
	}
	args = append(args,
		"--signing-key-file", l.path(signingKeyFile),
		"--zk-auth-file", l.path(zkAuthFile),
	)
	for _, n := range l.names {
		args = append(args, "--host", n)
	}
	return args
}

// dnsNames are the names among hosts that are neither loopback nor IP
// addresses: a Host naming one is served only when serve is told so.
func dnsNames(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if net.ParseIP(h) == nil && !slices.Contains(security.LoopbackHosts, h) {
			out = append(out, h)
		}
	}
	return out
}

// serveTakes reports whether seqd serve has the flag name, so that the
// printed command runs as printed: the admin token's flag comes with
// breaking locks.
func serveTakes(name string) bool {
	for _, f := range serveFlags(true) {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// storeArgs are the arguments of a `seqd store` that admits only the
// daemon's signed sequencers, over mutual TLS with the same token.
func (l lockdown) storeArgs() []string {
	return []string{"store",
		"--dir", "seqd-store",
		"--listen", "127.0.0.1:7071",
		"--tls-cert-file", l.path(serverCertFile),
		"--tls-key-file", l.path(serverKeyFile),
		"--tls-client-ca-file", l.path(caFile),
		"--api-token-file", l.path(apiTokenFile),
		"--verify-keys-file", l.path(verifyKeysFile),
	}
}

func printLockdown(w io.Writer, l lockdown, listen string, hosts []string, days int) {
	mode := "?"
	if st, err := os.Stat(l.dir); err == nil {
		mode = fmt.Sprintf("mode %#o", st.Mode().Perm())
	}
	fmt.Fprintf(w, "Wrote %s (%s):\n", l.dir, mode)
	for _, row := range [][2]string{
		{caFile, "the CA: clients trust it (public)"},
		{caKeyFile, "the CA's key: it signs new certificates (secret; keep it offline once done)"},
		{serverCertFile + ", " + serverKeyFile, fmt.Sprintf("the daemon's and the store's certificate for %s, valid %d days", strings.Join(hosts, ", "), days)},
		{clientCertFile + ", " + clientKeyFile, "a client certificate, for mutual TLS"},
		{apiTokenFile, "the API's bearer token (secret)"},
		{adminTokenFile, "the admin token, for breaking locks (secret)"},
		{signingKeyFile + ", " + verifyKeysFile, "the key that signs sequencers (secret), and its public key for resources"},
		{zkAuthFile, "the ZooKeeper digest identity, user:password (secret)"},
		{clientEnvFile, "the settings every client reads"},
	} {
		fmt.Fprintf(w, "  %-28s %s\n", row[0], row[1])
	}
	for i, id := range l.identities {
		cf, kf := identityCertFiles(i)
		fmt.Fprintf(w, "  %-28s %s\n", cf+", "+kf, "a client certificate naming the identity "+termSafe(id)+" (SEQD_CERT, SEQD_KEY)")
	}
	fmt.Fprintf(w, "\nRun the daemon with:\n\n")
	printCommand(w, l.serveArgs(listen))
	fmt.Fprintf(w, "\nand the fenced store (if you use it) with:\n\n")
	printCommand(w, l.storeArgs())
	fmt.Fprintf(w, "\nThen in every shell that runs a client (seqd acquire, seqd lock, your programs):\n\n  . %s\n", shellWord(l.path(clientEnvFile)))
}

// printCommand prints `seqd ARGS`, a flag and its value per line, to be
// pasted into a shell.
func printCommand(w io.Writer, args []string) {
	fmt.Fprintf(w, "  seqd %s", args[0])
	for i := 1; i < len(args); i++ {
		fmt.Fprintf(w, " \\\n    %s", shellWord(args[i]))
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			fmt.Fprintf(w, " %s", shellWord(args[i]))
		}
	}
	fmt.Fprintln(w)
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellWord quotes s for a POSIX shell, when it needs it.
func shellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package lockdown

// seqd dev --secure: the throwaway stack, locked down with seqd init's
// files.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
)

// Dev is the directory of a `seqd dev --secure` run: one that seqd init
// wrote, or one that gets its files when the run starts.
type Dev struct {
	Dir   Dir
	Temp  bool // a directory of our own, removed by Cleanup
	ZKTLS bool // ZooKeeper serves TLS too, and seqd connects over it
	// ZKTLSVars are the ZooKeeper TLS settings of the export line, set by
	// Apply.
	ZKTLSVars []string
	write     bool // the directory has none of the files yet
}

// IncompleteError is a directory that holds some of seqd init's files
// but not all of them.
type IncompleteError struct {
	Path    string // as given
	Abs     string // absolute
	Missing []string
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%s holds some of seqd init's files but not %s", e.Path, strings.Join(e.Missing, ", "))
}

// OpenDev checks dir before anything starts: "" is a new temporary
// directory; another user's directory, or one others can write, is refused
// (*security.UnsafeDirError) before anything in it is read or written, and
// so is one with some of the files but not all (*IncompleteError).
func OpenDev(dir string, zkTLS bool) (*Dev, error) {
	d := &Dev{ZKTLS: zkTLS}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "seqd-dev-")
		if err != nil {
			return nil, err
		}
		d.Dir.Path, d.write, d.Temp = tmp, true, true
		return d, nil
	}
	var err error
	if d.Dir.Path, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := security.CheckPrivateDir(d.Dir.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var have, missing []string
	for _, f := range Files() {
		if _, err := os.Stat(d.Dir.File(f)); err == nil {
			have = append(have, f)
		} else {
			missing = append(missing, f)
		}
	}
	switch {
	case len(have) == 0:
		d.write = true
	case len(missing) > 0:
		return nil, &IncompleteError{Path: dir, Abs: d.Dir.Path, Missing: missing}
	}
	return d, nil
}

// ZKOptions are the options of dev's ZooKeeper on port: with ZKTLS, a
// secure client port too, whose CA (testenv's own) issues seqd's client
// certificate. A nil Dev is a dev run without --secure.
func (d *Dev) ZKOptions(port int) testenv.Options {
	opts := testenv.Options{ClientPort: port}
	if d != nil && d.ZKTLS {
		opts.TLS = &testenv.TLSOptions{ClientAuth: true}
	}
	return opts
}

// Apply writes the files if the directory has none (with ZooKeeper's
// address and listen in client.env), and returns the ZooKeeper servers to
// use and, by serve flag, the file each flag takes (the admin token's
// aside: AdminTokenFile, for a serve that has the flag).
func (d *Dev) Apply(zk *testenv.Cluster, listen string) (servers []string, flags map[string]string, err error) {
	servers = zk.Servers()
	flags = map[string]string{}
	if d.ZKTLS {
		cert, key, err := zk.CA.Issue("seqd-dev", false)
		if err != nil {
			return nil, nil, err
		}
		servers = zk.SecureServers()
		flags["zk-tls-ca-file"], flags["zk-tls-cert-file"], flags["zk-tls-key-file"] = zk.CA.CertFile, cert, key
		d.ZKTLSVars = []string{
			"SEQD_ZK_TLS_CA_FILE=" + ShellWord(zk.CA.CertFile),
			"SEQD_ZK_TLS_CERT_FILE=" + ShellWord(cert),
			"SEQD_ZK_TLS_KEY_FILE=" + ShellWord(key),
		}
	}
	d.Dir.ZK = strings.Join(servers, ",")
	if d.write {
		hosts, err := security.ServerHosts(nil)
		if err != nil {
			return nil, nil, err
		}
		d.Dir.Addr = DaemonURL(listen, hosts)
		if err := Write(d.Dir, hosts, DefaultDays*24*time.Hour); err != nil {
			return nil, nil, err
		}
	}
	for flag, file := range map[string]string{
		"tls-cert-file":      ServerCertFile,
		"tls-key-file":       ServerKeyFile,
		"tls-client-ca-file": CAFile,
		"api-token-file":     APITokenFile,
		"signing-key-file":   SigningKeyFile,
		"zk-auth-file":       ZKAuthFile,
	} {
		flags[flag] = d.Dir.File(file)
	}
	return servers, flags, nil
}

// Cleanup removes a temporary directory.
func (d *Dev) Cleanup() {
	if d != nil && d.Temp {
		os.RemoveAll(d.Dir.Path)
	}
}

// WriteReady writes the export line that reaches the locked-down daemon at
// addr, as a shell takes it pasted.
func (d *Dev) WriteReady(w io.Writer, addr string) {
	l := d.Dir
	l.Addr = "https://" + addr
	where := l.Path
	if d.Temp {
		where += ", removed when dev stops"
	}
	vars := append(append(l.RunnerVars(), d.ZKTLSVars...), l.ClientVars()...)
	zk := "ZooKeeper nodes under a digest identity"
	if d.ZKTLS {
		zk += ", reached over mutual TLS"
	}
	fmt.Fprintf(w, `seqd API on %[1]s, locked down: mutual TLS, a bearer token, signed sequencers, %[4]s (files in %[2]s). In another terminal, paste:

  export %[3]s

then try:
  seqd lock demo -- sh -c 'echo "$SEQD_SEQUENCER"'
  seqd acquire --ttl 30s demo
  seqd status demo
  curl -s --cacert "$SEQD_CACERT" --cert "$SEQD_CERT" --key "$SEQD_KEY" "$SEQD_ADDR/metrics" | grep '^seqd_'
Ctrl-C stops seqd and ZooKeeper.
`, l.Addr, where, strings.Join(vars, " "), zk)
}

// Plain is a dev run without --secure, as its export line shows it: the
// files are the ones the daemon was given ("" for none).
type Plain struct {
	ZK           string // ZooKeeper's connect string
	TLS          bool   // the daemon serves HTTPS (--tls-cert-file)
	ClientCA     bool   // and requires client certificates (--tls-client-ca-file)
	ZKAuthFile   string
	APITokenFile string
}

// Exports is the daemon's URL and the export line that reaches it at
// addr: https when it serves TLS, and the ZooKeeper identity and token
// files, made absolute. A CA or client certificate of the user's own it
// cannot name: the line says what to add, in a comment, so that the
// pasted lines still run.
func (p Plain) Exports(addr string) (url, line string) {
	url = "http://" + addr
	if p.TLS {
		url = "https://" + addr
	}
	vars := []string{"SEQD_ZK=" + ShellWord(p.ZK), "SEQD_ADDR=" + url}
	for _, fe := range [][2]string{{p.ZKAuthFile, "SEQD_ZK_AUTH_FILE"}, {p.APITokenFile, "SEQD_API_TOKEN_FILE"}} {
		if f, env := fe[0], fe[1]; f != "" {
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
			vars = append(vars, env+"="+ShellWord(f))
		}
	}
	line = strings.Join(vars, " ")
	if p.TLS {
		line += "\n  # and SEQD_CACERT, the CA that signed --tls-cert-file"
		if p.ClientCA {
			line += "; SEQD_CERT and SEQD_KEY, a client certificate of --tls-client-ca-file's CA"
		}
		line += " (seqd dev --secure makes them all)"
	}
	return url, line
}

// WriteReady writes the export line that reaches the daemon at addr, as a
// shell takes it pasted, and what to try with it.
func (p Plain) WriteReady(w io.Writer, addr string) {
	url, line := p.Exports(addr)
	fmt.Fprintf(w, `seqd API on %[1]s. In another terminal, paste:

  export %[2]s

then try:
  seqd lock demo -- sh -c 'echo "$SEQD_SEQUENCER"'
  seqd acquire --ttl 30s demo
  seqd status demo
  curl -s "$SEQD_ADDR/metrics" | grep '^seqd_'
Ctrl-C stops seqd and ZooKeeper.
`, url, line)
}

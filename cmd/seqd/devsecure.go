package main

// seqd dev --secure: the throwaway stack, locked down with seqd init's
// material.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
)

func devSecureFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "secure", EnvVars: []string{"SEQD_SECURE"},
			Usage: "lock the stack down with seqd init's files: HTTPS with client certificates, a bearer token, signed sequencers, ZooKeeper nodes under a digest identity (these take the place of the TLS, token, signing and ZooKeeper identity flags)"},
		&cli.StringFlag{Name: "dir", EnvVars: []string{"SEQD_DIR"},
			Usage: "with --secure: the directory of seqd init's files, used as they are, or written there if it has none (default: a temporary directory, removed at exit)"},
		&cli.BoolFlag{Name: "zk-tls", EnvVars: []string{"SEQD_ZK_TLS"},
			Usage: "with --secure: ZooKeeper also serves TLS, requiring client certificates, and seqd connects over it (its plain port stays open on loopback, for the readiness probe)"},
	}
}

// devLockdown is the material of a `seqd dev --secure` run.
type devLockdown struct {
	l     lockdown.Dir
	write bool // the directory has none of the files yet
	temp  bool // a directory of our own, removed at exit
	zkTLS bool
	// zkVars are the ZooKeeper TLS settings of the export line.
	zkTLSVars []string
}

// prepareDevSecure checks --secure and --dir before anything starts: nil
// without --secure; a directory with some of seqd init's files but not all
// is refused.
func prepareDevSecure(c *cli.Context) (*devLockdown, error) {
	dir := c.String("dir")
	if !c.Bool("secure") {
		if dir != "" || c.Bool("zk-tls") {
			return nil, usageErrorf("--dir and --zk-tls go with --secure")
		}
		return nil, nil
	}
	d := &devLockdown{zkTLS: c.Bool("zk-tls")}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "seqd-dev-")
		if err != nil {
			return nil, err
		}
		d.l.Path, d.write, d.temp = tmp, true, true
		return d, nil
	}
	var err error
	if d.l.Path, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	// Another user's directory, or one others can write, is refused
	// before anything in it is read or written.
	var unsafe *security.UnsafeDirError
	switch err := security.CheckPrivateDir(d.l.Path); {
	case errors.As(err, &unsafe):
		return nil, usageErrorf("--dir: %v", err)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if w := security.ParentWarning(d.l.Path); w != "" {
		fmt.Fprintf(c.App.ErrWriter, "seqd: warning: %s\n", w)
	}
	var have, missing []string
	for _, f := range lockdown.Files() {
		if _, err := os.Stat(d.l.File(f)); err == nil {
			have = append(have, f)
		} else {
			missing = append(missing, f)
		}
	}
	switch {
	case len(have) == 0:
		d.write = true
	case len(missing) > 0:
		return nil, usageErrorf("--dir %s holds some of seqd init's files but not %s: give a directory seqd init wrote, or an empty one", dir, strings.Join(missing, ", "))
	}
	return d, nil
}

// zkOptions are the options of dev's ZooKeeper on port: with --zk-tls, a
// secure client port too, whose CA (testenv's own) issues seqd's client
// certificate.
func (d *devLockdown) zkOptions(port int) testenv.Options {
	opts := testenv.Options{ClientPort: port}
	if d != nil && d.zkTLS {
		opts.TLS = &testenv.TLSOptions{ClientAuth: true}
	}
	return opts
}

// apply writes the material if the directory has none (with ZooKeeper's
// address and listen in its client.env), points the server flags at it,
// and returns the ZooKeeper servers to use.
func (d *devLockdown) apply(c *cli.Context, zk *testenv.Cluster) ([]string, error) {
	servers := zk.Servers()
	files := map[string]string{}
	if d.zkTLS {
		cert, key, err := zk.CA.Issue("seqd-dev", false)
		if err != nil {
			return nil, err
		}
		servers = zk.SecureServers()
		files["zk-tls-ca-file"], files["zk-tls-cert-file"], files["zk-tls-key-file"] = zk.CA.CertFile, cert, key
		d.zkTLSVars = []string{
			"SEQD_ZK_TLS_CA_FILE=" + lockdown.ShellWord(zk.CA.CertFile),
			"SEQD_ZK_TLS_CERT_FILE=" + lockdown.ShellWord(cert),
			"SEQD_ZK_TLS_KEY_FILE=" + lockdown.ShellWord(key),
		}
	}
	d.l.ZK = strings.Join(servers, ",")
	if d.write {
		listen := c.String("listen")
		hosts, err := security.ServerHosts(nil)
		if err != nil {
			return nil, err
		}
		d.l.Addr = lockdown.DaemonURL(listen, hosts)
		if err := lockdown.Write(d.l, hosts, lockdown.DefaultDays*24*time.Hour); err != nil {
			return nil, err
		}
	}
	for flag, file := range map[string]string{
		"tls-cert-file":      lockdown.ServerCertFile,
		"tls-key-file":       lockdown.ServerKeyFile,
		"tls-client-ca-file": lockdown.CAFile,
		"api-token-file":     lockdown.APITokenFile,
		"signing-key-file":   lockdown.SigningKeyFile,
		"zk-auth-file":       lockdown.ZKAuthFile,
	} {
		files[flag] = d.l.File(file)
	}
	for flag, path := range files {
		if err := c.Set(flag, path); err != nil {
			return nil, err
		}
	}
	// A daemon that has an admin token takes seqd init's; one without the
	// flag has nothing to set.
	_ = c.Set("admin-token-file", d.l.File(lockdown.AdminTokenFile))
	return servers, nil
}

func (d *devLockdown) cleanup() {
	if d != nil && d.temp {
		os.RemoveAll(d.l.Path)
	}
}

// ready prints the export line that reaches the locked-down daemon at
// addr, as a shell takes it pasted.
func (d *devLockdown) ready(w io.Writer, addr string) {
	l := d.l
	l.Addr = "https://" + addr
	where := l.Path
	if d.temp {
		where += ", removed when dev stops"
	}
	vars := append(append(l.RunnerVars(), d.zkTLSVars...), l.ClientVars()...)
	zk := "ZooKeeper nodes under a digest identity"
	if d.zkTLS {
		zk += ", reached over mutual TLS"
	}
	fmt.Fprintf(w, `seqd API on %[1]s, locked down: mutual TLS, a bearer token, signed sequencers, %[4]s (files in %[2]s). In another terminal, paste:

  export %[3]s

then try:
  seqd acquire --ttl 30s demo
  seqd status demo
  seqd lock demo -- sh -c 'echo "$SEQD_SEQUENCER"'
  curl -s --cacert "$SEQD_CACERT" --cert "$SEQD_CERT" --key "$SEQD_KEY" "$SEQD_ADDR/metrics" | grep '^seqd_'
Ctrl-C stops seqd and ZooKeeper.
`, l.Addr, where, strings.Join(vars, " "), zk)
}

// plainDevExports is the daemon's URL and the export line of a dev run
// without --secure: https when it serves TLS, and the token and ZooKeeper
// identity files it was given. A CA or client certificate of the user's
// own it cannot name: the line says what to add.
func plainDevExports(c *cli.Context, addr, zk string) (url, line string) {
	url = "http://" + addr
	if c.String("tls-cert-file") != "" {
		url = "https://" + addr
	}
	vars := []string{"SEQD_ZK=" + lockdown.ShellWord(zk), "SEQD_ADDR=" + url}
	for _, fe := range [][2]string{{"zk-auth-file", "SEQD_ZK_AUTH_FILE"}, {"api-token-file", "SEQD_API_TOKEN_FILE"}} {
		flag, env := fe[0], fe[1]
		if f := c.String(flag); f != "" {
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
			vars = append(vars, env+"="+lockdown.ShellWord(f))
		}
	}
	line = strings.Join(vars, " ")
	if c.String("tls-cert-file") != "" {
		// A comment, so that the pasted lines still run.
		line += "\n  # and SEQD_CACERT, the CA that signed --tls-cert-file"
		if c.String("tls-client-ca-file") != "" {
			line += "; SEQD_CERT and SEQD_KEY, a client certificate of --tls-client-ca-file's CA"
		}
		line += " (seqd dev --secure makes them all)"
	}
	return url, line
}

package main

// seqd dev --secure: the throwaway stack, locked down with seqd init's
// material.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/internal/security"
)

func devSecureFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "secure", EnvVars: []string{"SEQD_SECURE"},
			Usage: "lock the stack down with seqd init's files: HTTPS with client certificates, a bearer token, signed sequencers, ZooKeeper nodes under a digest identity (these take the place of the TLS, token, signing and ZooKeeper identity flags)"},
		&cli.StringFlag{Name: "dir", EnvVars: []string{"SEQD_DIR"},
			Usage: "with --secure: the directory of seqd init's files, used as they are, or written there if it has none (default: a temporary directory, removed at exit)"},
	}
}

// devLockdown is the material of a `seqd dev --secure` run.
type devLockdown struct {
	l     lockdown
	write bool // the directory has none of the files yet
	temp  bool // a directory of our own, removed at exit
}

// prepareDevSecure checks --secure and --dir before anything starts: nil
// without --secure; a directory with some of seqd init's files but not all
// is refused.
func prepareDevSecure(c *cli.Context) (*devLockdown, error) {
	dir := c.String("dir")
	if !c.Bool("secure") {
		if dir != "" {
			return nil, usageErrorf("--dir goes with --secure")
		}
		return nil, nil
	}
	d := &devLockdown{}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "seqd-dev-")
		if err != nil {
			return nil, err
		}
		d.l.dir, d.write, d.temp = tmp, true, true
		return d, nil
	}
	var err error
	if d.l.dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	var have, missing []string
	for _, f := range lockdownFiles {
		if _, err := os.Stat(d.l.path(f)); err == nil {
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

// apply writes the material if the directory has none (with zk and
// listen in its client.env), and points the server flags at it.
func (d *devLockdown) apply(c *cli.Context, zk string) error {
	d.l.zk = zk
	if d.write {
		listen := c.String("listen")
		hosts, err := security.ServerHosts(nil)
		if err != nil {
			return err
		}
		d.l.addr = daemonURL(listen, hosts)
		if err := writeLockdown(d.l, hosts, defaultInitDays*24*time.Hour); err != nil {
			return err
		}
	}
	for flag, file := range map[string]string{
		"tls-cert-file":      serverCertFile,
		"tls-key-file":       serverKeyFile,
		"tls-client-ca-file": caFile,
		"api-token-file":     apiTokenFile,
		"signing-key-file":   signingKeyFile,
		"zk-auth-file":       zkAuthFile,
	} {
		if err := c.Set(flag, d.l.path(file)); err != nil {
			return err
		}
	}
	// A daemon that has an admin token takes seqd init's; one without the
	// flag has nothing to set.
	_ = c.Set("admin-token-file", d.l.path(adminTokenFile))
	return nil
}

func (d *devLockdown) cleanup() {
	if d != nil && d.temp {
		os.RemoveAll(d.l.dir)
	}
}

// ready prints the export line that reaches the locked-down daemon at
// addr, as a shell takes it pasted.
func (d *devLockdown) ready(w io.Writer, addr string) {
	l := d.l
	l.addr = "https://" + addr
	where := l.dir
	if d.temp {
		where += ", removed when dev stops"
	}
	vars := append(l.zkVars(), l.clientVars()...)
	fmt.Fprintf(w, `seqd API on %[1]s, locked down: mutual TLS, a bearer token, signed sequencers, ZooKeeper nodes under a digest identity (files in %[2]s). In another terminal, paste:

  export %[3]s

then try:
  seqd acquire --ttl 30s demo
  seqd status demo
  seqd lock demo -- sh -c 'echo "$SEQD_SEQUENCER"'
  curl -s --cacert "$SEQD_CACERT" --cert "$SEQD_CERT" --key "$SEQD_KEY" "$SEQD_ADDR/metrics" | grep '^seqd_'
Ctrl-C stops seqd and ZooKeeper.
`, l.addr, where, strings.Join(vars, " "))
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
	vars := []string{"SEQD_ZK=" + shellWord(zk), "SEQD_ADDR=" + url}
	for _, fe := range [][2]string{{"zk-auth-file", "SEQD_ZK_AUTH_FILE"}, {"api-token-file", "SEQD_API_TOKEN_FILE"}} {
		flag, env := fe[0], fe[1]
		if f := c.String(flag); f != "" {
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
			vars = append(vars, env+"="+shellWord(f))
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

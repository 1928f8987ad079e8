package main

// seqd dev --secure: the throwaway stack, locked down with seqd init's
// material.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

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

// devLockdown is the material of a `seqd dev --secure` run; nil without
// --secure.
type devLockdown struct{ *lockdown.Dev }

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
	d, err := lockdown.OpenDev(dir, c.Bool("zk-tls"))
	var unsafe *security.UnsafeDirError
	var incomplete *lockdown.IncompleteError
	switch {
	case errors.As(err, &unsafe):
		return nil, usageErrorf("--dir: %v", err)
	case errors.As(err, &incomplete):
		warnParent(c, incomplete.Abs)
		return nil, usageErrorf("--dir %v: give a directory seqd init wrote, or an empty one", err)
	case err != nil:
		return nil, err
	}
	if dir != "" {
		warnParent(c, d.Dir.Path)
	}
	return &devLockdown{d}, nil
}

// warnParent says when a directory above dir lets others replace it.
func warnParent(c *cli.Context, dir string) {
	if w := security.ParentWarning(dir); w != "" {
		fmt.Fprintf(c.App.ErrWriter, "seqd: warning: %s\n", w)
	}
}

func (d *devLockdown) zkOptions(port int) testenv.Options {
	if d == nil {
		return (*lockdown.Dev)(nil).ZKOptions(port)
	}
	return d.ZKOptions(port)
}

// apply writes the material if the directory has none, points the server
// flags at it, and returns the ZooKeeper servers to use.
func (d *devLockdown) apply(c *cli.Context, zk *testenv.Cluster) ([]string, error) {
	servers, files, err := d.Apply(zk, c.String("listen"))
	if err != nil {
		return nil, err
	}
	for flag, path := range files {
		if err := c.Set(flag, path); err != nil {
			return nil, err
		}
	}
	// A daemon that has an admin token takes seqd init's; one without the
	// flag has nothing to set.
	_ = c.Set("admin-token-file", d.Dir.File(lockdown.AdminTokenFile))
	return servers, nil
}

func (d *devLockdown) cleanup() {
	if d != nil {
		d.Cleanup()
	}
}

// ready prints the export line that reaches the locked-down daemon at
// addr.
func (d *devLockdown) ready(w io.Writer, addr string) { d.WriteReady(w, addr) }

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

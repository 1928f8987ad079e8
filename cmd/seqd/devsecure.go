package main

// seqd dev --secure: the throwaway stack, locked down with seqd init's
// material.

import (
	"errors"
	"fmt"

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

// prepareDevSecure checks --secure and --dir before anything starts: nil
// without --secure; a directory with some of seqd init's files but not all
// is refused.
func prepareDevSecure(c *cli.Context) (*lockdown.Dev, error) {
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
	return d, nil
}

// warnParent says when a directory above dir lets others replace it.
func warnParent(c *cli.Context, dir string) {
	if w := security.ParentWarning(dir); w != "" {
		fmt.Fprintf(c.App.ErrWriter, "seqd: warning: %s\n", w)
	}
}

// applyDevSecure writes d's material if its directory has none, points the
// server flags at it, and returns the ZooKeeper servers to use.
func applyDevSecure(c *cli.Context, d *lockdown.Dev, zk *testenv.Cluster) ([]string, error) {
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

// plainDev is a dev run without --secure, from the flags its export line
// follows.
func plainDev(c *cli.Context, zk string) lockdown.Plain {
	return lockdown.Plain{ZK: zk, TLS: c.String("tls-cert-file") != "", ClientCA: c.String("tls-client-ca-file") != "",
		ZKAuthFile: c.String("zk-auth-file"), APITokenFile: c.String("api-token-file")}
}

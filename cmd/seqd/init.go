package main

// seqd init: everything a locked-down deployment needs, in one directory,
// made with Go's crypto (no openssl), and the flags and environment that
// use it.

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/sequencer/policy"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "write what a locked-down deployment needs into a new directory: a CA, server and client certificates, API and admin tokens, a signing key pair, a ZooKeeper identity and client.env; print the flags that use them",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the directory to write (made with mode 700 if missing; never overwritten); required", EnvVars: []string{"SEQD_DIR"}},
			&cli.StringSliceFlag{Name: "host", Usage: "a `NAME` or IP address clients reach the daemon by, besides localhost, 127.0.0.1 and ::1 (repeatable)", EnvVars: []string{"SEQD_HOST"}},
			&cli.IntFlag{Name: "days", Value: lockdown.DefaultDays, Usage: fmt.Sprintf("how long the certificates are valid, in days (1..%d)", lockdown.MaxDays), EnvVars: []string{"SEQD_DAYS"}},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7070", Usage: "the address the daemon will listen on: the serve flags and SEQD_ADDR in client.env use it", EnvVars: []string{"SEQD_LISTEN"}},
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", Usage: "the ZooKeeper servers: the serve flags and SEQD_ZK in client.env use them", EnvVars: []string{"SEQD_ZK"}},
			&cli.StringSliceFlag{Name: "identity", Usage: "also write a client certificate that names `NAME` for --policy-file (a URI such as spiffe://example.org/team-a goes into a URI SAN, anything else into the CN): identity-N.pem and identity-N-key.pem, N counting from 1 (repeatable)", EnvVars: []string{"SEQD_IDENTITY"}},
		},
		Before: noArguments,
		Action: initAction,
	}
}

func initAction(c *cli.Context) error {
	if c.String("dir") == "" {
		return usageErrorf("init needs --dir DIR, a new directory for the keys and certificates")
	}
	days := c.Int("days")
	if days < 1 || days > lockdown.MaxDays {
		return usageErrorf("--days %d is out of range: give 1..%d", days, lockdown.MaxDays)
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
	l := lockdown.Dir{Addr: lockdown.DaemonURL(listen, hosts), ZK: c.String("zk"), Names: lockdown.DNSNames(hosts), Identities: c.StringSlice("identity")}
	for _, id := range l.Identities {
		if why := policy.ValidIdentity(id); why != "" {
			return usageErrorf("--identity: %s", why)
		}
		if why := policy.Reserved(id); why != "" {
			return usageErrorf("--identity: %s, and the daemon refuses a certificate that names it", why)
		}
	}
	if l.Path, err = filepath.Abs(c.String("dir")); err != nil {
		return err
	}
	if err := lockdown.Write(l, hosts, time.Duration(days)*24*time.Hour); err != nil {
		return err
	}
	warnParent(c, l.Path)
	l.WriteSummary(c.App.Writer, listen, serveTakes("admin-token-file"), hosts, days)
	return nil
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

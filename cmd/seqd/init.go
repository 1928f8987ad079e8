package main

// seqd init: everything a locked-down deployment needs, in one directory,
// made with Go's crypto (no openssl), and the flags and environment that
// use it.

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/sequencer"
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
		if why := sequencer.ValidIdentity(id); why != "" {
			return usageErrorf("--identity: %s", why)
		}
	}
	if l.Path, err = filepath.Abs(c.String("dir")); err != nil {
		return err
	}
	if err := lockdown.Write(l, hosts, time.Duration(days)*24*time.Hour); err != nil {
		return err
	}
	warnParent(c, l.Path)
	printLockdown(c.App.Writer, l, listen, hosts, days)
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

func printLockdown(w io.Writer, l lockdown.Dir, listen string, hosts []string, days int) {
	mode := "?"
	if st, err := os.Stat(l.Path); err == nil {
		mode = fmt.Sprintf("mode %#o", st.Mode().Perm())
	}
	fmt.Fprintf(w, "Wrote %s (%s):\n", l.Path, mode)
	for _, row := range [][2]string{
		{lockdown.CAFile, "the CA: clients trust it (public)"},
		{lockdown.CAKeyFile, "the CA's key: it signs new certificates (secret; keep it offline once done)"},
		{lockdown.ServerCertFile + ", " + lockdown.ServerKeyFile, fmt.Sprintf("the daemon's and the store's certificate for %s, valid %d days", strings.Join(hosts, ", "), days)},
		{lockdown.ClientCertFile + ", " + lockdown.ClientKeyFile, "a client certificate, for mutual TLS"},
		{lockdown.APITokenFile, "the API's bearer token (secret)"},
		{lockdown.AdminTokenFile, "the admin token, for breaking locks (secret)"},
		{lockdown.SigningKeyFile + ", " + lockdown.VerifyKeysFile, "the key that signs sequencers (secret), and its public key for resources"},
		{lockdown.ZKAuthFile, "the ZooKeeper digest identity, user:password (secret)"},
		{lockdown.ClientEnvFile, "the settings every client reads"},
	} {
		fmt.Fprintf(w, "  %-28s %s\n", row[0], row[1])
	}
	for i, id := range l.Identities {
		cf, kf := lockdown.IdentityCertFiles(i)
		fmt.Fprintf(w, "  %-28s %s\n", cf+", "+kf, "a client certificate naming the identity "+termtext.Safe(id)+" (SEQD_CERT, SEQD_KEY)")
	}
	fmt.Fprintf(w, "\nRun the daemon with:\n\n")
	printCommand(w, l.ServeArgs(listen, serveTakes("admin-token-file")))
	fmt.Fprintf(w, "\nand the fenced store (if you use it) with:\n\n")
	printCommand(w, l.StoreArgs())
	fmt.Fprintf(w, "\nThen in every shell that runs a client (seqd acquire, seqd lock, your programs):\n\n  . %s\n", lockdown.ShellWord(l.File(lockdown.ClientEnvFile)))
}

// printCommand prints `seqd ARGS`, a flag and its value per line, to be
// pasted into a shell.
func printCommand(w io.Writer, args []string) {
	fmt.Fprintf(w, "  seqd %s", args[0])
	for i := 1; i < len(args); i++ {
		fmt.Fprintf(w, " \\\n    %s", lockdown.ShellWord(args[i]))
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			fmt.Fprintf(w, " %s", lockdown.ShellWord(args[i]))
		}
	}
	fmt.Fprintln(w)
}

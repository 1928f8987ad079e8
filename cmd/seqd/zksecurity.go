package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/zklock"
)

// ZooKeeper authentication, ACLs and TLS, shared by the commands that talk
// to ZooKeeper.

// noAuthWarning is logged once at start when no ZooKeeper identity is given.
const noAuthWarning = "no --zk-auth-file: the lock nodes are world:anyone ALL, so any ZooKeeper client can delete a holder's node (breaking its lock) or plant nodes; give --zk-auth-file to lock them down"

func zkSecurityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "zk-auth-file", EnvVars: []string{"SEQD_ZK_AUTH_FILE"},
			Usage: "`FILE` with one line user:password: authenticate to ZooKeeper with the digest scheme (the file must not be readable by others)"},
		&cli.StringFlag{Name: "zk-acl", EnvVars: []string{"SEQD_ZK_ACL"},
			Usage: "ACL of the nodes seqd creates: creator (digest user ALL + world READ; the default with --zk-auth-file) or open (world ALL; the default without)"},
		&cli.StringFlag{Name: "zk-tls-ca-file", EnvVars: []string{"SEQD_ZK_TLS_CA_FILE"},
			Usage: "connect to ZooKeeper's secure client port over TLS, trusting the CA certificates in `FILE`"},
		&cli.StringFlag{Name: "zk-tls-cert-file", EnvVars: []string{"SEQD_ZK_TLS_CERT_FILE"},
			Usage: "client certificate `FILE` for ZooKeeper TLS (with --zk-tls-key-file)"},
		&cli.StringFlag{Name: "zk-tls-key-file", EnvVars: []string{"SEQD_ZK_TLS_KEY_FILE"},
			Usage: "client key `FILE` for ZooKeeper TLS"},
	}
}

// zkSecurity is the validated ZooKeeper identity, ACL policy and TLS.
type zkSecurity struct {
	auth *zklock.DigestAuth
	acl  zklock.ACLPolicy
	tls  *tls.Config
}

// parseZKSecurity reads the --zk-* flags; every mistake is a usage error.
func parseZKSecurity(c *cli.Context) (zkSecurity, error) {
	var z zkSecurity
	if f := c.String("zk-auth-file"); f != "" {
		user, pw, err := security.LoadZKAuth(f)
		if err != nil {
			return z, usageErrorf("--zk-auth-file: %v", err)
		}
		z.auth = &zklock.DigestAuth{User: user, Password: pw}
	}
	var err error
	if z.acl, err = zklock.ParseACLPolicy(c.String("zk-acl")); err != nil {
		return z, usageErrorf("--zk-acl %q: want creator or open", c.String("zk-acl"))
	}
	if z.acl == zklock.ACLCreator && z.auth == nil {
		return z, usageErrorf("--zk-acl creator needs --zk-auth-file")
	}
	ca, cert, key := c.String("zk-tls-ca-file"), c.String("zk-tls-cert-file"), c.String("zk-tls-key-file")
	if ca != "" || cert != "" || key != "" {
		if ca == "" {
			return z, usageErrorf("--zk-tls-cert-file and --zk-tls-key-file need --zk-tls-ca-file")
		}
		if z.tls, err = security.ClientTLS(ca, cert, key); err != nil {
			return z, usageErrorf("ZooKeeper TLS: %v", err)
		}
	}
	return z, nil
}

// zkNoAuth explains ZooKeeper's NoAuth: the nodes under root belong to a
// digest identity that the command did not authenticate as.
func zkNoAuth(what, root string, auth *zklock.DigestAuth) error {
	if auth == nil {
		return fmt.Errorf("ZooKeeper refused %s: the nodes under %s belong to a digest identity and this command gave none (NoAuth): give --zk-auth-file (or SEQD_ZK_AUTH_FILE) naming the file with the deployment's user:password (seqd init writes it as %s)", what, root, lockdown.ZKAuthFile)
	}
	return fmt.Errorf("ZooKeeper refused %s to user %q (NoAuth): the nodes under %s belong to another identity: give --zk-auth-file (or SEQD_ZK_AUTH_FILE) the user:password that the daemons use", what, auth.User, root)
}

// startError is the status of a daemon whose service did not start: 77
// when ZooKeeper refused its identity (or its lack of one), 69 otherwise.
func startError(err error, servers, root string, z zkSecurity) error {
	var fe *zklock.FloorError
	if errors.As(err, &fe) {
		return withCode(ExitUsage, fmt.Errorf("%s: seqd floor --zk … --raise %d (or seqd floor --zk … --from-floor-file FILE…)", sequencer.FloorAdvice(fe), fe.Issued.Token))
	}
	if errors.Is(err, zk.ErrNoAuth) {
		var nr *zklock.NoAuthRootError
		if errors.As(err, &nr) {
			root = nr.Root
		}
		return withCode(ExitAuth, zkNoAuth("the daemon", root, z.auth))
	}
	if errors.Is(err, zklock.ErrUnavailable) {
		return withCode(ExitUnavailable, fmt.Errorf("the daemon cannot reach ZooKeeper at %s: no session: %s", servers, zkHint))
	}
	return withCode(ExitUnavailable, err)
}

// zkHint is what to do when no ZooKeeper answers at --zk.
const zkHint = "start ZooKeeper there (seqd dev runs a throwaway one), or give --zk (or SEQD_ZK) the address of a running ensemble"

// warnIfOpen logs, once, that without an identity anyone can break locks.
func (z zkSecurity) warnIfOpen(logger *slog.Logger) {
	if z.auth == nil {
		logger.Warn(noAuthWarning)
	}
}

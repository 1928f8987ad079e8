package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/security"
)

// ExitConflict is the status of a client command whose answer is a 409
// other than "held": a stale token, a lost lease, a failed check (like
// test(1), 1 means "no").
const ExitConflict = 1

func clientFlags(extra ...cli.Flag) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "http://127.0.0.1:7070", Usage: "the daemon's base URL (https:// with TLS)", EnvVars: []string{"SEQD_ADDR"}},
		&cli.BoolFlag{Name: "token-only", Usage: "print only the token", EnvVars: []string{"SEQD_TOKEN_ONLY"}},
	}
	fs = append(fs, clientSecurityFlags()...)
	return append(fs, extra...)
}

// newClient is the daemon's client from --addr, --api-token-file,
// --cacert, --cert and --key (each also from its SEQD_* variable, which
// urfave/cli reads: the client package is told to read none itself).
func newClient(c *cli.Context) (*client.Client, error) {
	tok, err := apiToken(c)
	if err != nil {
		return nil, err
	}
	return newClientToken(c, tok)
}

// newClientToken is newClient sending tok as its bearer token.
func newClientToken(c *cli.Context, tok string) (*client.Client, error) {
	addr, err := daemonAddr(c.String("addr"))
	if err != nil {
		return nil, err
	}
	// The transport tells a refusal of the TLS settings from a daemon
	// that cannot be reached; clientError names the flag to fix.
	rt, err := security.ClientTransport(c.String("cacert"), c.String("cert"), c.String("key"))
	if err != nil {
		return nil, usageErrorf("TLS: %v", err)
	}
	opts := []client.Option{client.WithoutEnv(), client.WithAPIToken(tok), client.WithHTTPClient(&http.Client{Transport: rt})}
	cl, err := client.New(addr, opts...)
	if err != nil {
		return nil, usageErrorf("%v", userMessage(err))
	}
	return cl, nil
}

// daemonAddr checks --addr: a base URL with an http or https scheme and a
// host, so that a mistyped address is a usage error rather than a request
// that fails in the URL parser.
func daemonAddr(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageErrorf("--addr %q is not the daemon's base URL: write it like http://127.0.0.1:7070", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", usageErrorf("--addr %q: the daemon's base URL takes no query or fragment", s)
	}
	return s, nil
}

// oneName returns the single NAME argument.
func oneName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErrorf("%s needs exactly one lock NAME, got %d arguments", c.Command.Name, c.NArg())
	}
	return c.Args().First(), nil
}

// clientError maps an API error to an exit status. A request cut short by a
// signal (the command's context cancelled) is an interruption, whatever the
// HTTP client made of it.
func clientError(c *cli.Context, err error) error {
	var ae *api.APIError
	var refusal *security.Refusal
	switch {
	case err == nil:
		return nil
	case c.Context.Err() != nil:
		return interrupted(c.Context, c.Command.Name)
	case errors.As(err, &ae):
		switch {
		case ae.Status == http.StatusUnauthorized:
			return withCode(ExitAuth, unauthorized(c))
		case ae.Status == http.StatusForbidden:
			return withCode(ExitAuth, forbidden(c, ae))
		case ae.Status == 400:
			return withCode(ExitUsage, err)
		case ae.Code == api.CodeHeld:
			return withCode(ExitTimeout, err)
		case ae.Status == 409:
			return withCode(ExitConflict, err)
		case ae.Status == 503:
			return withCode(ExitUnavailable, err)
		case ae.Status == http.StatusTooManyRequests:
			return withCode(ExitQuota, err)
		}
	case errors.As(err, &refusal):
		return tlsRefusal(c, refusal)
	case errors.Is(err, api.ErrDaemonUnreachable):
		return withCode(ExitUnavailable, exit.NoDaemon(c.String("addr"), err))
	}
	return err
}

// unauthorized explains a 401: the daemon runs with --api-token-file and
// the client must send the same token, read from its own --api-token-file
// (or, for the commands that send the admin token, --admin-token-file).
func unauthorized(c *cli.Context) error {
	flag, env, f := tokenFlag(c)
	if f != "" {
		return fmt.Errorf("the daemon at %s refused the bearer token read from %s %s (401): give %[2]s (or %[4]s) the file that the daemon's own %[2]s names", c.String("addr"), flag, f, env)
	}
	return fmt.Errorf("the daemon at %s requires a bearer token (401): give --api-token-file (or SEQD_API_TOKEN_FILE) naming a file that holds the token the daemon was started with (seqd init writes it as %s)", c.String("addr"), lockdown.APITokenFile)
}

// forbidden explains a 403: a signature the daemon's keys do not verify
// speaks for itself; otherwise the caller, as the daemon named it, may not
// make the call, and exit.NamedBy says what named it.
func forbidden(c *cli.Context, ae *api.APIError) error {
	if ae.Code == api.CodeBadSignature {
		return ae
	}
	return fmt.Errorf("the daemon at %s refused this call (403): %s; %s", c.String("addr"), ae.Message, exit.NamedBy(c.String("admin-token-file"), c.String("api-token-file"), c.String("cert")))
}

// tokenFlag is the flag, variable and file of the bearer token a command
// sent: the admin token's where the command takes one, else the API
// token's.
func tokenFlag(c *cli.Context) (flag, env, file string) {
	if f := c.String("admin-token-file"); f != "" {
		return "--admin-token-file", "SEQD_ADMIN_TOKEN_FILE", f
	}
	return "--api-token-file", "SEQD_API_TOKEN_FILE", c.String("api-token-file")
}

// tlsRefusal names the TLS setting to fix: 77 for a certificate that is
// not trusted, or missing, or refused; 64 for an address whose scheme does
// not match the daemon's.
func tlsRefusal(c *cli.Context, r *security.Refusal) error {
	addr := c.String("addr")
	switch r.Kind {
	case security.ServerNotTrusted:
		return withCode(ExitAuth, untrustedDaemon(c, r.Verify))
	case security.ClientCertMissing:
		return withCode(ExitAuth, fmt.Errorf("the daemon at %s requires a client certificate (mutual TLS) and none was given: give --cert and --key (or SEQD_CERT and SEQD_KEY), a certificate signed by the CA of the daemon's --tls-client-ca-file (seqd init writes %s and %s)", addr, lockdown.ClientCertFile, lockdown.ClientKeyFile))
	case security.ClientCertRefused:
		return withCode(ExitAuth, fmt.Errorf("the daemon at %s refused the client certificate of --cert %s (%s): give --cert and --key (or SEQD_CERT and SEQD_KEY) a certificate signed by the CA of the daemon's --tls-client-ca-file", addr, c.String("cert"), exit.PeerCause(r.Err)))
	case security.PlainServer:
		return usageErrorf("the daemon at %s answers plain HTTP, not HTTPS: give --addr %s (or SEQD_ADDR)", addr, strings.Replace(addr, "https://", "http://", 1))
	case security.TLSServer:
		return usageErrorf("the daemon at %s serves HTTPS only: give --addr %s (or SEQD_ADDR), and --cacert (or SEQD_CACERT) naming the CA that signed its certificate", addr, strings.Replace(addr, "http://", "https://", 1))
	}
	return withCode(ExitAuth, r)
}

// untrustedDaemon says why the daemon's certificate did not verify, and
// what to give instead.
func untrustedDaemon(c *cli.Context, cve *tls.CertificateVerificationError) error {
	addr, ca := c.String("addr"), c.String("cacert")
	var leaf *x509.Certificate
	if len(cve.UnverifiedCertificates) > 0 {
		leaf = cve.UnverifiedCertificates[0]
	}
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(cve.Err, &unknown) && ca == "":
		return fmt.Errorf("the daemon's certificate at %s is signed by a CA this client does not trust (%s): give that CA's certificate with --cacert (or SEQD_CACERT; seqd init writes it as %s)", addr, exit.Issuer(leaf), lockdown.CAFile)
	case errors.As(cve.Err, &unknown):
		return fmt.Errorf("the daemon's certificate at %s is not signed by the CA of --cacert %s (%s): give --cacert (or SEQD_CACERT) the CA that signed it", addr, ca, exit.Issuer(leaf))
	case errors.As(cve.Err, &host):
		return fmt.Errorf("the daemon's certificate at %s is not valid for %q (%v): give --addr (or SEQD_ADDR) a name the certificate has, or make one that names %[2]q (seqd init --host %[2]s)", addr, host.Host, host)
	case errors.As(cve.Err, &invalid) && invalid.Reason == x509.Expired && leaf != nil:
		return fmt.Errorf("the daemon's certificate at %s is valid from %s to %s, not now: give the daemon a current certificate (it reads a new one without a restart)", addr, leaf.NotBefore.Format(time.RFC3339), leaf.NotAfter.Format(time.RFC3339))
	}
	return fmt.Errorf("the daemon's certificate at %s did not verify (%v): check --cacert (or SEQD_CACERT)", addr, cve.Err)
}

func printOut(c *cli.Context, v any, token uint64) error {
	if c.Bool("token-only") {
		_, err := fmt.Fprintln(c.App.Writer, token)
		return err
	}
	enc := json.NewEncoder(termtext.JSON{W: c.App.Writer})
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func acquireCommand() *cli.Command {
	host, _ := os.Hostname()
	return &cli.Command{
		Name:      "acquire",
		Usage:     "acquire a lease on a lock through the daemon; prints the lease (exit 75 if not granted within --wait)",
		ArgsUsage: "NAME",
		Flags: clientFlags(
			&cli.StringFlag{Name: "owner", Value: fmt.Sprintf("%s:%d", host, os.Getppid()), DefaultText: "HOST:PPID, this host and the calling shell's pid", Usage: "who holds the lease, shown by status", EnvVars: []string{"SEQD_OWNER"}},
			&cli.StringFlag{Name: "lease-id", Usage: "retry an acquire: with the lease_id of your live lease you get it back (same token); a new 32-hex-digit id of your choosing makes the first try retryable", EnvVars: []string{"SEQD_LEASE_ID"}},
			&cli.DurationFlag{Name: "ttl", Value: api.DefaultTTL, Usage: "lease `TTL` (1s..1h)", EnvVars: []string{"SEQD_TTL"}},
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait for the lock (0 tries once; up to 10m)", EnvVars: []string{"SEQD_WAIT"}},
			lockDelayFlag("after the lease ends uncleanly (expired, session lost), nobody gets the lock for this long (up to 1m; default: the daemon's --lock-delay)"),
			&cli.StringFlag{Name: "mode", Value: api.ModeExclusive, Usage: "exclusive, or shared: hold the lock together with other shared leases (readers)", EnvVars: []string{"SEQD_MODE"}},
		),
		Action: func(c *cli.Context) error {
			name, err := oneName(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			ttl, err := durationFlag(c, "ttl", api.MinTTL, api.MaxTTL)
			if err != nil {
				return err
			}
			wait, err := durationFlag(c, "wait", 0, api.MaxWait)
			if err != nil {
				return err
			}
			opts := []client.AcquireOption{client.Owner(c.String("owner")), client.TTL(ttl), client.Wait(wait)}
			if id := c.String("lease-id"); id != "" {
				opts = append(opts, client.LeaseID(id))
			}
			switch mode := c.String("mode"); mode {
			case api.ModeExclusive:
			case api.ModeShared:
				opts = append(opts, client.Shared())
			default:
				return usageErrorf("acquire: --mode %q: want exclusive or shared", mode)
			}
			if c.IsSet("lock-delay") {
				d, err := durationFlag(c, "lock-delay", 0, api.MaxLockDelay)
				if err != nil {
					return err
				}
				opts = append(opts, client.LockDelay(d))
			}
			l, err := cl.Acquire(c.Context, name, opts...)
			if err != nil {
				return clientError(c, err)
			}
			return printOut(c, l, l.Token)
		},
	}
}

func leaseFlags() []cli.Flag {
	return clientFlags(
		&cli.StringFlag{Name: "lease-id", Usage: "the lease_id returned by acquire", EnvVars: []string{"SEQD_LEASE_ID"}},
		&cli.Uint64Flag{Name: "token", Usage: "the token returned by acquire", EnvVars: []string{"SEQD_TOKEN"}},
	)
}

func leaseArgs(c *cli.Context) (name, id string, token uint64, err error) {
	if name, err = oneName(c); err != nil {
		return
	}
	if id = c.String("lease-id"); id == "" {
		err = usageErrorf("%s needs --lease-id", c.Command.Name)
		return
	}
	if token = c.Uint64("token"); token == 0 {
		err = usageErrorf("%s needs --token (a positive integer)", c.Command.Name)
	}
	return
}

func renewCommand() *cli.Command {
	return &cli.Command{
		Name:      "renew",
		Usage:     "renew a lease (the token stays the same)",
		ArgsUsage: "NAME",
		Flags:     append(leaseFlags(), &cli.DurationFlag{Name: "ttl", DefaultText: "keep", Usage: "new `TTL`, 1s..1h", EnvVars: []string{"SEQD_TTL"}}),
		Action: func(c *cli.Context) error {
			name, id, token, err := leaseArgs(c)
			if err != nil {
				return err
			}
			var ttl time.Duration // 0 keeps the lease's TTL
			if c.Duration("ttl") != 0 {
				if ttl, err = durationFlag(c, "ttl", api.MinTTL, api.MaxTTL); err != nil {
					return err
				}
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			l, err := cl.RenewID(c.Context, api.Locks, name, id, token, ttl)
			if err != nil {
				return clientError(c, err)
			}
			return printOut(c, l, l.Token)
		},
	}
}

func releaseCommand() *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "release a lease",
		ArgsUsage: "NAME",
		Flags:     leaseFlags(),
		Action: func(c *cli.Context) error {
			name, id, token, err := leaseArgs(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if err := cl.ReleaseID(c.Context, api.Locks, name, id, token); err != nil {
				return clientError(c, err)
			}
			return printOut(c, map[string]bool{"released": true}, token)
		},
	}
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check a sequencer (as a holder sends it: plain or signed, of any kind) or a lock's token against the current holder (exit 0 valid, 1 not)",
		ArgsUsage: "SEQUENCER | NAME TOKEN",
		Flags:     clientFlags(),
		Action: func(c *cli.Context) error {
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			var res api.CheckResponse
			switch c.NArg() {
			case 1:
				// The daemon checks the sequencer whole, its signature
				// included, as POST /v1/check does for anyone.
				if _, err := fence.ParseSequencer(c.Args().First()); err != nil {
					return usageErrorf("check: %v", userMessage(err))
				}
				res, err = cl.Check(c.Context, c.Args().First())
			case 2:
				token, perr := strconv.ParseUint(c.Args().Get(1), 10, 64)
				if perr != nil || token == 0 {
					return usageErrorf("check: the token %q must be a positive integer", c.Args().Get(1))
				}
				res, err = cl.CheckToken(c.Context, c.Args().First(), token)
			default:
				return usageErrorf("check needs SEQUENCER (e.g. jobs/nightly@42) or NAME TOKEN")
			}
			var ae *api.APIError
			if err != nil && !(errors.As(err, &ae) && ae.Status == 409) {
				return clientError(c, err)
			}
			if perr := printOut(c, res, res.CurrentToken); perr != nil {
				return perr
			}
			if err != nil {
				return &exitError{Code: ExitConflict, Err: err, Quiet: true}
			}
			return nil
		},
	}
}

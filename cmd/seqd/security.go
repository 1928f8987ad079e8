package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/security"
)

// Flags and helpers the servers (serve, dev, store) and the client commands
// share for TLS, bearer tokens, connection limits and signing keys.

func serverSecurityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "api-token-file", Usage: "file holding a bearer token required on every /v1/ call (mode 600, at least 16 bytes)", EnvVars: []string{"SEQD_API_TOKEN_FILE"}},
		&cli.BoolFlag{Name: "insecure-listen", Usage: "allow a non-loopback --listen without --api-token-file", EnvVars: []string{"SEQD_INSECURE_LISTEN"}},
		&cli.StringFlag{Name: "tls-cert-file", Usage: "serve HTTPS with this PEM certificate (with --tls-key-file)", EnvVars: []string{"SEQD_TLS_CERT_FILE"}},
		&cli.StringFlag{Name: "tls-key-file", Usage: "the PEM key of --tls-cert-file", EnvVars: []string{"SEQD_TLS_KEY_FILE"}},
		&cli.StringFlag{Name: "tls-client-ca-file", Usage: "require client certificates signed by a CA in this PEM file (mutual TLS)", EnvVars: []string{"SEQD_TLS_CLIENT_CA_FILE"}},
		&cli.IntFlag{Name: "max-connections", DefaultText: "the file descriptor limit less 128 kept for ZooKeeper and files", Usage: "cap on open client connections", EnvVars: []string{"SEQD_MAX_CONNECTIONS"}},
	}
}

func clientSecurityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "api-token-file", Usage: "file holding the daemon's bearer token", EnvVars: []string{"SEQD_API_TOKEN_FILE"}},
		&cli.StringFlag{Name: "cacert", Usage: "PEM file of the CA that signed the daemon's certificate (https --addr)", EnvVars: []string{"SEQD_CACERT"}},
		&cli.StringFlag{Name: "cert", Usage: "PEM client certificate, for a daemon that requires one", EnvVars: []string{"SEQD_CERT"}},
		&cli.StringFlag{Name: "key", Usage: "the PEM key of --cert", EnvVars: []string{"SEQD_KEY"}},
	}
}

func signingKeyFlag() cli.Flag {
	return &cli.StringFlag{Name: "signing-key-file", Usage: "sign every sequencer with this key (from seqd keygen; mode 600)", EnvVars: []string{"SEQD_SIGNING_KEY_FILE"}}
}

// apiToken reads --api-token-file, if given.
func apiToken(c *cli.Context) (string, error) {
	path := c.String("api-token-file")
	if path == "" {
		return "", nil
	}
	tok, err := security.LoadToken(path)
	if err != nil {
		return "", usageErrorf("--api-token-file: %v", err)
	}
	return tok, nil
}

// signer reads --signing-key-file, if given.
func signer(c *cli.Context) (*fence.Signer, error) {
	path := c.String("signing-key-file")
	if path == "" {
		return nil, nil
	}
	s, err := fence.LoadSigningKey(path)
	if err != nil {
		return nil, usageErrorf("--signing-key-file: %v", userMessage(err))
	}
	return s, nil
}

// verifier reads --verify-keys-file, if given.
func verifier(c *cli.Context) (*fence.Verifier, error) {
	path := c.String("verify-keys-file")
	if path == "" {
		return nil, nil
	}
	v, err := fence.LoadVerifyKeys(path)
	if err != nil {
		return nil, usageErrorf("--verify-keys-file: %v", userMessage(err))
	}
	return v, nil
}

// server is what a server command checked and built from its flags.
type server struct {
	token string
	tls   *tls.Config
	max   int
}

// serverSecurity checks the security flags of a server listening on
// listen: a non-loopback address needs a bearer token (or
// --insecure-listen). The TLS files are read again when they change; logger
// says when, and when new files do not load.
func serverSecurity(c *cli.Context, listen string, logger *slog.Logger) (server, error) {
	var s server
	var err error
	if s.token, err = apiToken(c); err != nil {
		return s, err
	}
	if s.tls, err = serving.ServerTLS(c.String("tls-cert-file"), c.String("tls-key-file"), c.String("tls-client-ca-file"), logger); err != nil {
		return s, usageErrorf("TLS: %v", err)
	}
	loop, err := serving.Loopback(listen)
	if err != nil {
		return s, usageErrorf("--listen: %v", err)
	}
	if !loop && s.token == "" && c.String("tokens-file") == "" && !c.Bool("insecure-listen") {
		return s, usageErrorf("--listen %s is not a loopback address: give --api-token-file, or --insecure-listen to serve without one", listen)
	}
	if s.max = c.Int("max-connections"); s.max < 0 {
		return s, usageErrorf("--max-connections must be positive")
	}
	return s, nil
}

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "write an Ed25519 key pair for signed sequencers: DIR/signing.key (private, mode 600) and DIR/verify.keys (public)",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "directory to write the keys to (created if missing; writable by no one else); required", EnvVars: []string{"SEQD_DIR"}},
			&cli.StringFlag{Name: "kid", Value: "k1", Usage: "key id, [A-Za-z0-9_-]{1,32}: name a new key for rotation (e.g. 2026-11)", EnvVars: []string{"SEQD_KID"}},
		},
		Before: noArguments,
		Action: func(c *cli.Context) error {
			dir := c.String("dir")
			if dir == "" {
				return usageErrorf("keygen needs --dir DIR")
			}
			sk, vk, err := lockdown.WriteKeyPair(dir, c.String("kid"))
			if ke := (*lockdown.KeyIDError)(nil); errors.As(err, &ke) {
				return usageErrorf("--kid: %v", userMessage(ke.Err))
			}
			if ke := (*lockdown.KeyExistsError)(nil); errors.As(err, &ke) {
				return usageErrorf("%v: pick another --kid", ke)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "wrote %s (keep it secret: it mints tokens) and added key %q to %s (give it to resources)\n", sk, c.String("kid"), vk)
			return nil
		},
	}
}

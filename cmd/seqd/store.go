package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/store"
)

func storeCommand() *cli.Command {
	return &cli.Command{
		Name:      "store",
		Usage:     "run a small fenced key-value store (the resource side, for demos and tests)",
		ArgsUsage: " ",
		Description: "PUT, GET and DELETE /v1/kv/{key} with a Fencing-Token: N or Fencing-Sequencer: name@N header.\n" +
			"A token below the key's highest one is refused with 409 stale_token. See docs/fencing.md.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "directory of the store's log (created if missing); required", EnvVars: []string{"SEQD_DIR"}},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7071", Usage: "address to serve HTTP on (port 0 picks a free one)", EnvVars: []string{"SEQD_LISTEN"}},
			&cli.StringFlag{Name: "fence", Value: string(store.FenceFull), Usage: "full (writes and token-carrying reads are fenced), writes (reads are not), off (nothing is)", EnvVars: []string{"SEQD_FENCE"}},
			&cli.Int64Flag{Name: "compact-bytes", Value: store.DefaultCompactBytes, Usage: "compact the log when it grows past this many bytes", EnvVars: []string{"SEQD_COMPACT_BYTES"}},
			&cli.StringFlag{Name: "addr-file", Usage: "write the address actually listened on to this file once serving", EnvVars: []string{"SEQD_ADDR_FILE"}},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", EnvVars: []string{"SEQD_LOG_FORMAT"}},
			&cli.BoolFlag{Name: "repair", Usage: "start on a log damaged before its last batch: keep every readable record and set the damaged file aside", EnvVars: []string{"SEQD_REPAIR"}},
			&cli.StringFlag{Name: "verify-keys-file", Usage: "admit only sequencers signed by a key in this file (from seqd keygen); bare tokens are refused", EnvVars: []string{"SEQD_VERIFY_KEYS_FILE"}},
			&cli.StringSliceFlag{Name: "guard", Usage: "PREFIX=LOCK: keys starting with PREFIX take only sequencers of LOCK (repeatable; with --verify-keys-file)", EnvVars: []string{"SEQD_GUARD"}},
		}, serverSecurityFlags()...),
		Before: noArguments,
		Action: storeAction,
	}
}

func storeAction(c *cli.Context) error {
	dir := c.String("dir")
	if dir == "" {
		return usageErrorf("store needs --dir DIR (or SEQD_DIR)")
	}
	mode, err := store.ParseFenceMode(c.String("fence"))
	if err != nil {
		return usageErrorf("--fence %q: want full, writes or off", c.String("fence"))
	}
	if c.Int64("compact-bytes") <= 0 {
		return usageErrorf("--compact-bytes must be positive")
	}
	logger, err := newLogger(c.App.ErrWriter, c.String("log-format"), slog.LevelInfo)
	if err != nil {
		return err
	}
	logger = logger.With("component", "store")
	sec, err := serverSecurity(c, c.String("listen"), logger)
	if err != nil {
		return err
	}
	verify, guards, err := storeSigned(c)
	if err != nil {
		return err
	}

	tracer, stopTracing, err := serving.StartTracing(c.Context, os.Getenv, c.App.Writer, tracesFlushTimeout, logger)
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer stopTracing()
	err = serving.RunStore(c.Context, serving.Store{
		Tracer:           tracer,
		Log:              store.Options{Dir: dir, Fence: mode, CompactBytes: c.Int64("compact-bytes"), Repair: c.Bool("repair")},
		Listen:           c.String("listen"),
		AddrFile:         c.String("addr-file"),
		TLS:              sec.tls,
		MaxConnections:   sec.max,
		APIToken:         sec.token,
		Verify:           verify,
		Guards:           guards,
		Logger:           logger,
		BareTokenWarning: poisonWarning,
		BareTokenFlag:    "--verify-keys-file",
	})
	if af := (*serving.AddrFileError)(nil); errors.As(err, &af) {
		return fmt.Errorf("store: --addr-file: %w", af.Err)
	}
	if errors.Is(err, store.ErrDamaged) {
		return fmt.Errorf("%w (seqd store --repair does it)", err)
	}
	return listenError(err, c.String("listen"))
}

// poisonWarning is what a store that admits bare tokens says at start.
const poisonWarning = "without --verify-keys-file this store admits any bare Fencing-Token, so any client that can reach it " +
	"can poison a key: one request with token 18446744073709551615 (2^64-1) raises the key's max for ever, and every " +
	"later write to it is refused; start with --verify-keys-file (keys from seqd keygen) to admit only sequencers seqd signed"

// storeSigned reads --verify-keys-file and the --guard flags.
func storeSigned(c *cli.Context) (*fence.Verifier, []store.Guard, error) {
	verify, err := verifier(c)
	if err != nil {
		return nil, nil, err
	}
	var guards []store.Guard
	for _, g := range c.StringSlice("guard") {
		gd, err := store.ParseGuard(g)
		if err != nil {
			return nil, nil, usageErrorf("--guard: %v", userMessage(err))
		}
		guards = append(guards, gd)
	}
	if len(guards) > 0 && verify == nil {
		return nil, nil, usageErrorf("--guard needs --verify-keys-file: a guard trusts the lock named in a signed sequencer")
	}
	return verify, guards, nil
}

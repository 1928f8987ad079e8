package main

// seqd floor: show the token floor of the daemon's roots, and raise it
// after ZooKeeper was restored from an older copy or rebuilt empty.

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/tokenfloor"
	"github.com/seqd/seqd/cmd/seqd/internal/underlock"
	"github.com/seqd/seqd/zklock"
)

func floorCommand() *cli.Command {
	return &cli.Command{
		Name:      "floor",
		Usage:     "show the token floor of each root (tokens are floor + zxid, or floor + version); --raise or --from-floor-file raise it, never lower it",
		ArgsUsage: " ",
		Flags: append([]cli.Flag{
			zkFlag(true),
			rootFlag(),
			semaphoreRootFlag(),
			electionRootFlag(),
			tokenModeFlag(),
			sessionTimeoutFlag(),
			&cli.Uint64Flag{Name: "raise", EnvVars: []string{"SEQD_RAISE"},
				Usage: "raise every root's floor to `N` (a root without a mark is created with it); a floor below the recorded one is refused (exit 64)"},
			&cli.StringSliceFlag{Name: "from-floor-file", EnvVars: []string{"SEQD_FROM_FLOOR_FILE"},
				Usage: "raise each root's floor to the highest token this daemon's floor `FILE` records for it (repeatable: every daemon's file, so that they all grant again)"},
		}, zkSecurityFlags()...),
		Before: noArguments,
		Action: runFloor,
	}
}

func runFloor(c *cli.Context) error {
	if err := checkRoots(c, "root", "semaphore-root", "election-root"); err != nil {
		return err
	}
	servers, err := splitServers(c.String("zk"))
	if err != nil {
		return err
	}
	mode, err := tokenMode(c)
	if err != nil {
		return err
	}
	zs, err := parseZKSecurity(c)
	if err != nil {
		return err
	}
	roots := []tokenfloor.Root{
		{Path: c.String("root"), Mode: mode},
		{Path: c.String("semaphore-root"), Mode: zklock.TokenZxid},
		{Path: c.String("election-root"), Mode: mode},
	}
	var raise *uint64
	if c.IsSet("raise") {
		n := c.Uint64("raise")
		raise = &n
	}
	targets, err := tokenfloor.Targets(roots, raise, c.StringSlice("from-floor-file"))
	if fe := (*tokenfloor.FileError)(nil); errors.As(err, &fe) {
		return usageErrorf("--from-floor-file: %v", userMessage(fe.Err))
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, max(c.Duration("session-timeout"), underlock.MinDialTimeout))
	defer cancel()
	sess, err := zklock.Dial(ctx, servers, zklock.Options{SessionTimeout: c.Duration("session-timeout"), Auth: zs.auth, ACL: zs.acl, TLS: zs.tls})
	if err != nil {
		return withCode(ExitUnavailable, fmt.Errorf("floor: %w", err))
	}
	defer sess.Close()
	return tokenfloor.Show(ctx, c.App.Writer, sess, roots, targets, raise != nil)
}

package main

// seqd floor: show the token floor of the daemon's roots, and raise it
// after ZooKeeper was restored from an older copy or rebuilt empty.

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

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
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("floor takes no arguments, got %q", c.Args().Slice())
			}
			return runFloor(c)
		},
	}
}

// floorRoot is one root seqd floor shows or raises.
type floorRoot struct {
	flag, path string
	mode       zklock.TokenMode
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
	roots := []floorRoot{
		{"--root", c.String("root"), mode},
		{"--semaphore-root", c.String("semaphore-root"), zklock.TokenZxid},
		{"--election-root", c.String("election-root"), mode},
	}
	// What to raise each root to: --raise, or the highest any file records.
	targets := map[string]uint64{}
	raise := c.IsSet("raise")
	for _, r := range roots {
		if raise {
			targets[r.path] = c.Uint64("raise")
		}
	}
	for _, path := range c.StringSlice("from-floor-file") {
		f, err := zklock.OpenFloors(path)
		if err != nil {
			return usageErrorf("--from-floor-file: %v", userMessage(err))
		}
		for _, r := range roots {
			if is := f.Issued(r.path); is.Token > 0 {
				targets[r.path] = max(targets[r.path], is.Token)
			}
		}
	}
	for root, n := range targets {
		if n > zklock.MaxTokenFloor {
			return usageErrorf("a floor of %d for %s is above the highest floor, %d", n, root, uint64(zklock.MaxTokenFloor))
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, max(c.Duration("session-timeout"), underlock.MinDialTimeout))
	defer cancel()
	sess, err := zklock.Dial(ctx, servers, zklock.Options{SessionTimeout: c.Duration("session-timeout"), Auth: zs.auth, ACL: zs.acl, TLS: zs.tls})
	if err != nil {
		return withCode(ExitUnavailable, fmt.Errorf("floor: %w", err))
	}
	defer sess.Close()
	out := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "ROOT\tMODE\tFLOOR\tCHANGE")
	for _, r := range roots {
		line, err := floorOf(ctx, sess, r, targets, raise)
		if err != nil {
			out.Flush()
			return err
		}
		fmt.Fprintln(out, line)
	}
	return out.Flush()
}

// floorOf shows r's floor, raised first when targets names it.
func floorOf(ctx context.Context, sess *zklock.Session, r floorRoot, targets map[string]uint64, explicit bool) (string, error) {
	mode, floor, marked, err := sess.TokenFloor(ctx, r.path)
	if err != nil {
		return "", zkError(err)
	}
	change := "-"
	if !marked {
		mode, change = r.mode, "no mark"
	}
	if n, ok := targets[r.path]; ok && (n > floor || !marked) {
		old, err := sess.RaiseTokenFloor(ctx, r.path, r.mode, n)
		if err != nil {
			return "", zkError(err)
		}
		if !marked {
			change = fmt.Sprintf("created with floor %d", n)
		} else {
			change = fmt.Sprintf("raised from %d", old)
		}
		floor = n
	} else if ok && explicit && n < floor {
		return "", usageErrorf("%s records floor %d: a floor is never lowered (asked for %d)", r.path, floor, n)
	}
	return fmt.Sprintf("%s\t%s\t%d\t%s", r.path, mode, floor, change), nil
}

// zkError is an error of seqd floor's ZooKeeper requests, with its exit code.
func zkError(err error) error {
	switch {
	case errors.Is(err, zklock.ErrFloorLowered), errors.Is(err, zklock.ErrTokenModeMismatch):
		return withCode(ExitUsage, err)
	}
	return withCode(ExitUnavailable, fmt.Errorf("floor: %w", err))
}

// Package tokenfloor is seqd floor: it shows the token floor of the
// daemon's roots and raises it, never lowers it, after ZooKeeper was
// restored from an older copy or rebuilt empty. A token is floor + zxid
// (or floor + version), so a raised floor keeps every token above the
// highest one granted before the restore.
//
// Its errors carry the exit status (package exit) and say what is wrong;
// the flags that set the targets are the command's.
package tokenfloor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/zklock"
)

// Root is one root seqd floor shows or raises, with the token mode a mark
// created for it records.
type Root struct {
	Path string
	Mode zklock.TokenMode
}

// FileError is a floor file that cannot be read.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// Targets are what to raise each root to: raise, if set, and the highest
// token that any of files records for the root. A target above
// zklock.MaxTokenFloor is a usage error.
func Targets(roots []Root, raise *uint64, files []string) (map[string]uint64, error) {
	targets := map[string]uint64{}
	if raise != nil {
		for _, r := range roots {
			targets[r.Path] = *raise
		}
	}
	for _, path := range files {
		f, err := zklock.OpenFloors(path)
		if err != nil {
			return nil, &FileError{Path: path, Err: err}
		}
		for _, r := range roots {
			if is := f.Issued(r.Path); is.Token > 0 {
				targets[r.Path] = max(targets[r.Path], is.Token)
			}
		}
	}
	for root, n := range targets {
		if n > zklock.MaxTokenFloor {
			return nil, exit.Usagef("a floor of %d for %s is above the highest floor, %d", n, root, uint64(zklock.MaxTokenFloor))
		}
	}
	return targets, nil
}

// Show writes the table of roots' floors to w, a header and one row per
// root, raising each first as Apply does. On an error the rows so far are
// written and the error returned.
func Show(ctx context.Context, w io.Writer, sess *zklock.Session, roots []Root, targets map[string]uint64, explicit bool) error {
	out := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(out, "ROOT\tMODE\tFLOOR\tCHANGE")
	for _, r := range roots {
		line, err := Apply(ctx, sess, r, targets, explicit)
		if err != nil {
			out.Flush()
			return err
		}
		fmt.Fprintln(out, line)
	}
	return out.Flush()
}

// Apply shows r's floor, raised first when targets names it: one row of
// root, mode, floor and what changed. explicit (a floor given as such, not
// read from files) makes a target below the recorded floor a usage error
// rather than nothing to do.
func Apply(ctx context.Context, sess *zklock.Session, r Root, targets map[string]uint64, explicit bool) (string, error) {
	mode, floor, marked, err := sess.TokenFloor(ctx, r.Path)
	if err != nil {
		return "", zkError(err)
	}
	change := "-"
	if !marked {
		mode, change = r.Mode, "no mark"
	}
	if n, ok := targets[r.Path]; ok && (n > floor || !marked) {
		old, err := sess.RaiseTokenFloor(ctx, r.Path, r.Mode, n)
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
		return "", exit.Usagef("%s records floor %d: a floor is never lowered (asked for %d)", r.Path, floor, n)
	}
	return fmt.Sprintf("%s\t%s\t%d\t%s", r.Path, mode, floor, change), nil
}

// zkError is an error of seqd floor's ZooKeeper requests, with its exit code.
func zkError(err error) error {
	switch {
	case errors.Is(err, zklock.ErrFloorLowered), errors.Is(err, zklock.ErrTokenModeMismatch):
		return exit.With(exit.Usage, err)
	}
	return exit.With(exit.Unavailable, fmt.Errorf("floor: %w", err))
}

package fencecheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Run checks the resource that cfg describes with grants from cfg.Grants
// and returns the report. An error is a Config that cannot run (a
// *ConfigError, before anything is sent), the Grantor's (the daemon's
// error, wrapped), a resource that never answered (*UnreachableError), or
// ctx's end; the grants still held are released before Run returns, even
// then.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Grants == nil {
		return nil, &ConfigError{Field: "Grants", Problem: "is required: a Grantor such as Daemon over the daemon's client"}
	}
	k := newChecker(cfg.withDefaults())
	start := time.Now()
	cases, err := k.runCases(ctx)
	k.releaseAll(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return k.report(cases, time.Since(start)), nil
}

func newChecker(cfg Config) *checker {
	return &checker{
		res: &resource{
			write: cfg.Write, read: cfg.Read, del: cfg.Delete,
			tokenHeader: cfg.TokenHeader, sequencerHeader: cfg.SequencerHeader,
			headers: cfg.Header, refuse: cfg.RefuseStatus, timeout: cfg.Timeout, hc: cfg.HTTPClient,
		},
		grants:     cfg.Grants,
		id:         runID(),
		lockPrefix: cfg.LockPrefix,
		keyPrefix:  cfg.KeyPrefix,
		holders:    cfg.Holders,
		timeout:    cfg.Timeout,
		restart:    cfg.Restart,
		restartFor: cfg.RestartTimeout,
		log:        cfg.Log,
	}
}

// runID names one run: its locks, keys, owners and values, so that runs at
// the same time or one after another never meet.
func runID() string {
	b := make([]byte, 6)
	rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// releaseAll releases the grants still held, even after the run was
// interrupted; a release that fails is said, and expires with its TTL.
func (k *checker) releaseAll(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for len(k.live) > 0 {
		g := k.live[0]
		if err := k.release(ctx, g); err != nil {
			fmt.Fprintf(k.log, "fence-check: could not release %s (it expires with its TTL): %v\n", g.Sequencer, err)
			k.live = k.live[1:]
		}
	}
}

// ShellRestart is a Config.Restart that runs cmd through /bin/sh in a
// process group of its own (a resource it starts in the background is not
// in the caller's group, so a Ctrl-C at the caller's terminal does not
// reach it), with its output to out, and kills the group if the command
// outlives ctx.
func ShellRestart(cmd string, out io.Writer) func(context.Context) error {
	return func(ctx context.Context) error {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd)
		c.Stdout, c.Stderr = out, out
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
		// A server started in the background may keep the output open: stop
		// copying it a moment after the command itself has exited.
		c.WaitDelay = time.Second
		err := c.Run()
		switch {
		case errors.Is(err, exec.ErrWaitDelay):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("the restart command failed: %v", err)
		}
		return nil
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/store"
	"github.com/seqd/seqd/zklock"
)

// Exit codes (sysexits.h where one fits).
const (
	ExitUsage       = exit.Usage
	ExitUnavailable = exit.Unavailable
	ExitDataErr     = exit.DataErr // the store's log is damaged (start with --repair)
	ExitSoftware    = exit.Software
	ExitTimeout     = exit.Timeout
	ExitLockLost    = exit.LockLost
	ExitAuth        = exit.Auth
	ExitQuota       = exit.Quota
	ExitInterrupted = exit.Interrupted
)

// exitError carries an exit status chosen by a command to main.
type exitError = exit.Error

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error { return exit.With(code, err) }

// usageErrorf is a usage error: exit 64 and a sentence.
func usageErrorf(format string, args ...any) error { return exit.Usagef(format, args...) }

// interrupted is the error of a command whose context was cancelled: exit
// 128+N for signal N.
func interrupted(ctx context.Context, command string) error { return exit.Interruption(ctx, command) }

func codeOf(err error) int {
	switch {
	case errors.Is(err, zklock.ErrTokenModeMismatch), errors.Is(err, zklock.ErrOpenRoot), errors.Is(err, zklock.ErrNestedRoots), errors.Is(err, zklock.ErrBelowFloor):
		return ExitUsage // the command line names roots that must not be used so
	case errors.Is(err, store.ErrDamaged):
		return ExitDataErr
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, context.Canceled) {
		return 0
	}
	return ExitSoftware
}

func silent(err error) bool {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Quiet
	}
	return errors.Is(err, context.Canceled)
}

// userMessage is err as shown to people: without Go package prefixes.
func userMessage(err error) string { return exit.Message(err) }

// listenError names the flag to give when the address of --listen is
// taken (exit 69); any other error passes as it is.
func listenError(err error, listen string) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	host, _, _ := net.SplitHostPort(listen)
	return withCode(ExitUnavailable, fmt.Errorf("%s is already in use (another seqd, or another program, listens there): stop that one, or give --listen (or SEQD_LISTEN, as in SEQD_LISTEN=%s make run) another port; port 0 picks a free one", listen, net.JoinHostPort(host, "7080")))
}

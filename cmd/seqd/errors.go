package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"syscall"

	"github.com/seqd/seqd/store"
	"github.com/seqd/seqd/zklock"
)

// Exit codes (sysexits.h where one fits).
const (
	ExitUsage       = 64  // EX_USAGE
	ExitUnavailable = 69  // EX_UNAVAILABLE: ZooKeeper or the daemon cannot be reached
	ExitDataErr     = 65  // EX_DATAERR: the store's log is damaged (start with --repair)
	ExitSoftware    = 70  // EX_SOFTWARE: anything unexpected
	ExitTimeout     = 75  // EX_TEMPFAIL: lock not acquired within --wait
	ExitLockLost    = 76  // lock lost while CMD ran
	ExitAuth        = 77  // EX_NOPERM: refused by authentication or authorization
	ExitInterrupted = 130 // 128+SIGINT: interrupted; 143 (128+SIGTERM) when SIGTERM did it
)

// exitError carries an exit status chosen by a command. Commands return it
// (never cli.Exit, which calls os.Exit and skips deferred cleanup).
type exitError struct {
	code int
	err  error
	// quiet suppresses the "seqd: ..." line, for statuses passed through from a
	// child process.
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageErrorf is a usage error: exit 64 and a sentence.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// childStatus passes a child's exit status through without printing anything.
func childStatus(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code, quiet: true}
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return e.sig.String() + " received" }

// interrupted is the error of a command whose context was cancelled: exit
// 128+N for signal N (130 for Ctrl-C), and 130 when no signal is known.
func interrupted(ctx context.Context, command string) error {
	code := ExitInterrupted
	err := fmt.Errorf("%s interrupted: %w", command, context.Cause(ctx))
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		code = 128 + int(se.sig)
	}
	return withCode(code, err)
}

func codeOf(err error) int {
	switch {
	case errors.Is(err, zklock.ErrTokenModeMismatch), errors.Is(err, zklock.ErrOpenRoot), errors.Is(err, zklock.ErrNestedRoots), errors.Is(err, zklock.ErrBelowFloor):
		return ExitUsage // the command line names roots that must not be used so
	case errors.Is(err, store.ErrDamaged):
		return ExitDataErr
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return 0
	}
	return ExitSoftware
}

func silent(err error) bool {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.quiet
	}
	return errors.Is(err, context.Canceled)
}

// packagePrefix matches the Go package names that seqd's libraries put in
// front of their errors ("zklock: lock lost"): at the start of the message
// or of a wrapped part of it.
var packagePrefix = regexp.MustCompile(`(^|: )(?:sequencer|zklock|runlock|fence|store|testenv|metrics): `)

// userMessage is err as shown to people: without Go package prefixes, which
// name code rather than what went wrong.
func userMessage(err error) string {
	s := err.Error()
	for {
		t := packagePrefix.ReplaceAllString(s, "$1")
		if t == s {
			return s
		}
		s = t
	}
}

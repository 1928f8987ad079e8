package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/seqd/seqd/zklock"
)

// Exit codes (sysexits.h where one fits), see DESIGN §5.
const (
	ExitUsage       = 64 // EX_USAGE
	ExitUnavailable = 69 // EX_UNAVAILABLE: ZooKeeper or the daemon cannot be reached
	ExitSoftware    = 70 // EX_SOFTWARE: anything unexpected
	ExitTimeout     = 75 // EX_TEMPFAIL: lock not acquired within --timeout
	ExitLockLost    = 76 // lock lost while CMD ran
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

func codeOf(err error) int {
	if errors.Is(err, zklock.ErrTokenModeMismatch) {
		return ExitUsage // the command line asks for the mode the root refuses
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

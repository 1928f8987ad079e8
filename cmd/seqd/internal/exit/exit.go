// Package exit is how a seqd command ends: the exit codes (sysexits.h where
// one fits), the error that carries a code up to main, and an error's text
// as people see it. Only main turns an Error into a process status; the
// packages under cmd/seqd/internal return one where the command's status
// follows from what went wrong (a lock not acquired, ZooKeeper unreachable).
//
// It is not a home for advice: which flag to give is the command's to say.
package exit

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"regexp"
)

// Exit codes (sysexits.h where one fits).
const (
	Usage       = 64  // EX_USAGE
	Unavailable = 69  // EX_UNAVAILABLE: ZooKeeper or the daemon cannot be reached
	DataErr     = 65  // EX_DATAERR: the store's log is damaged
	Software    = 70  // EX_SOFTWARE: anything unexpected
	Timeout     = 75  // EX_TEMPFAIL: lock not acquired within --wait
	LockLost    = 76  // lock lost while CMD ran
	Auth        = 77  // EX_NOPERM: refused by authentication or authorization
	Quota       = 79  // refused by a quota of the daemon's policy (no sysexits.h code fits)
	Interrupted = 130 // 128+SIGINT: interrupted; 143 (128+SIGTERM) when SIGTERM did it
)

// Error carries an exit status chosen by a command. Commands return it
// (never cli.Exit, which calls os.Exit and skips deferred cleanup).
type Error struct {
	Code int
	Err  error
	// Quiet suppresses the "seqd: ..." line, for statuses passed through
	// from a child process.
	Quiet bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With wraps err so that main exits with code.
func With(code int, err error) error { return &Error{Code: code, Err: err} }

// Usagef is a usage error: exit 64 and a sentence.
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Child passes a child's exit status through without printing anything.
func Child(code int) error {
	if code == 0 {
		return nil
	}
	return &Error{Code: code, Quiet: true}
}

// packagePrefix matches the Go package names that seqd's libraries put in
// front of their errors ("zklock: lock lost", and "seqd: " of the api and
// client packages' errors): at the start of the message or of a wrapped
// part of it. main puts the one "seqd: " in front of what is left.
var packagePrefix = regexp.MustCompile(`(^|: )(?:seqd|sequencer|zklock|runlock|fence|store|testenv|metrics): `)

// Message is err as shown to people: without Go package prefixes, which
// name code rather than what went wrong.
func Message(err error) string {
	s := err.Error()
	for {
		t := packagePrefix.ReplaceAllString(s, "$1")
		if t == s {
			return s
		}
		s = t
	}
}

// Issuer names who issued leaf, a certificate that did not verify.
func Issuer(leaf *x509.Certificate) string {
	if leaf == nil {
		return "issuer unknown"
	}
	return fmt.Sprintf("issued by %q", leaf.Issuer.CommonName)
}

// PeerCause is how a TLS server ended a connection after the handshake:
// its alert ("remote error: tls: bad certificate"), if it sent one.
func PeerCause(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" {
		return oe.Error()
	}
	return "it closed the connection after the handshake"
}

// Unreached says in words why a request to a server got no answer: the
// network's reason ("connect: connection refused", "lookup x: no such
// host", "i/o timeout") where there is one, else the message of err.
func Unreached(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return Message(err)
}

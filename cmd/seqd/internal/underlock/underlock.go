// Package underlock is one run of `seqd lock` and `seqd campaign`: it dials
// ZooKeeper, waits for the lock, the semaphore slot, the set of locks or the
// leadership (saying whom it waits for), runs the command under the grant
// with the token, the sequencers and a lock socket in its environment, kills
// the command's process group when the grant is lost, and releases.
//
// It returns errors that carry the command's exit status (package exit) and
// say what went wrong; the flags that would put it right are the command's
// to name (NoAuthError). The command line itself is parsed by cmd/seqd, and
// the child's process group, signals and kill grace are internal/runlock's.
package underlock

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

const (
	// lockReleaseTimeout bounds the release once the command has exited.
	lockReleaseTimeout = 5 * time.Second
	// MinDialTimeout: a ZooKeeper that has not given us a session by then
	// (or by the session timeout, if longer) counts as unreachable.
	MinDialTimeout = 5 * time.Second
	// signalSettle bounds how long seqd looks for the signal behind a
	// cancelled context (main's NotifyContext and our own channel are fed by
	// the same delivery, in an order nobody promises).
	signalSettle = time.Second
)

// NoZooKeeperError is a run that got no ZooKeeper session within Within:
// nothing answered at Servers, or nothing that gave a session. It matches
// zklock.ErrUnavailable; the flag that puts it right is the command's to
// name.
type NoZooKeeperError struct {
	What    string // the lock, semaphore or election it was for
	Servers []string
	Within  time.Duration
}

func (e *NoZooKeeperError) Error() string {
	return fmt.Sprintf("%s: cannot reach ZooKeeper at %s: no session within %v", e.What, strings.Join(e.Servers, ","), e.Within)
}

func (e *NoZooKeeperError) Unwrap() error { return zklock.ErrUnavailable }

// Config is a validated `seqd lock` or `seqd campaign` command line.
type Config struct {
	Name           string   // the first lock's name
	Names          []string // every lock's: seqd lock A B C -- CMD
	Argv           []string // CMD as given
	Path           string   // the program to exec (argv[0] resolved, or sh)
	Args           []string // its arguments, argv[0] included
	Servers        []string
	Kind           fence.Kind // KindLock, KindSemaphore (-n) or KindElection (seqd campaign)
	Root           string
	SessionTimeout time.Duration
	Mode           zklock.TokenMode
	TokenFloor     uint64
	Floors         *zklock.Floors // nil without --floor-file
	Wait           time.Duration
	TryOnce        bool // --wait 0

	LockDelay  time.Duration
	Limit      int // -n: a semaphore of this many holders; 0 for a lock
	KillSignal syscall.Signal
	KillGrace  time.Duration
	Verbose    bool
	Signer     *fence.Signer // signs SEQD_SEQUENCER, if set
	Value      string        // the leader's value, with KindElection

	// Auth, ACL and TLS are the ZooKeeper identity, node ACLs and TLS.
	Auth *zklock.DigestAuth
	ACL  zklock.ACLPolicy
	TLS  *tls.Config
	// OpenWarning is logged (shown with Verbose) when Auth is nil.
	OpenWarning string
	// Tracer, if set, makes the run a span, a child of seqd's TRACEPARENT,
	// whose context the command gets in TRACEPARENT.
	Tracer trace.TracerProvider
}

// IO is where the command reads and writes, and where the run reports.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// NoAuthError is ZooKeeper's NoAuth for What: the nodes under the run's
// root belong to a digest identity the run did not authenticate as. Its
// exit status is exit.Auth.
type NoAuthError struct {
	What string // lock a, locks a, b, semaphore s
	Err  error
}

func (e *NoAuthError) Error() string {
	return fmt.Sprintf("ZooKeeper refused %s (NoAuth): %v", e.What, e.Err)
}

func (e *NoAuthError) Unwrap() error { return e.Err }

// Program resolves the program to exec and its arguments (argv[0]
// included): argv itself, or with shell its words joined for sh -c. A
// program that cannot be found is exit 127, as in a shell, rather than a
// lock taken for nothing.
func Program(argv []string, shell bool) (path string, args []string, err error) {
	if shell {
		return "/bin/sh", []string{"sh", "-c", strings.Join(argv, " ")}, nil
	}
	path, err = exec.LookPath(argv[0])
	if err != nil {
		return "", nil, commandError(err)
	}
	return path, argv, nil
}

// commandError maps a command that cannot be run to a shell's statuses:
// 127 not found, 126 found but not executable.
func commandError(err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return exit.With(127, fmt.Errorf("lock: %w", err))
	}
	return exit.With(126, fmt.Errorf("lock: %w", err))
}

package sequencer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// The audit trail: one JSON line per grant, release, expiry, loss, break,
// new term and resignation, so that after an incident one can say who held
// which token when.

// Audit events, the values of AuditEvent.Event.
const (
	AuditGrant       = "grant"       // a lock or semaphore lease granted
	AuditRelease     = "release"     // released by its holder
	AuditExpiry      = "expiry"      // its TTL passed without renewal
	AuditLoss        = "loss"        // its ZooKeeper session or node went away
	AuditBreak       = "break"       // an operator broke it
	AuditTerm        = "term"        // a campaign was elected: a new term
	AuditResignation = "resignation" // a leader resigned
	// AuditBreakFailed follows a break's line when the break then failed
	// (ZooKeeper did not delete the holder's node): the line is written
	// before the break, so that no break goes unrecorded.
	AuditBreakFailed = "break_failed"
)

// AuditEvent is one line of the audit log.
type AuditEvent struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	// Kind is "lock", "shared", "semaphore" or "election".
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Token uint64 `json:"token"`
	// Owner and Daemon are the lease's owner and the daemon that held it
	// (for a break: the broken holder's, as its node names them).
	Owner  string `json:"owner"`
	Daemon string `json:"daemon"`
	// Reason says why: a break's reason, how a loss came about; "" for a
	// grant, a term or a release.
	Reason string `json:"reason"`
	// By is, for a break, the address the request came from.
	By string `json:"by,omitempty"`
	// Identity is who asked: the identity that took the lease (its
	// certificate's or named token's; anonymous with the API token), or
	// for a break the identity that broke it; absent for the daemon's own
	// campaigns.
	Identity string `json:"identity,omitempty"`
}

// AuditLog writes AuditEvents as JSON lines to a writer, one write per
// line, unbuffered: a line written survives a crash of the process. A
// break's line is also synced (fsync for a file) before Record returns.
// Record is safe for concurrent use; a nil *AuditLog records nothing.
type AuditLog struct {
	mu   sync.Mutex
	w    io.Writer
	sync func() error
	// path is the file OpenAuditFile opened as f, looked at again before
	// each line; "" for a writer given to NewAuditLog.
	path string
	f    *os.File
}

// NewAuditLog writes to w; sync, if not nil, makes what was written
// durable (os.File.Sync): Record calls it after a break's line.
func NewAuditLog(w io.Writer, sync func() error) *AuditLog {
	return &AuditLog{w: w, sync: sync}
}

// OpenAuditFile appends to the file at path, made mode 600 if missing. It
// refuses a symbolic link (a planted one would send the lines, or the
// daemon's writes, anywhere) and a file others can write (who could forge
// or erase lines). Before each line it looks at path again: a file
// removed or moved away (a rotation, a mistake) is noticed and a new one
// opened at path, with the same refusals.
func OpenAuditFile(path string) (*AuditLog, error) {
	f, err := openAuditFile(path)
	if err != nil {
		return nil, err
	}
	return &AuditLog{w: f, sync: f.Sync, path: path, f: f}, nil
}

func openAuditFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: the audit log is written only to a file of its own, never through a link", path)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case st.Mode().Perm()&0o002 != 0:
		err = fmt.Errorf("%s is writable by others (mode %v), who could forge or erase its lines: chmod o-w %s", path, st.Mode().Perm(), path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Close closes the file of an AuditLog OpenAuditFile opened.
func (a *AuditLog) Close() error {
	if a == nil || a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Close()
}

// current reopens the file when the one at a.path is no longer a.f;
// a.mu must be held.
func (a *AuditLog) current() error {
	if a.path == "" {
		return nil
	}
	at, err := os.Lstat(a.path)
	if err == nil {
		if open, ferr := a.f.Stat(); ferr == nil && os.SameFile(at, open) {
			return nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("look at the audit log: %w", err)
	}
	f, err := openAuditFile(a.path)
	if err != nil {
		return fmt.Errorf("reopen the audit log, which was removed or replaced: %w", err)
	}
	a.f.Close()
	a.f, a.w, a.sync = f, f, f.Sync
	return nil
}

// Record writes e, and syncs it when durable is set. It returns the first
// error, so that a break can be refused when its line is not on disk.
func (a *AuditLog) Record(e AuditEvent, durable bool) error {
	if a == nil {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.current(); err != nil {
		return err
	}
	if _, err := a.w.Write(b); err != nil {
		return fmt.Errorf("write the audit log: %w", err)
	}
	if durable && a.sync != nil {
		if err := a.sync(); err != nil {
			return fmt.Errorf("sync the audit log: %w", err)
		}
	}
	return nil
}

// kindWord is a kind's name in the audit log.
func kindWord(k fence.Kind) string {
	switch k {
	case fence.KindShared:
		return "shared"
	case fence.KindSemaphore:
		return "semaphore"
	case fence.KindElection:
		return "election"
	}
	return "lock"
}

// auditor records the events of the daemon's leases in its audit log, if
// it keeps one; a line it cannot write is counted and logged.
type auditor struct {
	to     *AuditLog
	daemon string // Config.Identity
	clock  zklock.Clock
	m      *metrics.Metrics
	log    *slog.Logger
}

// ofLease records an event of the lease l; a failed write is logged, not
// returned: the lease's own answer does not depend on it.
func (a *auditor) ofLease(l *lease, event, reason string) {
	if a.to == nil {
		return
	}
	now := a.clock.Now().UTC()
	if l.set != nil {
		// A multi-lock: a line per lock, each with its own token.
		for _, hl := range l.set.grant.Locks {
			a.record(AuditEvent{Time: now, Event: event, Kind: "lock", Name: hl.Name, Token: hl.Token, Owner: l.owner, Daemon: a.daemon, Reason: reason, Identity: l.who.name()})
		}
		return
	}
	a.record(AuditEvent{Time: now, Event: event, Kind: kindWord(l.kind), Name: l.name, Token: l.grant.Token, Owner: l.owner, Daemon: a.daemon, Reason: reason, Identity: l.who.name()})
}

func (a *auditor) record(e AuditEvent) {
	if err := a.to.Record(e, false); err != nil {
		a.failed(e, err)
	}
}

// failed counts and logs a line that could not be recorded.
func (a *auditor) failed(e AuditEvent, err error) {
	a.m.AuditFailed(e.Event)
	a.log.Error("audit log", "event", e.Event, "kind", e.Kind, "name", e.Name, "token", e.Token, "err", err)
}

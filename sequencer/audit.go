package sequencer

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/seqd/seqd/fence"
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
}

// AuditLog writes AuditEvents as JSON lines to a writer, one write per
// line, unbuffered: a line written survives a crash of the process. A
// break's line is also synced (fsync for a file) before Record returns.
// Record is safe for concurrent use; a nil *AuditLog records nothing.
type AuditLog struct {
	mu   sync.Mutex
	w    io.Writer
	sync func() error
}

// NewAuditLog writes to w; sync, if not nil, makes what was written
// durable (os.File.Sync): Record calls it after a break's line.
func NewAuditLog(w io.Writer, sync func() error) *AuditLog {
	return &AuditLog{w: w, sync: sync}
}

// Record writes e, and syncs it when durable is set. It returns the first
// error, so that a break can tell its caller its line is not on disk.
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

// audit records an event of the lease l; a failed write is logged, not
// returned: the lease's own answer does not depend on it.
func (s *Service) audit(l *lease, event, reason string) {
	if s.cfg.Audit == nil {
		return
	}
	now := s.clock.Now().UTC()
	if l.set != nil {
		// A multi-lock: a line per lock, each with its own token.
		for _, hl := range l.set.grant.Locks {
			s.record(AuditEvent{Time: now, Event: event, Kind: "lock", Name: hl.Name, Token: hl.Token, Owner: l.owner, Daemon: s.cfg.Identity, Reason: reason})
		}
		return
	}
	s.record(AuditEvent{Time: now, Event: event, Kind: kindWord(l.kind), Name: l.name, Token: l.grant.Token, Owner: l.owner, Daemon: s.cfg.Identity, Reason: reason})
}

func (s *Service) record(e AuditEvent) {
	if err := s.cfg.Audit.Record(e, false); err != nil {
		s.log.Error("audit log", "event", e.Event, "kind", e.Kind, "name", e.Name, "token", e.Token, "err", err)
	}
}

package underlock

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// waitNotice is how long seqd lock waits quietly before it says whom it
// waits for: a lock that is free comes well within it.
const waitNotice = time.Second

// noticeRead bounds the ZooKeeper reads of a notice or a timeout message.
const noticeRead = 2 * time.Second

// waitNotifier says once, after waitNotice, what the run waits for; stop
// ends it, and nothing is printed after stop returns.
type waitNotifier struct {
	mu      sync.Mutex
	stopped bool
	timer   zklock.Timer
	cancel  context.CancelFunc
}

// noticeWaiting starts the notice of a wait that began at since.
func (r *lockRun) noticeWaiting(sess *zklock.Session, since time.Time) *waitNotifier {
	ctx, cancel := context.WithCancel(r.ctx)
	n := &waitNotifier{cancel: cancel}
	n.timer = r.clk.AfterFunc(waitNotice, func() {
		rctx, done := context.WithTimeout(ctx, noticeRead)
		what := r.blockers(rctx, sess)
		done()
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.stopped {
			return
		}
		if what == "" {
			what = "its turn"
		}
		r.say("waiting since %s for %s", since.Format("15:04:05"), what)
	})
	return n
}

func (n *waitNotifier) stop() {
	n.timer.Stop()
	n.cancel()
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
}

// blockers describes who holds what the run waits for, as ZooKeeper has
// it now: each lock of the set held by another session, the semaphore's
// holders, the election's leader; "" if it cannot tell.
func (r *lockRun) blockers(ctx context.Context, sess *zklock.Session) string {
	cfg := r.cfg
	switch cfg.Kind {
	case fence.KindSemaphore:
		sem, err := zklock.NewSemaphore(sess, cfg.Name, cfg.Limit, zklock.WithRoot(cfg.Root))
		if err != nil {
			return ""
		}
		n, err := sem.Holders(ctx)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("a slot of semaphore %s: %d of %d taken", cfg.Name, n, cfg.Limit)
	case fence.KindElection:
		e, err := zklock.NewElection(sess, cfg.Name, zklock.WithRoot(cfg.Root), zklock.WithTokenMode(cfg.Mode))
		if err != nil {
			return ""
		}
		l, err := e.Leader(ctx)
		if err != nil || !l.Elected {
			return ""
		}
		return fmt.Sprintf("leader %q of election %s (term %d, since %s)", l.Value, cfg.Name, l.Term, l.Since.Local().Format("15:04:05"))
	}
	var held []string
	for _, name := range cfg.Names {
		m, err := zklock.NewMutex(sess, name, zklock.WithRoot(cfg.Root), zklock.WithTokenMode(cfg.Mode))
		if err != nil {
			continue
		}
		h, err := m.Holder(ctx)
		if err != nil || !h.Held || h.Owner == sess.ID() {
			continue
		}
		held = append(held, fmt.Sprintf("lock %s, held by %s with token %d (queued at %s)", name, holderName(h), h.Token, h.Since.Local().Format("15:04:05")))
	}
	return strings.Join(held, "; ")
}

// holderName names a holder from its contender's data: the owner (a
// daemon's lease owner, or user@host:pid of a seqd lock), and the command
// a seqd lock runs.
func holderName(h zklock.Holder) string {
	var d struct {
		Owner   string `json:"owner"`
		Daemon  string `json:"daemon"`
		Command string `json:"command"`
	}
	if json.Unmarshal(h.Data, &d) != nil || d.Owner == "" {
		return fmt.Sprintf("session 0x%x", h.Owner)
	}
	switch {
	case d.Command != "":
		return fmt.Sprintf("%s running %q", d.Owner, d.Command)
	case d.Daemon != "":
		return fmt.Sprintf("%s through the daemon %s", d.Owner, d.Daemon)
	}
	return d.Owner
}

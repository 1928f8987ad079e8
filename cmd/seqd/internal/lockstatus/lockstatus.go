// Package lockstatus is what seqd status, seqd break and seqd leader ask the
// daemon about a lock, a semaphore or an election: who holds it and who
// waits, in order, as one shape for every family; the table an operator
// reads; the one holder a break without a token may name; and the
// election's leader as it changes.
//
// It reads through the Go client and returns the client's errors as they
// are: which exit status and which flag they call for is the command's.
package lockstatus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
)

// Status is the answer about one name, whatever its family.
type Status struct {
	Answer  any    // the daemon's answer, as it is printed as JSON
	Token   uint64 // the holder's token or the leader's term; 0 if none
	Head    string // one line: free, held with token N, led…
	Holding []api.Contender
	Queue   []api.Contender
	Unread  int // contenders the daemon did not read
}

// Read asks the daemon about name of family f.
func Read(ctx context.Context, cl *client.Client, f api.Family, name string) (Status, error) {
	var s Status
	switch f {
	case api.Semaphores:
		sem, err := cl.SemaphoreStatus(ctx, name)
		if err != nil {
			return s, err
		}
		s = Status{Answer: sem, Holding: sem.Holding, Queue: sem.Queue, Unread: sem.Unread}
		s.Head = fmt.Sprintf("semaphore %s: %d of %s held", name, sem.Holders, limitWord(sem.Limit))
	case api.Elections:
		elect, err := cl.Election(ctx, name)
		if err != nil {
			return s, err
		}
		s = Status{Answer: elect, Holding: elect.Holding, Queue: elect.Queue, Unread: elect.Unread}
		s.Head = fmt.Sprintf("election %s: no leader", name)
		if elect.Leader != nil {
			s.Token = elect.Leader.Term
			s.Head = fmt.Sprintf("election %s: led, term %d, value %q", name, elect.Leader.Term, elect.Leader.Value)
		}
	default:
		lock, err := cl.Status(ctx, name)
		if err != nil {
			return s, err
		}
		s = Status{Answer: lock, Token: lock.Token, Holding: lock.Holding, Queue: lock.Queue, Unread: lock.Unread}
		s.Head = fmt.Sprintf("lock %s: free", name)
		if lock.Held {
			s.Head = fmt.Sprintf("lock %s: held, token %d", name, lock.Token)
		}
		if lock.BlockedBy != "" {
			s.Head = fmt.Sprintf("lock %s: blocked by %s, a node no session owns: delete it to free the lock", name, lock.BlockedBy)
		}
	}
	return s, nil
}

// WriteTable writes s for people: the head line, then a row per holder and
// waiter in order, with now as the time expiries and waits are counted
// from. Everything from the daemon is made terminal-safe.
func (s Status) WriteTable(w io.Writer, now time.Time) error {
	fmt.Fprintln(w, termtext.Safe(s.Head))
	if len(s.Holding)+len(s.Queue) == 0 {
		_, err := fmt.Fprintln(w, "no contenders")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tROLE\tTOKEN\tOWNER\tDAEMON\tCLIENT\tMODE\tWAITING SINCE\tEXPIRES")
	row := func(i int, role string, ct api.Contender) {
		tok := "-"
		if ct.Token != 0 {
			tok = fmt.Sprint(ct.Token)
		}
		owner := ct.Owner
		if ct.Command != "" {
			owner += " (" + ct.Command + ")"
		}
		if ct.Value != "" {
			owner += " value=" + ct.Value
		}
		exp := "-"
		if ct.ExpiresAt != nil {
			exp = ago(ct.ExpiresAt.Sub(now))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s (%s ago)\t%s\n", i, role, tok, dash(termtext.Safe(strings.TrimSpace(owner))), dash(termtext.Safe(ct.Daemon)), termtext.Safe(ct.Client), dash(termtext.Safe(ct.Mode)),
			ct.Since.Local().Format("2006-01-02 15:04:05"), now.Sub(ct.Since).Round(time.Second), exp)
	}
	for i, h := range s.Holding {
		row(i+1, "holder", h)
	}
	for i, q := range s.Queue {
		row(len(s.Holding)+i+1, "waiting", q)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Unread > 0 {
		_, err := fmt.Fprintf(w, "and %d more contenders, not read\n", s.Unread)
		return err
	}
	return nil
}

// WriteLeases writes the leases held through the daemon as a table.
func WriteLeases(w io.Writer, ls []api.Lease, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKEN\tOWNER\tMODE\tEXPIRES")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", termtext.Safe(l.Name), l.Token, dash(termtext.Safe(l.Owner)), dash(termtext.Safe(l.Mode)), ago(l.ExpiresAt.Sub(now)))
	}
	return tw.Flush()
}

func limitWord(limit int) string {
	if limit == 0 {
		return "an unrecorded limit"
	}
	return fmt.Sprint(limit)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago says when d from now is: "in 9.8s", or "9.8s ago".
func ago(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	if d < 0 {
		return (-d).String() + " ago"
	}
	return "in " + d.String()
}

// ErrNoHolder is a break without a token of a name nobody holds.
var ErrNoHolder = errors.New("no holder to break")

// HoldersError is a break without a token of a name with several holders:
// which one is for the operator to say.
type HoldersError struct {
	Name string
	N    int
}

func (e *HoldersError) Error() string { return fmt.Sprintf("%s has %d holders", e.Name, e.N) }

// OnlyHolder is the token of name's only holder, for a break without a
// token: the daemon breaks only a holder named by its token, so that a
// replayed request cannot break the next one.
func OnlyHolder(ctx context.Context, cl *client.Client, f api.Family, name string) (uint64, error) {
	s, err := Read(ctx, cl, f, name)
	if err != nil {
		return 0, err
	}
	switch len(s.Holding) {
	case 0:
		return 0, fmt.Errorf("%s has %w", termtext.Safe(name), ErrNoHolder)
	case 1:
		return s.Holding[0].Token, nil
	}
	return 0, &HoldersError{Name: name, N: len(s.Holding)}
}

// leaderWatchWait is how long each blocking read of WatchLeader waits
// before it asks again.
const leaderWatchWait = 5 * time.Minute

// WatchLeader calls each with the election's state now and after every
// change of leader (a new term, a new value, or no leader), until ctx ends
// (then it returns nil) or each or a read fails.
func WatchLeader(ctx context.Context, cl *client.Client, name string, each func(api.ElectionStatus) error) error {
	var (
		index   uint64
		printed *api.LeaderView
		first   = true
	)
	for {
		var (
			st  api.ElectionStatus
			err error
		)
		if first {
			st, err = cl.Election(ctx, name)
		} else {
			st, err = cl.WaitElection(ctx, name, index, leaderWatchWait)
		}
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil // interrupted: a clean end of watching
		}
		if err != nil {
			return err
		}
		index = st.Index
		if first || !sameLeader(printed, st.Leader) {
			if err := each(st); err != nil {
				return err
			}
			printed, first = st.Leader, false
		}
	}
}

func sameLeader(a, b *api.LeaderView) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Term == b.Term && a.Value == b.Value
}

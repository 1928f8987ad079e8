package chaos

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checkers of the other lease kinds: semaphores, shared locks,
// elections, multi-locks, lock-delays, breaks and /v1/check answers. Each
// works on a history of the same operations as the lock-set workload's,
// and none of them trusts a client's belief that it holds: what counts is
// what the daemons answered.

// Hold is a stretch of time in which a lease certainly held: a grant
// answered ok shows that it held at some point before the answer, a
// renewal answered ok (the daemon checks the grant in ZooKeeper before it
// answers) that it held at some point after the renewal was sent, and a
// lease that has ended never holds again. So it held from the grant's
// answer to the sending of its last renewal answered ok. A lease never
// renewed has no certain stretch.
type Hold struct {
	Grant   string
	Process int
	Lock    string   // a lock, semaphore or election
	Names   []string // a multi-lock's locks (Lock is then "")
	Shared  bool
	Token   uint64
	From    int64 // the grant's answer
	To      int64 // the last renewal answered ok, when sent
}

func (h Hold) String() string {
	mode := ""
	if h.Shared {
		mode = " shared"
	}
	what := h.Lock
	if len(h.Names) > 0 {
		what = strings.Join(h.Names, "+")
	}
	return fmt.Sprintf("process %d%s %s token %d (grant %s) from %s to %s", h.Process, mode, what, h.Token, short(h.Grant), at(h.From), at(h.To))
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// at shows a time of the history as seconds of the day, to the microsecond.
func at(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000000") }

// Holds lists the certain stretches of every lease of ops.
func Holds(ops []Op) []Hold {
	last := map[string]int64{}
	for _, op := range ops {
		if op.Kind == KindRenew && op.Result == ResultOK && op.Invoke > last[op.Grant] {
			last[op.Grant] = op.Invoke
		}
	}
	var out []Hold
	for _, op := range ops {
		if (op.Kind != KindAcquire && op.Kind != KindMulti) || op.Result != ResultOK {
			continue
		}
		to, ok := last[op.Grant]
		if !ok || to <= op.Complete {
			continue
		}
		h := Hold{Grant: op.Grant, Process: op.Process, Lock: op.Lock, Shared: op.Mode == "shared", Token: op.Token, From: op.Complete, To: to}
		if op.Kind == KindMulti {
			h.Lock, h.Names = "", op.Held
		}
		out = append(out, h)
	}
	return out
}

func overlap(a, b Hold) bool { return a.From < b.To && b.From < a.To }

// KindResult is what one kind's checker found, with counts of what it
// checked (by name: "grants", "holds", "reads", …).
type KindResult struct {
	Checked    map[string]int
	Violations []Violation
}

func (r *KindResult) add(checker, format string, args ...any) {
	if len(r.Violations) < 50 {
		r.Violations = append(r.Violations, Violation{checker, fmt.Sprintf(format, args...)})
	}
}

func (r *KindResult) count(what string, n int) {
	if r.Checked == nil {
		r.Checked = map[string]int{}
	}
	r.Checked[what] += n
}

// Summary renders the counts and the violations' number on one line.
func (r KindResult) Summary() string {
	var parts []string
	for _, k := range sortedKeys(r.Checked) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Checked[k]))
	}
	return fmt.Sprintf("checked: %s; violations %d", strings.Join(parts, ", "), len(r.Violations))
}

// tokens runs CheckTokens lock by lock on the grants of ops.
func (r *KindResult) tokens(ops []Op) {
	byLock := groupBy(ops, func(op Op) string { return op.Lock })
	for _, lock := range sortedKeys(byLock) {
		t := CheckTokens(byLock[lock], nil)
		r.count("grants", t.Grants)
		for _, v := range t.Violations {
			r.add(v.Checker, "%s: %s", lock, v.Detail)
		}
	}
}

// CheckSemaphore checks that no more than limit leases of one semaphore
// held at once, and that its grants' tokens are unique and rise.
func CheckSemaphore(ops []Op, limit int) KindResult {
	var r KindResult
	r.tokens(ops)
	holds := Holds(ops)
	r.count("holds", len(holds))
	byLock := map[string][]Hold{}
	for _, h := range holds {
		byLock[h.Lock] = append(byLock[h.Lock], h)
	}
	for _, lock := range sortedKeys(byLock) {
		hs := byLock[lock]
		most := 0
		for _, h := range hs {
			// The holds overlapping h's start: if more than limit,
			// they all held at that instant.
			var at []Hold
			for _, o := range hs {
				if o.From <= h.From && h.From < o.To {
					at = append(at, o)
				}
			}
			most = max(most, len(at))
			if len(at) > limit {
				var names []string
				for _, o := range at {
					names = append(names, o.String())
				}
				r.add("semaphore", "%s: %d holders at once (limit %d): %s", lock, len(at), limit, strings.Join(names, "; "))
			}
		}
		r.count("most holders at once", most)
	}
	return r
}

// CheckShared checks that no exclusive lease of a lock held while any
// other lease of it did; readers may hold together (counted, to show the
// workload let them).
func CheckShared(ops []Op) KindResult {
	var r KindResult
	r.tokens(ops)
	holds := Holds(ops)
	r.count("holds", len(holds))
	readers := 0
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.Lock != b.Lock || !overlap(a, b) {
				continue
			}
			if a.Shared && b.Shared {
				readers++
				continue
			}
			r.add("shared", "%s: a writer held together with another holder: %s; %s", a.Lock, a, b)
		}
	}
	r.count("readers holding together", readers)
	return r
}

// CheckElection checks an election's history: terms are unique and rise
// (one leader per term), no two leaderships held at once, and a leader read
// never shows a term below one already acknowledged (by a grant or by a
// read) before it was sent.
func CheckElection(ops []Op) KindResult {
	var r KindResult
	var grants []Op
	for _, op := range ops {
		if op.Kind == KindAcquire {
			grants = append(grants, op)
		}
	}
	r.tokens(grants)
	holds := Holds(ops)
	r.count("holds", len(holds))
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.Lock == b.Lock && overlap(a, b) {
				r.add("election", "%s: two leaders at once: %s; %s", a.Lock, a, b)
			}
		}
	}
	// Acknowledged terms (grants and reads) by completion; reads by
	// invocation: each read must show at least the highest term
	// acknowledged before it was sent.
	var acks, reads []Op
	for _, op := range ops {
		if op.Result != ResultOK || op.Token == 0 {
			continue
		}
		switch op.Kind {
		case KindAcquire:
			acks = append(acks, op)
		case KindLeader:
			acks = append(acks, op)
			reads = append(reads, op)
		}
	}
	r.count("leader reads", len(reads))
	sort.Slice(acks, func(i, j int) bool { return acks[i].Complete < acks[j].Complete })
	sort.Slice(reads, func(i, j int) bool { return reads[i].Invoke < reads[j].Invoke })
	best := map[string]Op{}
	k := 0
	for _, rd := range reads {
		for k < len(acks) && acks[k].Complete < rd.Invoke {
			if acks[k].Token > best[acks[k].Lock].Token {
				best[acks[k].Lock] = acks[k]
			}
			k++
		}
		if b := best[rd.Lock]; rd.Token < b.Token {
			r.add("election", "%s: process %d read term %d at %s after term %d had been acknowledged (%s by process %d at %s): a leader read went back",
				rd.Lock, rd.Process, rd.Token, at(rd.Invoke), b.Token, b.Kind, b.Process, at(b.Complete))
		}
	}
	return r
}

// CheckMulti checks multi-locks: a multi-lock never holds a strict subset
// of its locks (an acquire answered ok holds them all, one that failed
// holds none), no lock is held by two leases at once (multi-locks and
// single locks alike), every lock's tokens rise, and every acquire is
// answered (a deadlocked one never is).
func CheckMulti(ops []Op) KindResult {
	var r KindResult
	var perLock []Op // each multi grant as a grant of each of its locks
	for _, op := range ops {
		switch {
		case op.Kind == KindMulti:
			r.count("multi acquires", 1)
			if len(op.Held) > 0 && len(op.Held) < len(op.Names) {
				r.add("multi", "process %d held %v of %v (a strict subset) when its acquire ended (%s)", op.Process, op.Held, op.Names, op.Result)
			}
			if op.Result == ResultOK && len(op.Held) != len(op.Names) {
				r.add("multi", "process %d was granted %v of %v", op.Process, op.Held, op.Names)
			}
			if op.Complete == 0 {
				r.add("multi", "process %d's acquire of %v was never answered (a deadlock, or a client that died)", op.Process, op.Names)
			}
			if op.Result == ResultOK {
				for _, n := range op.Held {
					g := op
					g.Kind, g.Lock = KindAcquire, n
					perLock = append(perLock, g)
				}
			}
		case op.Kind == KindAcquire:
			perLock = append(perLock, op)
		}
	}
	r.tokens(perLock)
	holds := Holds(ops)
	r.count("holds", len(holds))
	locksOf := func(h Hold) []string {
		if len(h.Names) > 0 {
			return h.Names
		}
		return []string{h.Lock}
	}
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if !overlap(a, b) {
				continue
			}
			for _, x := range locksOf(a) {
				for _, y := range locksOf(b) {
					if x == y {
						r.add("multi", "lock %s held by two leases at once: %s; %s", x, a, b)
					}
				}
			}
		}
	}
	return r
}

// CheckLockDelay checks that no lock was granted within delay of an
// unclean end of its previous holder (a lease not released ok: expired,
// lost or broken). The end came no earlier than the lease's last sign of
// life (its grant's or its last renewal's sending, where the daemon found
// it holding), so a next grant answered before that plus the delay is a
// violation.
func CheckLockDelay(ops []Op, delay time.Duration) KindResult {
	var r KindResult
	r.tokens(ops)
	released := map[string]string{} // grant -> the release's result
	alive := map[string]int64{}     // grant -> its last sign of life
	for _, op := range ops {
		switch {
		case op.Kind == KindRelease:
			if prev := released[op.Grant]; prev != ResultOK && prev != ResultInfo {
				released[op.Grant] = op.Result
			}
		case op.Kind == KindRenew && op.Result == ResultOK:
			alive[op.Grant] = max(alive[op.Grant], op.Invoke)
		}
	}
	byLock := map[string][]Op{}
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Result == ResultOK {
			byLock[op.Lock] = append(byLock[op.Lock], op)
			alive[op.Grant] = max(alive[op.Grant], op.Invoke)
		}
	}
	for _, lock := range sortedKeys(byLock) {
		gs := byLock[lock]
		sort.Slice(gs, func(i, j int) bool { return gs[i].Token < gs[j].Token })
		for i := 1; i < len(gs); i++ {
			prev, next := gs[i-1], gs[i]
			switch released[prev.Grant] {
			case ResultOK:
				r.count("clean ends", 1)
				continue
			case ResultInfo:
				continue // may have been clean
			}
			r.count("unclean ends", 1)
			if bound := alive[prev.Grant] + int64(delay); next.Complete < bound {
				r.add("lock-delay", "%s: token %d (process %d) was granted at %s, %v after the last sign of life of token %d (process %d), which ended uncleanly: within the lock-delay of %v",
					lock, next.Token, next.Process, at(next.Complete), time.Duration(next.Complete-alive[prev.Grant]).Round(time.Millisecond), prev.Token, prev.Process, delay)
			}
		}
	}
	return r
}

// AuditBreak is a break line of a daemon's audit log: the lock and the
// broken token.
type AuditBreak struct {
	Name  string
	Token uint64
}

// CheckBreaks checks every break answered ok: the audit logs have its line,
// the broken lease is never again renewed ok once the break was answered,
// and every grant of the lock sent after that has a higher token.
func CheckBreaks(ops []Op, audit []AuditBreak) KindResult {
	var r KindResult
	r.tokens(ops)
	logged := map[AuditBreak]bool{}
	for _, a := range audit {
		logged[a] = true
	}
	grantOf := map[uint64]string{}
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Result == ResultOK {
			grantOf[op.Token] = op.Grant
		}
	}
	for _, b := range ops {
		if b.Kind != KindBreak || b.Result != ResultOK {
			continue
		}
		r.count("breaks", 1)
		if !logged[AuditBreak{b.Lock, b.Token}] {
			r.add("break", "%s: the break of token %d (answered at %s) has no line in the audit logs", b.Lock, b.Token, at(b.Complete))
		}
		for _, op := range ops {
			if op.Lock != b.Lock || op.Invoke <= b.Complete || op.Result != ResultOK {
				continue
			}
			switch {
			case op.Kind == KindRenew && op.Grant != "" && op.Grant == grantOf[b.Token]:
				r.add("break", "%s: the broken lease (token %d) was renewed ok by process %d at %s, after the break was answered", b.Lock, b.Token, op.Process, at(op.Invoke))
			case op.Kind == KindAcquire && op.Token <= b.Token:
				r.add("break", "%s: token %d was granted to process %d after the break of token %d: the next token must be higher", b.Lock, op.Token, op.Process, b.Token)
			}
		}
	}
	return r
}

// The /v1/check model: one exclusive lock, its state the token of the
// latest grant and whether that grant still holds. A grant must raise the
// token; a check answers valid only for the current token while it holds;
// an answer "not valid" for the current token means it has ended, and it
// never holds again. A lease ends on its own (at its TTL, with its
// session, at a release), so the model lets it end at any check that says
// so. Releases are not in the model: one answered ok while ZooKeeper was
// away leaves the contender to the daemon's janitor, and the lock is then
// still held by the released token until the janitor deletes it, which is
// safe (nobody else holds it) and seen by checks as a lease that ends a
// little later.
type valState struct {
	Cur  uint64
	Live bool
}

type valInput struct {
	Kind  string // acquire, check
	Token uint64
	Proc  int
}

type valOutput struct {
	Valid bool
}

// ValidityModel is the porcupine model of a lock as /v1/check answers for
// it.
func ValidityModel() porcupine.Model {
	nm := &porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{valState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			s, in, out := state.(valState), input.(valInput), output.(valOutput)
			switch in.Kind {
			case KindAcquire:
				if in.Token <= s.Cur {
					return nil
				}
				return []interface{}{valState{Cur: in.Token, Live: true}}
			default: // check
				if out.Valid {
					if s.Cur == in.Token && s.Live {
						return []interface{}{s}
					}
					return nil
				}
				if s.Cur == in.Token {
					return []interface{}{valState{Cur: s.Cur}}
				}
				return []interface{}{s}
			}
		},
		Equal: func(a, b interface{}) bool { return a.(valState) == b.(valState) },
		Hash: func(state interface{}) uint64 {
			s := state.(valState)
			h := fnv.New64a()
			fmt.Fprintf(h, "%d/%v", s.Cur, s.Live)
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(valInput), output.(valOutput)
			if in.Kind == KindCheck {
				return fmt.Sprintf("p%d check %d -> valid %v", in.Proc, in.Token, out.Valid)
			}
			return fmt.Sprintf("p%d %s %d", in.Proc, in.Kind, in.Token)
		},
		DescribeState: func(state interface{}) string {
			s := state.(valState)
			return fmt.Sprintf("token %d holds %v", s.Cur, s.Live)
		},
	}
	return nm.ToModel()
}

// ValidityOps turns a history of one lock into the porcupine operations of
// ValidityModel: the grants and the checks answered. A grant of unknown
// outcome is left out: its token is unknown, and it can only make an
// answer "valid" for an older token wrong, never a right one.
func ValidityOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		in := valInput{Kind: op.Kind, Token: op.Token, Proc: op.Process}
		switch {
		case op.Kind == KindAcquire && op.Result == ResultOK:
		case op.Kind == KindCheck && op.Result == ResultOK:
		default:
			continue
		}
		out = append(out, porcupine.Operation{ClientId: op.Process, Input: in, Call: op.Invoke, Output: valOutput{Valid: op.Valid}, Return: op.Complete})
	}
	return out
}

// CheckValidity checks with porcupine that /v1/check's answers on one lock
// are linearizable with its grants and releases: above all, that no check
// answers valid for a token once a later grant was acknowledged.
func CheckValidity(ops []Op, timeout time.Duration) (KindResult, porcupine.LinearizationInfo) {
	var r KindResult
	r.tokens(ops)
	pops := ValidityOps(ops)
	for _, op := range pops {
		if op.Input.(valInput).Kind == KindCheck {
			r.count("checks", 1)
			if op.Output.(valOutput).Valid {
				r.count("checks valid", 1)
			}
		}
	}
	res, info := porcupine.CheckOperationsVerbose(ValidityModel(), pops, timeout)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		r.add("check", "the search did not finish within %v: not verified", timeout)
	default:
		r.add("check", "the check answers are not linearizable with the grants (see the visualization)")
		// The direct form: valid for a token after a later grant was
		// acknowledged.
		for _, c := range ops {
			if c.Kind != KindCheck || c.Result != ResultOK || !c.Valid {
				continue
			}
			for _, g := range ops {
				if g.Kind == KindAcquire && g.Result == ResultOK && g.Token > c.Token && g.Complete < c.Invoke {
					r.add("check", "process %d's check of token %d at %s answered valid after token %d had been granted (answered at %s)",
						c.Process, c.Token, at(c.Invoke), g.Token, at(g.Complete))
					break
				}
			}
		}
	}
	return r, info
}

// LoggedEnd is a lease's end as a daemon logged it: expired, lost, broken,
// or a leadership that ended.
type LoggedEnd struct {
	Lock  string
	Token uint64
	At    int64 // the log line's time
}

// CheckHeldPastEnd checks that no client was told it holds (a renewal
// answered ok) once a daemon had logged its lease's end: no renewal of a
// lease sent after the line that says it expired, was lost or broken, or
// that its leadership ended.
func CheckHeldPastEnd(ops []Op, ends []LoggedEnd) KindResult {
	var r KindResult
	first := map[string]LoggedEnd{}
	for _, e := range ends {
		k := fmt.Sprintf("%s@%d", e.Lock, e.Token)
		if f, ok := first[k]; !ok || e.At < f.At {
			first[k] = e
		}
	}
	r.count("logged ends", len(first))
	for _, op := range ops {
		if op.Kind != KindRenew || op.Result != ResultOK {
			continue
		}
		r.count("renewals", 1)
		if e, ok := first[fmt.Sprintf("%s@%d", op.Lock, op.Token)]; ok && op.Invoke > e.At {
			r.add("held", "%s: process %d's renewal of token %d sent at %s answered ok, %v after a daemon logged the lease's end",
				op.Lock, op.Process, op.Token, at(op.Invoke), time.Duration(op.Invoke-e.At).Round(time.Millisecond))
		}
	}
	return r
}

package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Violation is one thing a checker found wrong.
type Violation struct {
	Checker string `json:"checker"` // adds, linearizable, tokens
	Detail  string `json:"detail"`
}

func (v Violation) String() string { return v.Checker + ": " + v.Detail }

// AddsResult is what CheckAdds found.
type AddsResult struct {
	Acknowledged int   // writes answered ok
	Unknown      int   // writes of unknown outcome
	Recovered    int   // unknown writes whose add is in the final read
	Lost         []int // acknowledged adds missing from the final read
	FinalSize    int
	Violations   []Violation
}

// CheckAdds checks, key by key, that every acknowledged add is in the final
// read of its key: the last read with Final set that answered ok. A key
// without one is a violation too: nothing could be checked.
func CheckAdds(ops []Op) AddsResult {
	var res AddsResult
	groups := groupBy(ops, func(op Op) string { return op.Key })
	if len(groups) == 0 {
		return checkAddsKey(nil)
	}
	for _, key := range sortedKeys(groups) {
		if key == "" && len(groups) > 1 && !hasStoreOps(groups[key]) {
			continue // the lock operations: no key of their own
		}
		r := checkAddsKey(groups[key])
		res.Acknowledged += r.Acknowledged
		res.Unknown += r.Unknown
		res.Recovered += r.Recovered
		res.Lost = append(res.Lost, r.Lost...)
		res.FinalSize += r.FinalSize
		for _, v := range r.Violations {
			if key != "" {
				v.Detail = "key " + key + ": " + v.Detail
			}
			res.Violations = append(res.Violations, v)
		}
	}
	sort.Ints(res.Lost)
	return res
}

// groupBy splits ops by by(op), keeping their order.
func groupBy(ops []Op, by func(Op) string) map[string][]Op {
	g := map[string][]Op{}
	for _, op := range ops {
		g[by(op)] = append(g[by(op)], op)
	}
	return g
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func hasStoreOps(ops []Op) bool {
	for _, op := range ops {
		if op.Kind == KindRead || op.Kind == KindWrite {
			return true
		}
	}
	return false
}

// checkAddsKey is CheckAdds on the operations of one key.
func checkAddsKey(ops []Op) AddsResult {
	var res AddsResult
	var final *Op
	for i := range ops {
		if ops[i].Kind == KindRead && ops[i].Final && ops[i].Result == ResultOK {
			if final == nil || ops[i].Invoke > final.Invoke {
				final = &ops[i]
			}
		}
	}
	if final == nil {
		res.Violations = append(res.Violations, Violation{"adds", "no final read answered ok: nothing to check against"})
		return res
	}
	in := make(map[int]bool, len(final.Value))
	for _, x := range final.Value {
		in[x] = true
	}
	res.FinalSize = len(final.Value)
	for _, op := range ops {
		if op.Kind != KindWrite {
			continue
		}
		switch op.Result {
		case ResultOK:
			res.Acknowledged++
			if !in[op.Add] {
				res.Lost = append(res.Lost, op.Add)
			}
		case ResultInfo:
			res.Unknown++
			if in[op.Add] {
				res.Recovered++
			}
		}
	}
	sort.Ints(res.Lost)
	if len(res.Lost) > 0 {
		res.Violations = append(res.Violations, Violation{"adds", fmt.Sprintf(
			"%d of %d acknowledged adds are missing from the final read (%.1f%%), e.g. %v",
			len(res.Lost), res.Acknowledged, 100*float64(len(res.Lost))/float64(res.Acknowledged), head(res.Lost, 8))})
	}
	return res
}

func head(xs []int, n int) []int {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// TokensResult is what CheckTokens found.
type TokensResult struct {
	Grants     int
	Violations []Violation
}

// CheckTokens checks the token stream: the acquires that answered ok, from
// every daemon. Each grant has a token no other grant has, and a grant that
// completed before another was invoked has the lower token. extra are
// tokens the daemons logged as granted (without times); they must be unique
// too, and every token a client saw must be among them when extra is given.
func CheckTokens(ops []Op, extra map[string][]uint64) TokensResult {
	var grants []Op
	for _, op := range ops {
		if op.Kind == KindAcquire && op.Result == ResultOK {
			grants = append(grants, op)
		}
	}
	res := TokensResult{Grants: len(grants)}
	add := func(format string, args ...any) {
		if len(res.Violations) < 50 {
			res.Violations = append(res.Violations, Violation{"tokens", fmt.Sprintf(format, args...)})
		}
	}
	// Unique per grant.
	byToken := map[uint64]Op{}
	for _, g := range grants {
		if prev, ok := byToken[g.Token]; ok && prev.Grant != g.Grant {
			add("token %d granted twice: to %s (process %d, daemon %s) and to %s (process %d, daemon %s)",
				g.Token, prev.Grant, prev.Process, prev.Daemon, g.Grant, g.Process, g.Daemon)
			continue
		}
		byToken[g.Token] = g
	}
	// Rising in real-time order: sweep the grants by invocation, keeping the
	// highest token among those that completed before it.
	byComplete := append([]Op(nil), grants...)
	sort.Slice(byComplete, func(i, j int) bool { return byComplete[i].Complete < byComplete[j].Complete })
	byInvoke := append([]Op(nil), grants...)
	sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	var best *Op
	k := 0
	for _, b := range byInvoke {
		for k < len(byComplete) && byComplete[k].Complete < b.Invoke {
			if best == nil || byComplete[k].Token > best.Token {
				best = &byComplete[k]
			}
			k++
		}
		if best != nil && best.Token >= b.Token && best.Grant != b.Grant {
			add("token %d (grant %s, process %d, daemon %s) was granted after token %d (grant %s, process %d, daemon %s) had been: tokens must rise",
				b.Token, b.Grant, b.Process, b.Daemon, best.Token, best.Grant, best.Process, best.Daemon)
		}
	}
	if extra != nil {
		logged := map[uint64]string{}
		for daemon, toks := range extra {
			for _, t := range toks {
				if d, ok := logged[t]; ok {
					add("token %d logged as granted twice (daemons %s and %s)", t, d, daemon)
				}
				logged[t] = daemon
			}
		}
		for _, g := range grants {
			if _, ok := logged[g.Token]; !ok {
				add("token %d reached process %d as a grant from %s, but no daemon logged granting it", g.Token, g.Process, g.Daemon)
			}
		}
	}
	return res
}

// Report is every checker's result on one history.
type Report struct {
	Ops          int
	Counts       map[string]map[string]int // kind -> result -> n
	Adds         AddsResult
	Tokens       TokensResult
	Linearizable LinResult
}

// Check runs every checker. logged holds the tokens the daemons logged as
// granted, by lock and then by daemon (nil: none known); the token stream is
// checked lock by lock, the store key by key.
func Check(ops []Op, logged map[string]map[string][]uint64) Report {
	r := Report{Ops: len(ops), Counts: map[string]map[string]int{}}
	for _, op := range ops {
		if r.Counts[op.Kind] == nil {
			r.Counts[op.Kind] = map[string]int{}
		}
		r.Counts[op.Kind][op.Result]++
	}
	r.Adds = CheckAdds(ops)
	byLock := groupBy(ops, func(op Op) string { return op.Lock })
	for _, lock := range sortedKeys(byLock) {
		t := CheckTokens(byLock[lock], logged[lock])
		r.Tokens.Grants += t.Grants
		for _, v := range t.Violations {
			if lock != "" {
				v.Detail = "lock " + lock + ": " + v.Detail
			}
			r.Tokens.Violations = append(r.Tokens.Violations, v)
		}
	}
	r.Linearizable = CheckLinearizable(ops, 0)
	return r
}

// LongestStall is the longest stretch of [from, to] (nanoseconds) in which
// no operation of ops completed ok, and where it began.
func LongestStall(ops []Op, from, to int64) (time.Duration, int64) {
	var done []int64
	for _, op := range ops {
		if op.Result == ResultOK && op.Complete > from && op.Complete < to {
			done = append(done, op.Complete)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	done = append(done, to)
	longest, at, prev := int64(0), from, from
	for _, c := range done {
		if c-prev > longest {
			longest, at = c-prev, prev
		}
		prev = c
	}
	return time.Duration(longest), at
}

// Violations lists every violation of r.
func (r Report) Violations() []Violation {
	var v []Violation
	v = append(v, r.Adds.Violations...)
	v = append(v, r.Linearizable.Violations...)
	v = append(v, r.Tokens.Violations...)
	return v
}

// ByChecker counts r's violations per checker.
func (r Report) ByChecker() map[string]int {
	return map[string]int{
		"adds":         len(r.Adds.Violations),
		"linearizable": len(r.Linearizable.Violations),
		"tokens":       len(r.Tokens.Violations),
	}
}

// Table renders r's counts as a fixed-width table.
func (r Report) Table() string {
	var b strings.Builder
	kinds := []string{KindAcquire, KindRenew, KindRead, KindWrite, KindRelease}
	results := []string{ResultOK, ResultStale, ResultFail, ResultInfo}
	fmt.Fprintf(&b, "%-10s", "operation")
	for _, res := range results {
		fmt.Fprintf(&b, " %8s", res)
	}
	b.WriteString("\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "%-10s", k)
		for _, res := range results {
			fmt.Fprintf(&b, " %8d", r.Counts[k][res])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "acknowledged adds %d, lost %d, unknown %d (of which in the final read %d), final set %d\n",
		r.Adds.Acknowledged, len(r.Adds.Lost), r.Adds.Unknown, r.Adds.Recovered, r.Adds.FinalSize)
	fmt.Fprintf(&b, "grants %d; store operations checked %d (linearizability: %s)\n", r.Tokens.Grants, r.Linearizable.Checked, r.Linearizable.Result)
	bc := r.ByChecker()
	fmt.Fprintf(&b, "violations: adds %d, linearizable %d, tokens %d\n", bc["adds"], bc["linearizable"], bc["tokens"])
	return b.String()
}

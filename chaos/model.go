package chaos

import (
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// The fenced register: one key of the store as the workload uses it. Its
// state is the highest token used on it (reads included), the grant that
// used it, and the set stored. An operation is accepted if its token is
// above the max, or equal to it and from the same grant: equal tokens are
// admitted by the store because a holder keeps its token across renewals,
// so two grants sharing a token is exactly what the store cannot tell
// apart, and the model calls it a violation.
type regState struct {
	Max   uint64
	Grant string
	Hash  uint64
	N     int
}

type regInput struct {
	Key   string
	Write bool
	Token uint64
	Grant string
	Hash  uint64 // write: of the set written
	N     int
	Add   int
	Proc  int
}

type regOutput struct {
	Status string // ok, stale, info
	Hash   uint64 // read ok: of the set read
	N      int
}

func (s regState) accepts(in regInput) bool {
	return in.Token > s.Max || (in.Token == s.Max && in.Grant == s.Grant)
}

func (s regState) apply(in regInput) regState {
	n := regState{Max: in.Token, Grant: in.Grant, Hash: s.Hash, N: s.N}
	if in.Write {
		n.Hash, n.N = in.Hash, in.N
	}
	return n
}

// RegisterModel is the porcupine model of the fenced register.
func RegisterModel() porcupine.Model {
	nm := &porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{regState{Hash: hashSet(nil)}} },
		Step: func(state, input, output interface{}) []interface{} {
			s, in, out := state.(regState), input.(regInput), output.(regOutput)
			switch out.Status {
			case ResultOK:
				if !s.accepts(in) || (!in.Write && (out.Hash != s.Hash || out.N != s.N)) {
					return nil
				}
				return []interface{}{s.apply(in)}
			case ResultStale:
				if s.accepts(in) {
					return nil
				}
				return []interface{}{s}
			default: // unknown: it happened, or it did not
				if s.accepts(in) {
					return []interface{}{s, s.apply(in)}
				}
				return []interface{}{s}
			}
		},
		// Keys are independent registers: each is checked on its own.
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(regInput).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
		Hash: func(state interface{}) uint64 {
			s := state.(regState)
			h := fnv.New64a()
			fmt.Fprintf(h, "%d/%s/%d/%d", s.Max, s.Grant, s.Hash, s.N)
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(regInput), output.(regOutput)
			if in.Write {
				return fmt.Sprintf("p%d write +%d token %d -> %s", in.Proc, in.Add, in.Token, out.Status)
			}
			if out.Status == ResultOK {
				return fmt.Sprintf("p%d read token %d -> %d elements", in.Proc, in.Token, out.N)
			}
			return fmt.Sprintf("p%d read token %d -> %s", in.Proc, in.Token, out.Status)
		},
		DescribeState: func(state interface{}) string {
			s := state.(regState)
			return fmt.Sprintf("max token %d (%s), %d elements", s.Max, s.Grant, s.N)
		},
	}
	return nm.ToModel()
}

// hashSet hashes a set of ints independently of order.
func hashSet(xs []int) uint64 {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	h := fnv.New64a()
	var b []byte
	for _, x := range s {
		b = strconv.AppendInt(b[:0], int64(x), 10)
		b = append(b, ',')
		h.Write(b)
	}
	return h.Sum64()
}

// LinResult is what CheckLinearizable found.
type LinResult struct {
	Result     porcupine.CheckResult
	Checked    int // store operations in the check
	Violations []Violation
	info       porcupine.LinearizationInfo
	ok         bool // info is set
}

// StoreOps turns the store operations of a history into porcupine
// operations. Operations that definitely failed (ResultFail) are left out;
// those of unknown outcome stay open until after the end of the history.
func StoreOps(ops []Op) []porcupine.Operation {
	var end int64
	for _, op := range ops {
		if op.Complete > end {
			end = op.Complete
		}
		if op.Invoke > end {
			end = op.Invoke
		}
	}
	var out []porcupine.Operation
	for _, op := range ops {
		if (op.Kind != KindRead && op.Kind != KindWrite) || op.Result == ResultFail {
			continue
		}
		in := regInput{Key: op.Key, Write: op.Kind == KindWrite, Token: op.Token, Grant: op.Grant, Add: op.Add, Proc: op.Process}
		if in.Write {
			in.Hash, in.N = hashSet(op.Value), len(op.Value)
		}
		o := regOutput{Status: op.Result}
		ret := op.Complete
		switch op.Result {
		case ResultOK:
			if !in.Write {
				o.Hash, o.N = hashSet(op.Value), len(op.Value)
			}
		case ResultStale:
		default:
			o.Status = ResultInfo
			ret = end + 1
		}
		out = append(out, porcupine.Operation{ClientId: op.Process, Input: in, Call: op.Invoke, Output: o, Return: ret})
	}
	return out
}

// CheckLinearizable checks that the store behaved as a fenced register over
// the history (porcupine's search, bounded by timeout; 0 means 5 minutes).
// When it did not, the violations name accepted operations whose token was
// below, or equal to another grant's, one accepted before them, where such
// a pair exists; the search's verdict stands either way.
func CheckLinearizable(ops []Op, timeout time.Duration) LinResult {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	pops := StoreOps(ops)
	res := LinResult{Checked: len(pops)}
	res.Result, res.info = porcupine.CheckOperationsVerbose(RegisterModel(), pops, timeout)
	res.ok = true
	switch res.Result {
	case porcupine.Ok:
	case porcupine.Unknown:
		res.Violations = append(res.Violations, Violation{"linearizable", fmt.Sprintf("the search did not finish within %v: not verified", timeout)})
	default:
		pairs := StaleAcceptances(ops)
		if len(pairs) == 0 {
			res.Violations = append(res.Violations, Violation{"linearizable", "no linearization as a fenced register exists (see the visualization)"})
		}
		res.Violations = append(res.Violations, pairs...)
	}
	return res
}

// StaleAcceptances lists accepted store operations invoked after another
// accepted operation with a higher token, or with the same token from
// another grant, had completed: the direct form of "no operation with a
// token below an earlier accepted one was accepted".
func StaleAcceptances(ops []Op) []Violation {
	byKey := groupBy(ops, func(op Op) string { return op.Key })
	var out []Violation
	for _, key := range sortedKeys(byKey) {
		for _, v := range staleAcceptancesKey(byKey[key]) {
			if key != "" {
				v.Detail = "key " + key + ": " + v.Detail
			}
			if len(out) < 20 {
				out = append(out, v)
			}
		}
	}
	return out
}

func staleAcceptancesKey(ops []Op) []Violation {
	var acc []Op
	for _, op := range ops {
		if (op.Kind == KindRead || op.Kind == KindWrite) && op.Result == ResultOK {
			acc = append(acc, op)
		}
	}
	byComplete := append([]Op(nil), acc...)
	sort.Slice(byComplete, func(i, j int) bool { return byComplete[i].Complete < byComplete[j].Complete })
	byInvoke := append([]Op(nil), acc...)
	sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	var out []Violation
	var best *Op
	k := 0
	for _, b := range byInvoke {
		for k < len(byComplete) && byComplete[k].Complete < b.Invoke {
			if best == nil || byComplete[k].Token > best.Token {
				best = &byComplete[k]
			}
			k++
		}
		if best == nil {
			continue
		}
		if best.Token > b.Token || (best.Token == b.Token && best.Grant != b.Grant) {
			if len(out) < 20 {
				out = append(out, Violation{"linearizable", fmt.Sprintf(
					"%s by process %d with token %d (grant %s) was accepted after %s by process %d with token %d (grant %s) had been",
					b.Kind, b.Process, b.Token, b.Grant, best.Kind, best.Process, best.Token, best.Grant)})
			}
		}
	}
	return out
}

// Visualize writes porcupine's HTML visualization of the check to path.
func (r LinResult) Visualize(path string) error {
	if !r.ok {
		return os.WriteFile(path, []byte("<p>no linearizability check was run</p>"), 0o644)
	}
	return porcupine.VisualizePath(RegisterModel(), r.info, path)
}

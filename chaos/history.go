package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Operation kinds.
const (
	KindAcquire = "acquire"
	KindRead    = "read"
	KindWrite   = "write"
	KindRelease = "release"
	KindRenew   = "renew"
	// The kinds of the models of the other lease kinds.
	KindLeader = "leader" // an election's leader read: Token is the term read, 0 for none
	KindCheck  = "check"  // POST /v1/check of Token on Lock: Valid is the answer
	KindMulti  = "multi"  // a multi-lock's acquire of Names: Held are the names it holds after it
	KindBreak  = "break"  // an operator's break of Token on Lock
)

// Results. OK, Stale and Fail are definite: Stale and Fail had no effect.
// Info is unknown (a timeout, a reset connection, a process that died): the
// operation may or may not have taken effect.
const (
	ResultOK    = "ok"
	ResultStale = "stale"
	ResultFail  = "fail"
	ResultInfo  = "info"
)

// Op is one operation of a history. Times are nanoseconds from one source
// shared by every process of a run (the wall clock on one machine, or the
// simulation's virtual clock).
type Op struct {
	Process  int      `json:"process"`
	ID       int      `json:"id"` // per process
	Kind     string   `json:"kind"`
	Lock     string   `json:"lock,omitempty"` // lock operations: the lock; store operations: the lock the token is from
	Key      string   `json:"key,omitempty"`  // store operations: the key
	Daemon   string   `json:"daemon,omitempty"`
	Grant    string   `json:"grant,omitempty"` // the lease the token came from
	Token    uint64   `json:"token,omitempty"`
	Invoke   int64    `json:"invoke"`
	Complete int64    `json:"complete,omitempty"` // 0: never completed
	Result   string   `json:"result,omitempty"`
	Value    []int    `json:"value,omitempty"` // read: the set read; write: the set written
	Add      int      `json:"add,omitempty"`   // write: the element it adds
	Final    bool     `json:"final,omitempty"` // the closing read of the run
	Mode     string   `json:"mode,omitempty"`  // acquire: "shared" for a reader
	Names    []string `json:"names,omitempty"` // multi: the locks asked for
	Held     []string `json:"held,omitempty"`  // multi: the locks held when it completed
	Valid    bool     `json:"valid,omitempty"` // check: the answer
	Err      string   `json:"err,omitempty"`
}

// Recorder appends a process's operations to a JSON-lines file: one line at
// invocation and one at completion, each a single write(2), so that the file
// survives a SIGKILL of the process with at most the completion missing.
type Recorder struct {
	mu   sync.Mutex
	w    io.Writer
	proc int
	next int
	err  error
}

// NewRecorder records for process proc on w.
func NewRecorder(w io.Writer, proc int) *Recorder { return &Recorder{w: w, proc: proc} }

// Invoke records the start of op and returns it with its process and id set.
func (r *Recorder) Invoke(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	op.Process, op.ID, op.Complete, op.Result = r.proc, r.next, 0, ""
	r.writeLocked(op)
	return op
}

// Complete records op's completion.
func (r *Recorder) Complete(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writeLocked(op)
}

// Err is the first write error, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) writeLocked(op Op) {
	b, err := json.Marshal(op)
	if err == nil {
		_, err = r.w.Write(append(b, '\n'))
	}
	if err != nil && r.err == nil {
		r.err = err
	}
}

// ReadHistory reads JSON-lines histories and merges invocation and
// completion lines into operations, sorted by invocation time. An operation
// with no completion line gets ResultInfo and Complete 0.
func ReadHistory(rs ...io.Reader) ([]Op, error) {
	type key struct{ p, id int }
	ops := map[key]*Op{}
	for _, r := range rs {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		line := 0
		for sc.Scan() {
			line++
			if len(sc.Bytes()) == 0 {
				continue
			}
			var op Op
			if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
				// A torn last line (the process was killed mid-write)
				// is the only tolerated damage.
				if !sc.Scan() {
					break
				}
				return nil, fmt.Errorf("chaos: history line %d: %w", line, err)
			}
			k := key{op.Process, op.ID}
			if prev, ok := ops[k]; ok && op.Result == "" {
				return nil, fmt.Errorf("chaos: history line %d: process %d op %d invoked twice", line, op.Process, op.ID)
			} else if ok {
				op.Invoke = prev.Invoke
			}
			o := op
			ops[k] = &o
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("chaos: read history: %w", err)
		}
	}
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if op.Result == "" {
			op.Result, op.Complete = ResultInfo, 0
		}
		out = append(out, *op)
	}
	SortOps(out)
	return out, nil
}

// ReadHistoryFiles reads every file matching glob.
func ReadHistoryFiles(glob string) ([]Op, error) {
	paths, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	var rs []io.Reader
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rs = append(rs, f)
	}
	return ReadHistory(rs...)
}

// SortOps orders ops by invocation, then process and id.
func SortOps(ops []Op) {
	sort.Slice(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		if a.Invoke != b.Invoke {
			return a.Invoke < b.Invoke
		}
		if a.Process != b.Process {
			return a.Process < b.Process
		}
		return a.ID < b.ID
	})
}

// WriteHistory writes ops as JSON lines (one line per operation).
func WriteHistory(w io.Writer, ops []Op) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return err
		}
	}
	return bw.Flush()
}

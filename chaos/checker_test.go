package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Hand-made histories. Helpers build operations with explicit times.
func acq(p int, grant string, tok uint64, inv, done int64) Op {
	return Op{Process: p, Kind: KindAcquire, Grant: grant, Token: tok, Invoke: inv, Complete: done, Result: ResultOK, Daemon: "d"}
}

func rd(p int, grant string, tok uint64, inv, done int64, res string, v ...int) Op {
	return Op{Process: p, Kind: KindRead, Grant: grant, Token: tok, Invoke: inv, Complete: done, Result: res, Value: v}
}

func wr(p int, grant string, tok uint64, inv, done int64, res string, add int, v ...int) Op {
	return Op{Process: p, Kind: KindWrite, Grant: grant, Token: tok, Invoke: inv, Complete: done, Result: res, Add: add, Value: v}
}

func final(tok uint64, inv int64, v ...int) Op {
	o := rd(9, "gF", tok, inv, inv+1, ResultOK, v...)
	o.Final = true
	return o
}

func TestCheckAdds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ops      []Op
		wantLost []int
		wantViol bool
	}{
		{"all present", []Op{
			wr(1, "g1", 1, 1, 2, ResultOK, 10, 10),
			wr(2, "g2", 2, 3, 4, ResultOK, 20, 10, 20),
			final(3, 5, 10, 20),
		}, nil, false},
		{"an acknowledged add is missing", []Op{
			wr(1, "g1", 1, 1, 2, ResultOK, 10, 10),
			wr(2, "g2", 2, 3, 4, ResultOK, 20, 20),
			final(3, 5, 20),
		}, []int{10}, true},
		{"unknown and stale writes may be missing", []Op{
			wr(1, "g1", 1, 1, 0, ResultInfo, 10, 10),
			wr(2, "g2", 1, 3, 4, ResultStale, 20, 20),
			final(3, 5),
		}, nil, false},
		{"no final read", []Op{wr(1, "g1", 1, 1, 2, ResultOK, 10, 10)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckAdds(tc.ops)
			if !reflect.DeepEqual(res.Lost, tc.wantLost) {
				t.Errorf("lost = %v, want %v", res.Lost, tc.wantLost)
			}
			if got := len(res.Violations) > 0; got != tc.wantViol {
				t.Errorf("violations %v, want some: %v", res.Violations, tc.wantViol)
			}
		})
	}
}

func TestCheckTokens(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ops      []Op
		logged   map[string][]uint64
		wantViol string // substring of the first violation, "" for none
	}{
		{"rising", []Op{acq(1, "g1", 5, 1, 2), acq(2, "g2", 7, 3, 4), acq(1, "g3", 9, 5, 6)}, nil, ""},
		{"concurrent grants may come in any order", []Op{acq(1, "g1", 9, 1, 5), acq(2, "g2", 7, 2, 6)}, nil, ""},
		{"the same grant seen twice is fine", []Op{acq(1, "g1", 5, 1, 2), acq(1, "g1", 5, 3, 4)}, nil, ""},
		{"duplicate token", []Op{acq(1, "g1", 5, 1, 2), acq(2, "g2", 5, 3, 4)}, nil, "granted twice"},
		{"falling token", []Op{acq(1, "g1", 7, 1, 2), acq(2, "g2", 6, 3, 4)}, nil, "must rise"},
		{"falling, far apart", []Op{acq(1, "g1", 7, 1, 2), acq(3, "g3", 8, 2, 3), acq(2, "g2", 6, 10, 11)}, nil, "must rise"},
		{"logged by the daemons", []Op{acq(1, "g1", 5, 1, 2)}, map[string][]uint64{"a": {5}, "b": {6}}, ""},
		{"not logged by any daemon", []Op{acq(1, "g1", 5, 1, 2)}, map[string][]uint64{"a": {6}}, "no daemon logged"},
		{"logged twice", nil, map[string][]uint64{"a": {6}, "b": {6}}, "logged as granted twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckTokens(tc.ops, tc.logged)
			switch {
			case tc.wantViol == "" && len(res.Violations) > 0:
				t.Errorf("got violations %v, want none", res.Violations)
			case tc.wantViol != "" && len(res.Violations) == 0:
				t.Errorf("got no violation, want one saying %q", tc.wantViol)
			case tc.wantViol != "" && !strings.Contains(res.Violations[0].Detail, tc.wantViol):
				t.Errorf("got %v, want one saying %q", res.Violations[0], tc.wantViol)
			}
		})
	}
}

func TestCheckLinearizable(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"sequential holders", []Op{
			rd(1, "g1", 1, 1, 2, ResultOK), wr(1, "g1", 1, 3, 4, ResultOK, 10, 10),
			rd(2, "g2", 2, 5, 6, ResultOK, 10), wr(2, "g2", 2, 7, 8, ResultOK, 20, 10, 20),
			final(3, 9, 10, 20),
		}, porcupine.Ok},
		{"a paused holder's write is refused", []Op{
			rd(1, "g1", 1, 1, 2, ResultOK),
			rd(2, "g2", 2, 3, 4, ResultOK),
			wr(1, "g1", 1, 5, 6, ResultStale, 10, 10),
			wr(2, "g2", 2, 7, 8, ResultOK, 20, 20),
		}, porcupine.Ok},
		{"a paused holder's write lands before the new holder reads", []Op{
			rd(1, "g1", 1, 1, 2, ResultOK),
			wr(1, "g1", 1, 5, 6, ResultOK, 10, 10),
			rd(2, "g2", 2, 7, 8, ResultOK, 10),
		}, porcupine.Ok},
		{"the write race: accepted after a higher read", []Op{ // --fence writes
			rd(1, "g1", 1, 1, 2, ResultOK),
			rd(2, "g2", 2, 3, 4, ResultOK),
			wr(1, "g1", 1, 5, 6, ResultOK, 10, 10),
			wr(2, "g2", 2, 7, 8, ResultOK, 20, 20),
		}, porcupine.Illegal},
		{"a stale write accepted after a higher write", []Op{ // --fence off
			wr(2, "g2", 2, 1, 2, ResultOK, 20, 20),
			wr(1, "g1", 1, 3, 4, ResultOK, 10, 10),
		}, porcupine.Illegal},
		{"concurrent: the lower token may go first", []Op{
			wr(2, "g2", 2, 1, 4, ResultOK, 20, 20),
			wr(1, "g1", 1, 2, 3, ResultOK, 10, 10),
			rd(3, "g3", 3, 5, 6, ResultOK, 20),
		}, porcupine.Ok},
		{"a read that misses an acknowledged write", []Op{
			wr(1, "g1", 1, 1, 2, ResultOK, 10, 10),
			rd(2, "g2", 2, 3, 4, ResultOK),
		}, porcupine.Illegal},
		{"an unknown write that took effect", []Op{
			wr(1, "g1", 1, 1, 0, ResultInfo, 10, 10),
			rd(2, "g2", 2, 3, 4, ResultOK, 10),
		}, porcupine.Ok},
		{"an unknown write that did not", []Op{
			wr(1, "g1", 1, 1, 0, ResultInfo, 10, 10),
			rd(2, "g2", 2, 3, 4, ResultOK),
			wr(2, "g2", 2, 5, 6, ResultOK, 20, 20),
		}, porcupine.Ok},
		{"an unknown read raised the max", []Op{
			rd(2, "g2", 2, 1, 0, ResultInfo),
			wr(1, "g1", 1, 3, 4, ResultStale, 10, 10),
		}, porcupine.Ok},
		{"a refusal without a higher token", []Op{
			rd(2, "g2", 2, 1, 2, ResultOK),
			wr(2, "g2", 2, 3, 4, ResultStale, 20, 20),
		}, porcupine.Illegal},
		{"one token, two grants", []Op{ // a daemon handing out a cached token
			rd(1, "g1", 5, 1, 2, ResultOK),
			rd(2, "g2", 5, 3, 4, ResultOK),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckLinearizable(tc.ops, 0)
			if res.Result != tc.want {
				t.Errorf("got %s, want %s (violations %v)", res.Result, tc.want, res.Violations)
			}
			if (tc.want == porcupine.Ok) != (len(res.Violations) == 0) {
				t.Errorf("result %s with violations %v", res.Result, res.Violations)
			}
			if tc.want == porcupine.Illegal {
				path := filepath.Join(t.TempDir(), "lin.html")
				if err := res.Visualize(path); err != nil {
					t.Fatalf("visualize: %v", err)
				}
				if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("<html")) {
					t.Errorf("visualization has no HTML: %.100s", b)
				}
			}
		})
	}
}

func TestStaleAcceptances(t *testing.T) {
	ops := []Op{
		rd(2, "g2", 2, 1, 2, ResultOK),
		wr(1, "g1", 1, 3, 4, ResultOK, 10, 10),
		wr(3, "g3", 2, 5, 6, ResultOK, 30, 30),
		wr(2, "g2", 2, 7, 8, ResultOK, 20, 20),
	}
	v := StaleAcceptances(ops)
	if len(v) != 2 || !strings.Contains(v[0].Detail, "process 1 with token 1") || !strings.Contains(v[1].Detail, "grant g3") {
		t.Errorf("got %v, want the write of process 1 and the write of grant g3", v)
	}
}

func TestRecorderAndReadHistory(t *testing.T) {
	var a, b bytes.Buffer
	ra, rb := NewRecorder(&a, 1), NewRecorder(&b, 2)
	w := ra.Invoke(Op{Kind: KindWrite, Token: 3, Invoke: 10, Add: 7, Value: []int{7}})
	g := rb.Invoke(Op{Kind: KindAcquire, Invoke: 5})
	g.Complete, g.Result, g.Token, g.Grant = 8, ResultOK, 3, "L1"
	rb.Complete(g)
	// Process 1 dies before its write completes, mid-way through a line.
	a.WriteString(`{"process":1,"id":2,"ki`)
	if err := ra.Err(); err != nil {
		t.Fatal(err)
	}
	ops, err := ReadHistory(&a, &b)
	if err != nil {
		t.Fatalf("ReadHistory: %v", err)
	}
	want := []Op{
		{Process: 2, ID: 1, Kind: KindAcquire, Invoke: 5, Complete: 8, Result: ResultOK, Token: 3, Grant: "L1"},
		{Process: 1, ID: w.ID, Kind: KindWrite, Token: 3, Invoke: 10, Result: ResultInfo, Add: 7, Value: []int{7}},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("got %+v\nwant %+v", ops, want)
	}
	if _, err := ReadHistory(strings.NewReader("{bad\n{}\n")); err == nil {
		t.Errorf("a damaged line that is not the last one: got no error")
	}
	var out bytes.Buffer
	if err := WriteHistory(&out, ops); err != nil {
		t.Fatal(err)
	}
	again, err := ReadHistory(&out)
	if err != nil || !reflect.DeepEqual(again, ops) {
		t.Errorf("round trip: got %+v, %v", again, err)
	}
}

func TestSimulateIsDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a, sa := Simulate(SimConfig{Seed: seed})
		b, sb := Simulate(SimConfig{Seed: seed})
		if !reflect.DeepEqual(a, b) || sa != sb {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}

// onKey puts ops on a key guarded by lock.
func onKey(lock, key string, ops ...Op) []Op {
	for i := range ops {
		ops[i].Lock = lock
		if ops[i].Kind == KindRead || ops[i].Kind == KindWrite {
			ops[i].Key = key
		}
	}
	return ops
}

// TestChecksPerKeyAndLock: with several locks and keys, each key is a
// register of its own and each lock a token stream of its own: a token
// below another key's is no violation, one below its own key's is.
func TestChecksPerKeyAndLock(t *testing.T) {
	ok := append(onKey("L1", "a",
		acq(1, "g1", 5, 1, 2), rd(1, "g1", 5, 3, 4, ResultOK), wr(1, "g1", 5, 5, 6, ResultOK, 10, 10), final(9, 30, 10)),
		onKey("L2", "b",
			acq(2, "g2", 3, 7, 8), rd(2, "g2", 3, 9, 10, ResultOK), wr(2, "g2", 3, 11, 12, ResultOK, 20, 20), final(9, 31, 20))...)
	ok[3].Grant, ok[7].Grant = "gFa", "gFb"
	rep := Check(ok, map[string]map[string][]uint64{"L1": {"d": {5}}, "L2": {"d": {3}}})
	if v := rep.Violations(); len(v) > 0 {
		t.Errorf("two independent keys: got %v, want no violation", v)
	}
	if rep.Adds.Acknowledged != 2 || rep.Adds.FinalSize != 2 {
		t.Errorf("adds = %+v, want 2 acknowledged, final sets of 2 elements in all", rep.Adds)
	}

	bad := append(onKey("L1", "a",
		rd(1, "g1", 5, 1, 2, ResultOK), rd(3, "g3", 7, 3, 4, ResultOK), wr(1, "g1", 5, 5, 6, ResultOK, 10, 10), final(9, 30, 10)),
		onKey("L2", "b", wr(2, "g2", 3, 11, 12, ResultOK, 20, 20))...)
	rep = Check(bad, nil)
	bc := rep.ByChecker()
	if bc["linearizable"] == 0 || !strings.Contains(rep.Linearizable.Violations[0].Detail, "key a") {
		t.Errorf("a stale write on key a: got %v, want a linearizability violation naming key a", rep.Violations())
	}
	if bc["adds"] == 0 || !strings.Contains(rep.Adds.Violations[0].Detail, "key b") {
		t.Errorf("key b has no final read: got %v, want an adds violation naming key b", rep.Adds.Violations)
	}
}

func TestLongestStall(t *testing.T) {
	ops := []Op{
		{Kind: KindRead, Result: ResultOK, Complete: 20},
		{Kind: KindRead, Result: ResultFail, Complete: 50}, // not progress
		{Kind: KindWrite, Result: ResultOK, Complete: 90},
		{Kind: KindRenew, Result: ResultOK, Complete: 95},
	}
	for _, tc := range []struct {
		name     string
		from, to int64
		want     int64
		at       int64
	}{
		{"between two completions", 0, 100, 70, 20},
		{"up to the end", 0, 200, 105, 95},
		{"from the start", -100, 100, 120, -100},
		{"nothing completes", 100, 150, 50, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, at := LongestStall(ops, tc.from, tc.to)
			if int64(got) != tc.want || at != tc.at {
				t.Errorf("got %d at %d, want %d at %d", got, at, tc.want, tc.at)
			}
		})
	}
}

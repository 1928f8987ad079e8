package chaos

import (
	"testing"
	"time"
)

// Hand-made histories for the lease kinds' checkers: each case says how
// many violations its checker must find (0 for a correct history).

func grant(p int, lock, id string, tok uint64, inv, done int64) Op {
	return Op{Process: p, Kind: KindAcquire, Lock: lock, Grant: id, Token: tok, Invoke: inv, Complete: done, Result: ResultOK}
}

func shared(op Op) Op { op.Mode = "shared"; return op }

func renewed(p int, lock, id string, inv, done int64) Op {
	return Op{Process: p, Kind: KindRenew, Lock: lock, Grant: id, Invoke: inv, Complete: done, Result: ResultOK}
}

func released(p int, lock, id, result string, inv, done int64) Op {
	return Op{Process: p, Kind: KindRelease, Lock: lock, Grant: id, Invoke: inv, Complete: done, Result: result}
}

func wantViolations(t *testing.T, name string, r KindResult, want int) {
	t.Helper()
	if (len(r.Violations) > 0) != (want > 0) || (want > 0 && len(r.Violations) < want) {
		t.Errorf("%s: got %d violations %v, want %d", name, len(r.Violations), r.Violations, want)
	}
}

func TestCheckSemaphore(t *testing.T) {
	const s = "s"
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"two at once", []Op{grant(1, s, "a", 1, 0, 10), grant(2, s, "b", 2, 0, 20), renewed(1, s, "a", 50, 51), renewed(2, s, "b", 60, 61)}, 0},
		{"three at once", []Op{grant(1, s, "a", 1, 0, 10), grant(2, s, "b", 2, 0, 20), grant(3, s, "c", 3, 0, 30),
			renewed(1, s, "a", 50, 51), renewed(2, s, "b", 60, 61), renewed(3, s, "c", 70, 71)}, 1},
		// The third holder came after the first's last sign of life: the
		// first may have ended by then.
		{"one after another", []Op{grant(1, s, "a", 1, 0, 10), renewed(1, s, "a", 25, 26), grant(2, s, "b", 2, 0, 20), grant(3, s, "c", 3, 0, 30),
			renewed(2, s, "b", 60, 61), renewed(3, s, "c", 70, 71)}, 0},
		{"never renewed holds nothing certain", []Op{grant(1, s, "a", 1, 0, 10), grant(2, s, "b", 2, 0, 20), grant(3, s, "c", 3, 0, 30)}, 0},
		{"a token twice", []Op{grant(1, s, "a", 5, 0, 10), grant(2, s, "b", 5, 20, 30)}, 1},
	} {
		wantViolations(t, tc.name, CheckSemaphore(tc.ops, 2), tc.want)
	}
}

func TestCheckShared(t *testing.T) {
	const l = "l"
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"readers together", []Op{shared(grant(1, l, "a", 1, 0, 10)), shared(grant(2, l, "b", 2, 0, 20)), renewed(1, l, "a", 50, 51), renewed(2, l, "b", 60, 61)}, 0},
		{"a writer with a reader", []Op{shared(grant(1, l, "a", 1, 0, 10)), grant(2, l, "b", 2, 0, 20), renewed(1, l, "a", 50, 51), renewed(2, l, "b", 60, 61)}, 1},
		{"a writer after the readers", []Op{shared(grant(1, l, "a", 1, 0, 10)), renewed(1, l, "a", 15, 16), grant(2, l, "b", 2, 0, 20), renewed(2, l, "b", 60, 61)}, 0},
	} {
		wantViolations(t, tc.name, CheckShared(tc.ops), tc.want)
	}
}

func TestCheckElection(t *testing.T) {
	const e = "e"
	read := func(p int, term uint64, inv, done int64) Op {
		return Op{Process: p, Kind: KindLeader, Lock: e, Token: term, Invoke: inv, Complete: done, Result: ResultOK}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"terms rise, reads follow", []Op{grant(1, e, "a", 10, 0, 5), read(3, 10, 6, 7), released(1, e, "a", ResultOK, 8, 9), grant(2, e, "b", 20, 1, 12), read(3, 20, 13, 14), read(4, 0, 15, 16)}, 0},
		{"a read goes back", []Op{grant(1, e, "a", 10, 0, 5), grant(2, e, "b", 20, 6, 12), read(3, 20, 13, 14), read(4, 10, 15, 16)}, 1},
		{"a read below an acknowledged grant", []Op{grant(1, e, "a", 10, 0, 5), grant(2, e, "b", 20, 6, 12), read(3, 10, 13, 14)}, 1},
		{"two leaders at once", []Op{grant(1, e, "a", 10, 0, 5), grant(2, e, "b", 20, 0, 6), renewed(1, e, "a", 30, 31), renewed(2, e, "b", 30, 31)}, 1},
		{"a term twice", []Op{grant(1, e, "a", 10, 0, 5), grant(2, e, "b", 10, 6, 7)}, 1},
	} {
		wantViolations(t, tc.name, CheckElection(tc.ops), tc.want)
	}
}

func TestCheckMulti(t *testing.T) {
	multi := func(p int, id string, tok uint64, names, held []string, result string, inv, done int64) Op {
		return Op{Process: p, Kind: KindMulti, Grant: id, Token: tok, Names: names, Held: held, Result: result, Invoke: inv, Complete: done}
	}
	ab, bc := []string{"a", "b"}, []string{"b", "c"}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"all or nothing", []Op{multi(1, "x", 1, ab, ab, ResultOK, 0, 5), renewed(1, "", "x", 10, 11), multi(2, "y", 0, bc, nil, ResultFail, 0, 12),
			multi(2, "z", 2, bc, bc, ResultOK, 13, 20), renewed(2, "", "z", 30, 31)}, 0},
		{"a strict subset", []Op{multi(1, "x", 0, ab, []string{"a"}, ResultFail, 0, 5)}, 1},
		{"a lock held twice", []Op{multi(1, "x", 1, ab, ab, ResultOK, 0, 5), renewed(1, "", "x", 30, 31), multi(2, "y", 2, bc, bc, ResultOK, 0, 6), renewed(2, "", "y", 30, 31)}, 1},
		{"a multi-lock and a lock", []Op{multi(1, "x", 1, ab, ab, ResultOK, 0, 5), renewed(1, "", "x", 30, 31), grant(2, "a", "y", 2, 0, 6), renewed(2, "a", "y", 30, 31)}, 1},
		{"never answered", []Op{{Process: 1, Kind: KindMulti, Names: ab, Invoke: 1, Result: ResultInfo}}, 1},
	} {
		wantViolations(t, tc.name, CheckMulti(tc.ops), tc.want)
	}
}

func TestCheckLockDelay(t *testing.T) {
	const l, d = "l", 100 * time.Nanosecond
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"released: at once", []Op{grant(1, l, "a", 1, 0, 5), renewed(1, l, "a", 10, 11), released(1, l, "a", ResultOK, 12, 13), grant(2, l, "b", 2, 6, 14)}, 0},
		{"lost: after the delay", []Op{grant(1, l, "a", 1, 0, 5), renewed(1, l, "a", 10, 11), grant(2, l, "b", 2, 6, 120)}, 0},
		{"lost: within the delay", []Op{grant(1, l, "a", 1, 0, 5), renewed(1, l, "a", 10, 11), grant(2, l, "b", 2, 6, 60)}, 1},
		{"release refused: unclean", []Op{grant(1, l, "a", 1, 0, 5), renewed(1, l, "a", 10, 11), released(1, l, "a", ResultFail, 80, 81), grant(2, l, "b", 2, 6, 60)}, 1},
		{"release unknown: not judged", []Op{grant(1, l, "a", 1, 0, 5), released(1, l, "a", ResultInfo, 8, 9), grant(2, l, "b", 2, 6, 10)}, 0},
	} {
		wantViolations(t, tc.name, CheckLockDelay(tc.ops, d), tc.want)
	}
}

func TestCheckBreaks(t *testing.T) {
	const l = "l"
	brk := func(tok uint64, inv, done int64) Op {
		return Op{Process: 9, Kind: KindBreak, Lock: l, Token: tok, Invoke: inv, Complete: done, Result: ResultOK}
	}
	logged := []AuditBreak{{l, 1}}
	for _, tc := range []struct {
		name  string
		ops   []Op
		audit []AuditBreak
		want  int
	}{
		{"logged, renewal refused, next higher", []Op{grant(1, l, "a", 1, 0, 5), brk(1, 10, 11),
			{Process: 1, Kind: KindRenew, Lock: l, Grant: "a", Invoke: 12, Complete: 13, Result: ResultFail}, grant(2, l, "b", 2, 12, 20)}, logged, 0},
		{"no audit line", []Op{grant(1, l, "a", 1, 0, 5), brk(1, 10, 11)}, nil, 1},
		{"renewed after the break", []Op{grant(1, l, "a", 1, 0, 5), brk(1, 10, 11), renewed(1, l, "a", 12, 13)}, logged, 1},
	} {
		wantViolations(t, tc.name, CheckBreaks(tc.ops, tc.audit), tc.want)
	}
}

func TestCheckValidity(t *testing.T) {
	const l = "l"
	check := func(p int, tok uint64, valid bool, inv, done int64) Op {
		return Op{Process: p, Kind: KindCheck, Lock: l, Token: tok, Valid: valid, Invoke: inv, Complete: done, Result: ResultOK}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"valid while held, then not", []Op{grant(1, l, "a", 1, 0, 5), check(3, 1, true, 6, 7), check(3, 1, false, 8, 9), grant(2, l, "b", 2, 1, 10), check(3, 2, true, 11, 12), check(4, 1, false, 13, 14)}, 0},
		// A release answered ok leaves the contender to the janitor when
		// ZooKeeper is away: still valid until it is deleted.
		{"valid after its release", []Op{grant(1, l, "a", 1, 0, 5), released(1, l, "a", ResultOK, 6, 7), check(3, 1, true, 8, 9), check(3, 1, false, 10, 11)}, 0},
		{"concurrent with the next grant", []Op{grant(1, l, "a", 1, 0, 5), grant(2, l, "b", 2, 1, 10), check(3, 1, true, 6, 12)}, 0},
		{"valid after a later grant", []Op{grant(1, l, "a", 1, 0, 5), grant(2, l, "b", 2, 1, 10), check(3, 1, true, 11, 12)}, 1},
		{"valid again after not valid", []Op{grant(1, l, "a", 1, 0, 5), check(3, 1, false, 6, 7), check(4, 1, true, 8, 9)}, 1},
		{"valid before its grant", []Op{check(3, 1, true, 0, 1), grant(1, l, "a", 1, 2, 5)}, 1},
	} {
		r, _ := CheckValidity(tc.ops, 10*time.Second)
		wantViolations(t, tc.name, r, tc.want)
	}
}

func TestCheckHeldPastEnd(t *testing.T) {
	const l = "l"
	ends := []LoggedEnd{{Lock: l, Token: 1, At: 20}, {Lock: l, Token: 1, At: 40}, {Lock: "other", Token: 2, At: 5}}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"renewed before the end", []Op{grant(1, l, "a", 1, 0, 5), renewed(1, l, "a", 10, 11)}, 0},
		{"refused after the end", []Op{grant(1, l, "a", 1, 0, 5), {Process: 1, Kind: KindRenew, Lock: l, Token: 1, Grant: "a", Invoke: 30, Complete: 31, Result: ResultFail}}, 0},
		{"renewed after the end", []Op{grant(1, l, "a", 1, 0, 5), {Process: 1, Kind: KindRenew, Lock: l, Token: 1, Grant: "a", Invoke: 30, Complete: 31, Result: ResultOK}}, 1},
		{"another lock's end", []Op{grant(2, l, "b", 2, 0, 5), {Process: 2, Kind: KindRenew, Lock: l, Token: 2, Grant: "b", Invoke: 30, Complete: 31, Result: ResultOK}}, 0},
	} {
		wantViolations(t, tc.name, CheckHeldPastEnd(tc.ops, ends), tc.want)
	}
}

func TestTally(t *testing.T) {
	ops := []Op{
		{Kind: KindAcquire, Result: ResultOK},
		{Kind: KindAcquire, Result: ResultFail, Err: "503: not ready"},
		{Kind: KindAcquire, Result: ResultFail, Err: "503: not ready"},
		{Kind: KindRenew, Result: ResultFail, Err: "409: lost"},
		{Kind: KindRelease},
	}
	got := tally(ops)
	want := "acquire fail 2, acquire ok 1, release pending 1, renew fail 1; commonest error (2): 503: not ready"
	if got != want {
		t.Errorf("tally = %q, want %q", got, want)
	}
}

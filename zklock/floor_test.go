package zklock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A root made with a floor records it next to its mode, and every token
// of it, issued or read, is floor + zxid (or floor + version): the grant,
// Holder, Queue and Observe agree, for locks, readers, semaphores and
// elections.
func TestTokenFloorShiftsEveryToken(t *testing.T) {
	c := shared.Get(t)
	const floor = 1 << 40
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			root := fmt.Sprintf("/floors/shift-%s-%d", mode, time.Now().UnixNano())
			s := dial(t, c.Servers(), Options{TokenFloor: floor})
			ctx := ctxT(t, 20*time.Second)
			m := mutex(t, s, "job", WithRoot(root), WithTokenMode(mode))
			g, err := m.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data, _, err := s.conn.Get(root)
			if want := fmt.Sprintf("seqd-token-mode=%s floor=%d", mode, uint64(floor)); err != nil || string(data) != want {
				t.Fatalf("root data %q, %v; want %q", data, err, want)
			}
			_, st, err := s.conn.Get(g.Path)
			if err != nil {
				t.Fatal(err)
			}
			want := floor + uint64(st.Czxid)
			if mode == TokenVersion {
				want = floor + 1
			}
			if g.Token != want {
				t.Fatalf("token %d, want floor + %s = %d", g.Token, mode, want)
			}
			// Another session, which never claimed the root, reads the same.
			r := mutex(t, dial(t, c.Servers(), Options{}), "job", WithRoot(root), WithTokenMode(mode))
			if h, err := r.Holder(ctx); err != nil || !h.Held || h.Token != g.Token {
				t.Errorf("Holder on another session: %+v, %v; want token %d", h, err, g.Token)
			}
			if q, err := r.Queue(ctx); err != nil || q.Holding != 1 || q.Nodes[0].Token != g.Token {
				t.Errorf("Queue on another session: %+v, %v; want the holder with token %d", q, err, g.Token)
			}
			if h := <-r.Observe(ctx); !h.Held || h.Token != g.Token {
				t.Errorf("Observe on another session: %+v; want token %d", h, g.Token)
			}
			if err := g.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// A raise reaches a new session's grants, and a reading
			// session told to forget the mark.
			if _, err := s.RaiseTokenFloor(ctx, root, mode, 2*floor); err != nil {
				t.Fatal(err)
			}
			g2, err := mutex(t, dial(t, c.Servers(), Options{}), "job", WithRoot(root), WithTokenMode(mode)).Acquire(ctx)
			if err != nil || g2.Token <= 2*floor {
				t.Fatalf("grant after raising the floor to %d: %v, %v", uint64(2*floor), g2, err)
			}
			if h, err := r.Holder(ctx); err != nil || h.Token == g2.Token {
				t.Fatalf("the reading session read %+v, %v before it forgot the mark; want the old floor", h, err)
			}
			r.s.ForgetTokenMark(root)
			deadline := time.Now().Add(5 * time.Second)
			for {
				h, err := r.Holder(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if h.Token == g2.Token {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the reading session reads token %d after the raise, want %d", h.Token, g2.Token)
				}
				time.Sleep(5 * time.Millisecond)
			}
			g2.Release(ctx)
			el, err := NewElection(s, "lead", WithRoot(root+"-elections"), WithTokenMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			l, err := el.Campaign(ctx, []byte("me"))
			if err != nil {
				t.Fatal(err)
			}
			if l.Term <= floor {
				t.Errorf("term %d, want above the floor %d", l.Term, uint64(floor))
			}
			if got, err := el.Leader(ctx); err != nil || got.Term != l.Term {
				t.Errorf("Leader: %+v, %v; want term %d", got, err, l.Term)
			}
			l.Release(ctx)
			if mode != TokenZxid {
				return
			}
			rl, err := NewReadLock(s, "job", WithRoot(root))
			if err != nil {
				t.Fatal(err)
			}
			rg, err := rl.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if held, err := rl.HoldsToken(ctx, rg.Token); err != nil || !held || rg.Token <= g.Token {
				t.Errorf("reader token %d (holds %v, %v), want above the writer's %d", rg.Token, held, err, g.Token)
			}
			rg.Release(ctx)
			sem, err := NewSemaphore(s, "pool", 2, WithRoot(root+"-semaphores"))
			if err != nil {
				t.Fatal(err)
			}
			sg, err := sem.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if held, err := sem.HoldsToken(ctx, sg.Token); err != nil || !held || sg.Token <= floor {
				t.Errorf("semaphore token %d (holds %v, %v), want above the floor", sg.Token, held, err)
			}
			if q, err := sem.Queue(ctx); err != nil || q.Holding != 1 || q.Nodes[0].Token != sg.Token {
				t.Errorf("semaphore Queue: %+v, %v; want the holder with token %d", q, err, sg.Token)
			}
			sg.Release(ctx)
		})
	}
}

// A session whose Floors recorded tokens on a root refuses to grant there
// while the root's tokens would fall below them: a root with no mark (an
// empty ZooKeeper), and a marked root whose history is behind what was
// recorded (a restored one), until the floor is raised to the highest
// recorded. Two processes with different records grant only once the
// floor is above both. The control: a session without Floors grants on
// the same root with tokens below those recorded.
func TestTokenFloorRefusesUntilRaised(t *testing.T) {
	c := shared.Get(t)
	ctx := ctxT(t, 30*time.Second)
	for _, mode := range []TokenMode{TokenZxid, TokenVersion} {
		t.Run(mode.String(), func(t *testing.T) {
			root := fmt.Sprintf("/floors/refuse-%s-%d", mode, time.Now().UnixNano())
			// What two daemons issued in a history that ZooKeeper no longer
			// has: zxids and tokens beyond the ensemble's.
			const lowA, highB = 1 << 41, 1 << 42
			a, b := NewFloors(), NewFloors()
			a.Record(root, Issued{Token: lowA, Zxid: 1 << 40})
			b.Record(root, Issued{Token: highB, Zxid: 1 << 40})
			sa := dial(t, c.Servers(), Options{Floors: a})
			sb := dial(t, c.Servers(), Options{Floors: b})

			// No mark: refused, and the root stays unmarked.
			_, err := mutex(t, sa, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx)
			var fe *FloorError
			if !errors.Is(err, ErrBelowFloor) || !errors.As(err, &fe) || !fe.Unmarked || fe.Issued.Token != lowA {
				t.Fatalf("grant on an unmarked root after tokens up to %d: %v; want an unmarked FloorError", lowA, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(lowA)) {
				t.Errorf("%q does not name the floor to raise to", err)
			}
			if ok, _, _ := sa.conn.Exists(root); ok {
				t.Errorf("a refused root was created")
			}

			// The control: no Floors, no refusal, and tokens below those issued.
			ctl := dial(t, c.Servers(), Options{})
			g, err := mutex(t, ctl, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx)
			if err != nil {
				t.Fatalf("control without floors: %v", err)
			}
			if g.Token >= lowA {
				t.Fatalf("control token %d, want below the %d issued before: the test shows nothing", g.Token, lowA)
			}
			g.Release(ctx)

			// Marked now, at floor 0: the history is behind both records.
			for name, s := range map[string]*Session{"a": sa, "b": sb} {
				_, err := mutex(t, s, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx)
				if !errors.As(err, &fe) || fe.Unmarked {
					t.Fatalf("%s: grant on a root behind its record: %v; want a FloorError", name, err)
				}
			}
			// Raised to a's highest: a grants above it, b still refuses.
			if _, err := ctl.RaiseTokenFloor(ctx, root, mode, lowA); err != nil {
				t.Fatal(err)
			}
			waitFloor(t, sa, root, lowA)
			ga, err := mutex(t, sa, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx)
			if err != nil || ga.Token <= lowA {
				t.Fatalf("a after the floor was raised to %d: %v, %v; want a token above it", lowA, ga, err)
			}
			ga.Release(ctx)
			if _, err := mutex(t, sb, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx); !errors.Is(err, ErrBelowFloor) {
				t.Fatalf("b with tokens up to %d on a floor of %d: %v; want refused", highB, lowA, err)
			}
			// Raised to the highest of both: both grant.
			if _, err := ctl.RaiseTokenFloor(ctx, root, mode, highB); err != nil {
				t.Fatal(err)
			}
			// b, refused, reads the floor again at its next grant; a, which
			// granted under the lower floor, keeps it until it dials again
			// (as a daemon restarted after the raise).
			sa = dial(t, c.Servers(), Options{Floors: a})
			for name, s := range map[string]*Session{"a": sa, "b": sb} {
				waitFloor(t, s, root, highB)
				g, err := mutex(t, s, "job", WithRoot(root), WithTokenMode(mode)).TryAcquire(ctx)
				if err != nil || g.Token <= highB {
					t.Fatalf("%s after the floor was raised to %d: %v, %v; want a token above it", name, highB, g, err)
				}
				g.Release(ctx)
			}
			// Never lowered.
			if _, err := ctl.RaiseTokenFloor(ctx, root, mode, lowA); !errors.Is(err, ErrFloorLowered) {
				t.Fatalf("lowering the floor: %v, want ErrFloorLowered", err)
			}
			if _, floor, _, err := ctl.TokenFloor(ctx, root); err != nil || floor != highB {
				t.Fatalf("floor after a refused lowering: %d, %v; want %d", floor, err, uint64(highB))
			}
		})
	}
}

// waitFloor checks that s has no copy of root's mark below floor: it reads
// the mark again at its next grant.
func waitFloor(t *testing.T, s *Session, root string, floor uint64) {
	t.Helper()
	if k, ok := s.modes.get(root); ok && k.floor < floor {
		t.Fatalf("session still uses floor %d of %s, want it to see %d", k.floor, root, floor)
	}
}

// A fresh root takes the session's TokenFloor; one of at least the
// highest token recorded lets a session with records mark an empty root.
func TestTokenFloorMarksFreshRoot(t *testing.T) {
	c := shared.Get(t)
	ctx := ctxT(t, 20*time.Second)
	root := fmt.Sprintf("/floors/fresh-%d", time.Now().UnixNano())
	f := NewFloors()
	f.Record(root, Issued{Token: 5000, Zxid: 1 << 40})
	if _, err := mutex(t, dial(t, c.Servers(), Options{Floors: f, TokenFloor: 4999}), "job", WithRoot(root)).TryAcquire(ctx); !errors.Is(err, ErrBelowFloor) {
		t.Fatalf("a fresh floor below the record: %v, want ErrBelowFloor", err)
	}
	g, err := mutex(t, dial(t, c.Servers(), Options{Floors: f, TokenFloor: 5000}), "job", WithRoot(root)).TryAcquire(ctx)
	if err != nil || g.Token <= 5000 {
		t.Fatalf("a fresh floor at the record: %v, %v; want a token above 5000", g, err)
	}
	if got := f.Issued(root); got.Token != g.Token {
		t.Errorf("recorded %+v, want token %d", got, g.Token)
	}
	g.Release(ctx)
	if _, err := dial(t, c.Servers(), Options{}).RaiseTokenFloor(ctx, "/floors/too-high", TokenZxid, MaxTokenFloor+1); err == nil {
		t.Error("a floor above MaxTokenFloor was accepted")
	}
}

// The floor file holds every token recorded once Record returns, and a
// reopened file reads them back; concurrent Records share writes.
func TestFloorFileDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floors.json")
	f, err := OpenFloors(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.Record("/r", Issued{Token: uint64(i), Zxid: uint64(100 + i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	g, err := OpenFloors(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Issued("/r"); got != (Issued{Token: 50, Zxid: 150}) {
		t.Fatalf("reopened record %+v, want token 50, zxid 150", got)
	}
	f.Record("/r", Issued{Token: 7, Zxid: 7})
	if got := f.Issued("/r"); got.Token != 50 {
		t.Fatalf("a lower record lowered it: %+v", got)
	}
	if err := os.WriteFile(path, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFloors(path); err == nil {
		t.Fatal("a file that is no floor file was read")
	}
}

// The root mark's parser: what it accepts is a mode and a floor that write
// back to the same data (the old form when the floor is 0), and it refuses
// floors above MaxTokenFloor and anything that is not a mark.
func FuzzParseMark(f *testing.F) {
	for _, seed := range []string{
		"seqd-token-mode=zxid", "seqd-token-mode=version", "seqd-token-mode=zxid floor=1099511627776",
		"seqd-token-mode=version floor=0", "seqd-token-mode=zxid floor=-1", "seqd-token-mode=zxid floor=4611686018427387905",
		"seqd-token-mode=", "seqd-token-mode=zxid floor=", "other", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, _, ok := parseMark(data)
		if !ok {
			return
		}
		if k.floor > MaxTokenFloor {
			t.Fatalf("%q: floor %d above MaxTokenFloor accepted", data, k.floor)
		}
		again, _, ok := parseMark(k.bytes())
		if !ok || again != k {
			t.Fatalf("%q parses as %+v, which writes %q, which parses as %+v, %v", data, k, k.bytes(), again, ok)
		}
	})
}

func TestParseMark(t *testing.T) {
	for _, tc := range []struct {
		data string
		want rootMark
		ok   bool
	}{
		{"seqd-token-mode=zxid", rootMark{TokenZxid, 0}, true},
		{"seqd-token-mode=version floor=7", rootMark{TokenVersion, 7}, true},
		{"seqd-token-mode=zxid floor=4611686018427387904", rootMark{TokenZxid, MaxTokenFloor}, true},
		{"seqd-token-mode=zxid floor=4611686018427387905", rootMark{}, false},
		{"seqd-token-mode=zxid floor=x", rootMark{}, false},
		{"seqd-token-mode=zxid floor=", rootMark{}, false},
		{"seqd-token-mode=", rootMark{}, false},
		{"something else", rootMark{}, false},
	} {
		got, _, ok := parseMark([]byte(tc.data))
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseMark(%q) = %+v, %v; want %+v, %v", tc.data, got, ok, tc.want, tc.ok)
		}
	}
}

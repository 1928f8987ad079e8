package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kjLog writes ten acknowledged batches, one put each, alternating keys k
// and j: k with tokens 10, 20 … 50 and values k-v10 …, j with 11, 21 … 51.
// prefix marks the values of one store apart from another's.
func kjLog(t *testing.T, dir, prefix string) {
	t.Helper()
	s := mustOpen(t, Options{Dir: dir})
	for i := 1; i <= 5; i++ {
		mustPut(t, s, "k", fmt.Sprintf("%sk-v%d", prefix, 10*i), uint64(10*i))
		mustPut(t, s, "j", fmt.Sprintf("%sj-v%d", prefix, 10*i+1), uint64(10*i+1))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLog(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeLog(t *testing.T, dir string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, logName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rebuild joins the head and the given batches of data, in order.
func rebuild(data, head []byte, bs []span, order ...int) []byte {
	out := bytes.Clone(head)
	for _, i := range order {
		out = append(out, data[bs[i].off:bs[i].off+bs[i].n]...)
	}
	return out
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// wantRefused opens dir and wants a refusal that says why in a sentence,
// with the log left as it was.
func wantRefused(t *testing.T, dir string, words ...string) error {
	t.Helper()
	before := readLogOrNil(dir)
	s, err := Open(Options{Dir: dir})
	if err == nil {
		e, _ := s.Get("k", 0)
		s.Close()
		t.Fatalf("Open accepted the log: k = %q (token %d, max %d); want a refusal", e.Value, e.Token, e.Max)
	}
	msg := err.Error()
	t.Logf("refused: %s", msg)
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
	if !bytes.Equal(readLogOrNil(dir), before) {
		t.Error("a refused Open changed the log")
	}
	return err
}

func readLogOrNil(dir string) []byte {
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	return b
}

// TestLogRefusesRemovedDuplicatedForeignBatches: every batch of the log is
// well formed, but one was removed from the middle, one written before
// appears again, two trade places, a batch of another store is spliced in,
// or the whole log is another store's. Each is refused with a sentence; with
// Repair the store starts, no key's max is lower than it was, and an
// acknowledged value is not rolled back by a replayed old batch. The
// control: the log as written opens with every value.
func TestLogRefusesRemovedDuplicatedForeignBatches(t *testing.T) {
	other := t.TempDir()
	kjLog(t, other, "other-")
	foreign := readLog(t, other)
	_, foreignBatches := batchesOf(foreign)

	for _, tc := range []struct {
		name   string
		mangle func(data, head []byte, bs []span) []byte
		words  []string
		// after Repair: k's value (the batch of k=50 may be gone)
		kValues []string
	}{
		{"k=50 removed from the middle", func(d, h []byte, bs []span) []byte {
			return rebuild(d, h, bs, slices.Delete(upTo(10), 8, 9)...)
		}, []string{"missing"}, []string{"k-v40", "k-v50"}},
		{"first batch removed", func(d, h []byte, bs []span) []byte {
			return rebuild(d, h, bs, upTo(10)[1:]...)
		}, []string{"missing"}, []string{"k-v50"}},
		{"k=20 appended again", func(d, h []byte, bs []span) []byte {
			return rebuild(d, h, bs, append(upTo(10), 2)...)
		}, []string{"again"}, []string{"k-v50"}},
		{"a batch written twice in place", func(d, h []byte, bs []span) []byte {
			return rebuild(d, h, bs, 0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9)
		}, []string{"again"}, []string{"k-v50"}},
		{"k=50 and j=41 swapped", func(d, h []byte, bs []span) []byte {
			return rebuild(d, h, bs, 0, 1, 2, 3, 4, 5, 6, 8, 7, 9)
		}, []string{"order"}, []string{"k-v50"}},
		{"another store's batch spliced in", func(d, h []byte, bs []span) []byte {
			out := rebuild(d, h, bs, upTo(6)...)
			fb := foreignBatches[6]
			out = append(out, foreign[fb.off:fb.off+fb.n]...)
			return append(out, rebuild(d, nil, bs, 7, 8, 9)...)
		}, []string{"another"}, []string{"k-v50"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kjLog(t, dir, "")
			data := readLog(t, dir)
			head, bs := batchesOf(data)
			if len(bs) != 10 {
				t.Fatalf("the log has %d batches, want 10", len(bs))
			}
			writeLog(t, dir, tc.mangle(data, head, bs))
			err := wantRefused(t, dir, tc.words...)
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Errorf("refusal %v is not a *CorruptionError", err)
			}

			s := mustOpen(t, Options{Dir: dir, Repair: true})
			if m := s.Max("k"); m < 50 {
				t.Errorf("after repair max(k) = %d, lowered from 50", m)
			}
			if m := s.Max("j"); m < 51 {
				t.Errorf("after repair max(j) = %d, lowered from 51", m)
			}
			if err := s.Put("k", []byte("late"), 45); err == nil {
				t.Error("after repair a write to k with token 45 was admitted below the max of 50")
			}
			if e, err := s.Get("k", 0); err != nil || !slices.Contains(tc.kValues, string(e.Value)) {
				t.Errorf("after repair k = %q (%v), want one of %q", e.Value, err, tc.kValues)
			}
		})
	}

	t.Run("another store's log", func(t *testing.T) {
		dir := t.TempDir()
		kjLog(t, dir, "")
		writeLog(t, dir, foreign)
		wantRefused(t, dir, "another store")
	})

	t.Run("control: the log as written", func(t *testing.T) {
		dir := t.TempDir()
		kjLog(t, dir, "")
		s := mustOpen(t, Options{Dir: dir})
		wantValue(t, s, "k", "k-v50", 50)
		wantValue(t, s, "j", "j-v51", 51)
	})
}

// TestLogRefusesTruncatedTail: the log is cut at a batch boundary (the last
// batch, or everything after the sixth), inside its last acknowledged
// batch, or is gone altogether; the store had recorded that it wrote more,
// and refuses. With Repair it starts without lowering a max. The control:
// the same log with an unacknowledged torn batch at its end opens, the torn
// batch dropped.
func TestLogRefusesTruncatedTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(data []byte, bs []span) []byte // nil: the log is removed
	}{
		{"last batch cut at its start", func(d []byte, bs []span) []byte { return d[:bs[9].off] }},
		{"cut after six batches", func(d []byte, bs []span) []byte { return d[:bs[6].off] }},
		{"cut inside the last batch", func(d []byte, bs []span) []byte { return d[:bs[9].off+bs[9].n-5] }},
		{"log removed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kjLog(t, dir, "")
			data := readLog(t, dir)
			_, bs := batchesOf(data)
			if tc.cut == nil {
				os.Remove(filepath.Join(dir, logName))
			} else {
				writeLog(t, dir, tc.cut(data, bs))
			}
			wantRefused(t, dir, "missing")

			s := mustOpen(t, Options{Dir: dir, Repair: true})
			if m := s.Max("k"); m < 50 {
				t.Errorf("after repair max(k) = %d, lowered from 50", m)
			}
			if err := s.Put("k", []byte("late"), 45); err == nil {
				t.Error("after repair a write to k with token 45 was admitted below the max of 50")
			}
		})
	}

	t.Run("control: an unacknowledged torn batch", func(t *testing.T) {
		dir := t.TempDir()
		kjLog(t, dir, "")
		data := readLog(t, dir)
		torn := appendRecord(bytes.Clone(data), &record{kind: kindPut, key: "k", value: []byte("never acked"), token: 60, max: 60})
		writeLog(t, dir, torn[:len(torn)-3])
		s := mustOpen(t, Options{Dir: dir})
		wantValue(t, s, "k", "k-v50", 50)
		if m := s.Max("k"); m != 50 {
			t.Errorf("max(k) = %d after dropping the torn batch, want 50", m)
		}
	})
}

// TestCompactedLogRefusesCutSnapshot: a compacted log starts with the whole
// state in one batch. Cut inside that batch, it is refused even when the
// store's record of what it wrote is older than the compaction (as after a
// power loss that kept the log's fsyncs but not the record's).
func TestCompactedLogRefusesCutSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, CompactBytes: 2048})
	mustPut(t, s, "k", "first", 1)
	old, _ := os.ReadFile(filepath.Join(dir, metaName))
	for i := 2; i <= 60; i++ {
		mustPut(t, s, fmt.Sprintf("key%d", i%7), strings.Repeat("x", 40), uint64(i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if old != nil {
		if err := os.WriteFile(filepath.Join(dir, metaName), old, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data := readLog(t, dir)
	head, bs := batchesOf(data)
	snapshot := len(head) // the header and the snapshot batch
	if snapshot == 0 && len(bs) > 0 {
		snapshot = bs[0].n // a first-format log has no header
	}
	if snapshot < 200 {
		t.Fatalf("no compacted snapshot at the start of the log (%d bytes)", snapshot)
	}
	writeLog(t, dir, data[:snapshot/2])
	wantRefused(t, dir, "snapshot")
}

// firstFormatLog encodes batches as a log of the first format: no header,
// each batch ended by a commit record naming the offset it starts at.
func firstFormatLog(batches ...[]record) []byte {
	var b []byte
	for _, batch := range batches {
		start := len(b)
		for i := range batch {
			b = appendRecord(b, &batch[i])
		}
		b = appendCommit(b, int64(start))
	}
	return b
}

// TestFirstFormatLogIsRewritten: a log written before batches had numbers
// (no header, no store.meta) opens with every value and max, and is
// rewritten in the current format at once, with a store.meta, so that the
// checks above hold from then on. A first-format log with a batch removed
// is refused (its commit records name their offsets), and so is one put in
// place of a current-format log.
func TestFirstFormatLogIsRewritten(t *testing.T) {
	old := firstFormatLog(
		[]record{{kind: kindPut, key: "a", value: []byte("a1"), token: 5, max: 5}},
		[]record{{kind: kindPut, key: "b", value: []byte("b1"), token: 6, max: 6}, {kind: kindFence, key: "c", max: 9}},
		[]record{{kind: kindDelete, key: "b", max: 7}, {kind: kindPut, key: "a", value: []byte("a2"), token: 8, max: 8}},
	)
	dir := t.TempDir()
	writeLog(t, dir, old)
	s := mustOpen(t, Options{Dir: dir})
	check := func(s *Store) {
		t.Helper()
		wantValue(t, s, "a", "a2", 8)
		if _, err := s.Get("b", 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(b) = %v, want ErrNotFound", err)
		}
		for k, want := range map[string]uint64{"a": 8, "b": 7, "c": 9} {
			if got := s.Max(k); got != want {
				t.Errorf("Max(%s) = %d, want %d", k, got, want)
			}
		}
	}
	check(s)
	if sc := scanLog(readLog(t, dir)); len(sc.recs) == 0 || sc.recs[0].r.kind != kindHeader {
		t.Fatal("the log was not rewritten in the current format")
	}
	if _, err := os.Stat(filepath.Join(dir, metaName)); err != nil {
		t.Fatalf("no %s after the rewrite: %v", metaName, err)
	}
	mustPut(t, s, "d", "d1", 10)
	s.Close()
	s = mustOpen(t, Options{Dir: dir})
	check(s)
	wantValue(t, s, "d", "d1", 10)
	s.Close()

	// A batch of the old log removed: the next commit names an offset
	// the batch no longer starts at.
	head, bs := batchesOf(old)
	dir = t.TempDir()
	writeLog(t, dir, rebuild(old, head, bs, 0, 2))
	wantRefused(t, dir, "removed")

	// An old-format log where the store had written the current one.
	dir = t.TempDir()
	kjLog(t, dir, "")
	writeLog(t, dir, old)
	wantRefused(t, dir, "older copy")
}

// TestLogRefusesWithoutStoreMeta: without store.meta, or with both of its
// slots unreadable, nothing above can be checked; the store refuses, and
// Repair adopts the log (its identity, its values and maxes) and writes a
// new store.meta, setting a damaged one aside.
func TestLogRefusesWithoutStoreMeta(t *testing.T) {
	for _, tc := range []struct {
		name string
		harm func(path string)
	}{
		{"missing", func(p string) { os.Remove(p) }},
		{"unreadable", func(p string) { os.WriteFile(p, bytes.Repeat([]byte{0xa5}, metaSize), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kjLog(t, dir, "")
			meta := filepath.Join(dir, metaName)
			tc.harm(meta)
			err := wantRefused(t, dir, metaName)
			var me *MetaError
			if !errors.As(err, &me) {
				t.Errorf("refusal %v is not a *MetaError", err)
			}
			s := mustOpen(t, Options{Dir: dir, Repair: true})
			wantValue(t, s, "k", "k-v50", 50)
			wantValue(t, s, "j", "j-v51", 51)
			s.Close()
			if _, err := readMeta(osFS{}, dir); err != nil {
				t.Errorf("after repair %s = %v", metaName, err)
			}
			side, _ := filepath.Glob(meta + ".damaged-*")
			if want := map[string]int{"missing": 0, "unreadable": 1}[tc.name]; len(side) != want {
				t.Errorf("%d damaged %s set aside, want %d", len(side), metaName, want)
			}
			mustOpen(t, Options{Dir: dir})
		})
	}
}

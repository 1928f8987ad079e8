package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// baseLog is a log of n acknowledged puts, each its own batch, of distinct
// keys k000… with tokens 1…n, and where each one's record lies.
type baseLog struct {
	data []byte
	puts []scanned // in order: puts[i] is key k%03d with token i+1
	ends []int     // ends[i]: the offset just past puts[i]'s seal
	// meta is store.meta as the store left it; metaLagging as it was
	// before the last put, as a crash while that put's batch was being
	// written leaves it.
	meta, metaLagging []byte
}

var (
	baseOnce sync.Once
	base     baseLog
	baseErr  error
)

const basePuts = 40

func putKey(i int) string { return fmt.Sprintf("k%03d", i) }

func loadBase(t testing.TB) baseLog {
	t.Helper()
	baseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seqd-store-base")
		if err != nil {
			baseErr = err
			return
		}
		defer os.RemoveAll(dir)
		s, err := Open(Options{Dir: dir})
		if err != nil {
			baseErr = err
			return
		}
		for i := range basePuts {
			if i == basePuts-1 {
				base.metaLagging, _ = os.ReadFile(filepath.Join(dir, metaName))
			}
			if err := s.Put(putKey(i), []byte(fmt.Sprintf("value-%d", i)), uint64(i+1)); err != nil {
				baseErr = err
				return
			}
		}
		if err := s.Close(); err != nil {
			baseErr = err
			return
		}
		base.meta, _ = os.ReadFile(filepath.Join(dir, metaName))
		base.data, baseErr = os.ReadFile(filepath.Join(dir, logName))
		_, bs := batchesOf(base.data)
		for _, b := range bs {
			base.ends = append(base.ends, b.off+b.n)
		}
		for _, r := range scanLog(base.data).recs {
			if r.r.kind == kindPut {
				base.puts = append(base.puts, r)
			}
		}
	})
	if baseErr != nil {
		t.Fatal(baseErr)
	}
	if len(base.puts) != basePuts || len(base.ends) != basePuts {
		t.Fatalf("base log has %d puts and %d batches, want %d of each", len(base.puts), len(base.ends), basePuts)
	}
	return base
}

// openDamaged writes data as the log of a new directory, with meta as its
// store.meta, and opens it.
func openDamaged(t *testing.T, data, meta []byte, repair bool) (*Store, string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, logName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaName), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: dir, Repair: repair})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, dir, err
}

// TestCorruptionMidLogIsRefused flips one bit 30% into a log of acknowledged
// writes: the store refuses to start and leaves the file as it was. The
// same damage in the last batch is refused too, since store.meta records
// that the batch was written; with store.meta as a crash during that
// batch's write leaves it, the damage is a torn write and is cut (the
// control: the check tells the two apart rather than refusing everything).
func TestCorruptionMidLogIsRefused(t *testing.T) {
	b := loadBase(t)
	data := bytes.Clone(b.data)
	at := len(data) * 3 / 10
	data[at] ^= 0x10

	_, dir, err := openDamaged(t, data, b.meta, false)
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("Open of a log damaged mid-way = %v, want a *CorruptionError", err)
	}
	if ce.Offset > int64(at) || ce.ValidAfter < basePuts/2 {
		t.Errorf("got %+v, want the damage at or before byte %d and most records after it", ce, at)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, logName)); !bytes.Equal(got, data) {
		t.Error("a refused Open changed the log")
	}

	last := bytes.Clone(b.data)
	last[b.puts[basePuts-1].off+recordHeader+3] ^= 0x10
	var te *TruncatedError
	if _, _, err := openDamaged(t, last, b.meta, false); !errors.As(err, &te) {
		t.Errorf("Open with the acknowledged last batch damaged = %v, want a *TruncatedError", err)
	}
	s, _, err := openDamaged(t, last, b.metaLagging, false)
	if err != nil {
		t.Fatalf("Open with the last batch damaged = %v, want it cut as torn", err)
	}
	if _, err := s.Get(putKey(basePuts-1), 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the torn last put = %v, want ErrNotFound", err)
	}
	wantValue(t, s, putKey(basePuts-2), fmt.Sprintf("value-%d", basePuts-2), basePuts-1)
}

// TestRepairKeepsEveryReadableRecord: with Repair the store starts, keeps
// every record but the damaged one, sets the damaged file aside, and no
// key's max goes below a token the log still shows, so a stale write stays
// refused.
func TestRepairKeepsEveryReadableRecord(t *testing.T) {
	b := loadBase(t)
	data := bytes.Clone(b.data)
	hit := basePuts / 3
	data[b.puts[hit].off+recordHeader+5] ^= 0x01

	s, dir, err := openDamaged(t, data, b.meta, true)
	if err != nil {
		t.Fatalf("Open with Repair = %v", err)
	}
	for i := range basePuts {
		if i == hit {
			continue
		}
		wantValue(t, s, putKey(i), fmt.Sprintf("value-%d", i), uint64(i+1))
	}
	if err := s.Put(putKey(hit+1), []byte("stale"), uint64(hit+1)); err == nil {
		t.Errorf("a stale put below the repaired max was admitted")
	}
	side, _ := filepath.Glob(filepath.Join(dir, logName+".damaged-*"))
	if len(side) != 1 {
		t.Fatalf("side files %v, want one", side)
	}
	if got, _ := os.ReadFile(side[0]); !bytes.Equal(got, data) {
		t.Error("the side file is not the damaged log as it was")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopening the repaired log without Repair = %v", err)
	}
	defer s2.Close()
	wantValue(t, s2, putKey(basePuts-1), fmt.Sprintf("value-%d", basePuts-1), basePuts)
}

// FuzzRecoverKeepsIntactRecords damages one region of a log of acknowledged
// writes (bit flips within 64 bytes, or a truncation) anywhere, with
// store.meta as the store left it or lagging one batch behind (as a crash
// during the last batch's write leaves it). Recovery must either refuse, or
// keep every batch that ends before the damage; and with Repair, every
// record whose bytes are intact must be back with its value, and no key's
// max may be below its token.
func FuzzRecoverKeepsIntactRecords(f *testing.F) {
	f.Add(uint32(0), []byte{1}, false, false)
	f.Add(uint32(300), []byte{0, 0x80, 0, 4}, false, true)
	f.Add(uint32(1000), []byte{0xff}, true, false)
	f.Add(uint32(2000), []byte{}, true, true)
	f.Fuzz(func(t *testing.T, at uint32, flips []byte, truncate, lagging bool) {
		b := loadBase(t)
		data := bytes.Clone(b.data)
		meta := b.meta
		if lagging {
			meta = b.metaLagging
		}
		pos := int(at % uint32(len(data)))
		first, lastByte := pos, pos // the damaged bytes
		if truncate {
			data, lastByte = data[:pos], len(b.data)-1
		} else {
			if len(flips) == 0 || len(flips) > 64 {
				return
			}
			changed := false
			for i, x := range flips {
				if pos+i < len(data) && x != 0 {
					data[pos+i] ^= x
					changed = true
					lastByte = pos + i
				}
			}
			if !changed {
				return
			}
		}
		intact := func(r scanned) bool { return r.off+r.n <= first || r.off > lastByte }

		s, _, err := openDamaged(t, data, meta, false)
		var ce *CorruptionError
		var te *TruncatedError
		switch {
		case errors.As(err, &ce), errors.As(err, &te):
		case err != nil:
			t.Fatalf("Open = %v, want nil, a *CorruptionError or a *TruncatedError", err)
		default:
			if first < b.ends[basePuts-2] || !lagging {
				t.Fatalf("damage at byte %d, before the last batch (%d) or in a batch store.meta records, was cut silently", first, b.ends[basePuts-2])
			}
			for i, r := range b.puts {
				if b.ends[i] <= first {
					wantValue(t, s, putKey(i), fmt.Sprintf("value-%d", i), uint64(i+1))
				} else if e, err := s.Get(putKey(i), 0); err == nil && string(e.Value) != fmt.Sprintf("value-%d", i) {
					t.Errorf("%s = %q, a value that was never written (record at %d)", putKey(i), e.Value, r.off)
				}
			}
			return
		}
		s, _, err = openDamaged(t, data, meta, true)
		if err != nil {
			t.Fatalf("Open with Repair = %v", err)
		}
		for i, r := range b.puts {
			if m := s.Max(putKey(i)); m < uint64(i+1) && (!lagging || i < basePuts-1) {
				t.Errorf("Max(%s) = %d after repair, below its token %d", putKey(i), m, i+1)
			}
			if !intact(r) {
				continue
			}
			wantValue(t, s, putKey(i), fmt.Sprintf("value-%d", i), uint64(i+1))
		}
	})
}

// TestDamageErrorsNameNoFlag: the refusals say what is wrong and what a
// repair does, in the library's terms; the command line adds which flag to
// give. The control: a message that names a flag is seen to.
func TestDamageErrorsNameNoFlag(t *testing.T) {
	flag := regexp.MustCompile(`(^|\s)--[a-z]`)
	for _, err := range []error{
		&CorruptionError{Path: "store.log", Offset: 7, Reason: "a checksum does not match"},
		&TruncatedError{Path: "store.log", Holds: 2, Wrote: 3, Ceiling: 9},
		&ForeignLogError{Path: "store.log", LogStore: "a", DirStore: "b"},
		&MetaError{Path: "store.meta", Reason: "is missing"},
	} {
		if msg := err.Error(); flag.MatchString(msg) || !strings.Contains(msg, "Options.Repair") {
			t.Errorf("%T says %q: want what a repair does (Options.Repair) and no command-line flag", err, msg)
		}
	}
	if !flag.MatchString("start with --repair") {
		t.Error("control: the flag pattern misses --repair")
	}
}

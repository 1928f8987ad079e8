package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var recordTests = []record{
	{kind: kindPut, key: "a", value: []byte("hello"), token: 2, max: 2},
	{kind: kindPut, key: "jobs/nightly", value: nil, token: 0, max: 0},
	{kind: kindPut, key: "k", value: []byte("v"), token: 5, max: 9},
	{kind: kindDelete, key: "gone", max: 1 << 60},
	{kind: kindFence, key: "read/only", max: 34},
	{kind: kindPut, key: strings.Repeat("k", MaxKeyBytes), value: bytes.Repeat([]byte{0xff}, 1000), token: 1, max: 1},
}

func TestRecordRoundTrip(t *testing.T) {
	var log []byte
	for i := range recordTests {
		log = appendRecord(log, &recordTests[i])
	}
	for i, want := range recordTests {
		got, n, err := decodeRecord(log)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if n != want.size() {
			t.Errorf("record %d: consumed %d bytes, want %d", i, n, want.size())
		}
		if got.kind != want.kind || got.key != want.key || !bytes.Equal(got.value, want.value) || got.token != want.token || got.max != want.max {
			t.Errorf("record %d: got %+v, want %+v", i, got, want)
		}
		log = log[n:]
	}
	if len(log) != 0 {
		t.Errorf("%d bytes left over", len(log))
	}
}

// TestDecodeDamaged: every cut of a record is torn, every flipped bit is
// caught by the CRC or the sanity checks.
func TestDecodeDamaged(t *testing.T) {
	r := record{kind: kindPut, key: "a/b", value: []byte("value"), token: 7, max: 7}
	enc := appendRecord(nil, &r)
	for cut := 0; cut < len(enc); cut++ {
		if _, _, err := decodeRecord(enc[:cut]); err == nil {
			t.Errorf("a record cut to %d of %d bytes decoded", cut, len(enc))
		}
	}
	for i := range enc {
		for bit := 0; bit < 8; bit++ {
			bad := bytes.Clone(enc)
			bad[i] ^= 1 << bit
			if _, _, err := decodeRecord(bad); err == nil {
				t.Errorf("flipping bit %d of byte %d went unnoticed", bit, i)
			}
		}
	}
	// Checksummed but impossible contents are refused too.
	for _, r := range []record{
		{kind: 9, key: "k", max: 1},
		{kind: kindDelete, key: "k", value: []byte("x"), max: 1},
		{kind: kindPut, key: "bad key", max: 1},
		{kind: kindPut, key: "k", token: 5, max: 4},
	} {
		if _, _, err := decodeRecord(appendRecord(nil, &r)); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeRecord(%+v) = %v, want errCorrupt", r, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for i := range recordTests {
		enc := appendRecord(nil, &recordTests[i])
		f.Add(enc)
		f.Add(enc[:len(enc)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := decodeRecord(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n = %d", err, n)
			}
			return
		}
		if n > len(b) || n != r.size() {
			t.Fatalf("n = %d, input %d bytes, record size %d", n, len(b), r.size())
		}
		// Whatever decodes re-encodes to the same bytes.
		if enc := appendRecord(nil, &r); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoding %+v gives different bytes", r)
		}
	})
}

// TestRecoverTornTail damages the last batch of a real log in the ways a
// crash during its write can, with store.meta as such a crash leaves it,
// and checks that reopening keeps every earlier batch, drops the last, and
// truncates the file so that new records follow good ones.
func TestRecoverTornTail(t *testing.T) {
	damages := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated mid-record", func(b []byte) []byte { return b[:len(b)-3] }},
		{"seal lost", func(b []byte) []byte { s, _ := appendSeal(nil, 0, seal{seq: 1}); return b[:len(b)-len(s)] }},
		{"zeros inside the batch", func(b []byte) []byte {
			b = bytes.Clone(b)
			clear(b[goodLen(t, b)+2 : goodLen(t, b)+6])
			return b
		}},
		{"truncated mid-header", func(b []byte) []byte { return b[:len(b)-(len(b)-goodLen(t, b))+4] }},
		{"garbage appended", func(b []byte) []byte { return append(b[:goodLen(t, b)], "\x13\x00\x00\x00garbage!garbage!garbage!"...) }},
		{"zeros appended", func(b []byte) []byte { return append(b[:goodLen(t, b)], make([]byte, 4096)...) }},
		{"bad crc", func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-1] ^= 0x40; return b }},
		{"huge length", func(b []byte) []byte {
			return append(b[:goodLen(t, b)], 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4)
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			mustPut(t, s, "a", "1", 1)
			mustPut(t, s, "b", "2", 5)
			mustGet(t, s, "c", 8) // fence-only record
			// A crash while the last batch is written leaves store.meta
			// naming the batch before it.
			meta, err := os.ReadFile(filepath.Join(dir, metaName))
			if err != nil {
				t.Fatal(err)
			}
			mustPut(t, s, "last", "torn", 9)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, metaName), meta, 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, logName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged := d.damage(b)
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}

			s = mustOpen(t, Options{Dir: dir})
			defer s.Close()
			wantValue(t, s, "a", "1", 1)
			wantValue(t, s, "b", "2", 5)
			if got := s.Max("c"); got != 8 {
				t.Errorf("Max(c) = %d, want 8", got)
			}
			if _, err := s.Get("last", 0); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(last) after a torn last record = %v, want ErrNotFound", err)
			}
			// The file was truncated to the good prefix, so this lands
			// after it and survives another reopen.
			mustPut(t, s, "after", "x", 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, Options{Dir: dir})
			wantValue(t, s, "after", "x", 1)
			wantValue(t, s, "b", "2", 5)
		})
	}
}

// goodLen is the length of b without its last batch: the offset just past
// the seal before the last one.
func goodLen(t *testing.T, b []byte) int {
	t.Helper()
	sc := scanLog(b)
	if len(sc.damage) > 0 {
		t.Fatalf("the undamaged log has damage at %d", sc.damage[0].off)
	}
	var ends []int
	for _, r := range sc.recs {
		if r.r.kind == kindSeal {
			ends = append(ends, r.off+r.n)
		}
	}
	if len(ends) < 2 {
		t.Fatalf("the log has %d batches, want at least 2", len(ends))
	}
	return ends[len(ends)-2]
}

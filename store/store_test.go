package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/seqd/seqd/fence"
)

func mustOpen(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open(%+v): %v", o, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustPut(t testing.TB, s *Store, key, value string, token uint64) {
	t.Helper()
	if err := s.Put(key, []byte(value), token); err != nil {
		t.Fatalf("Put(%q, %q, %d) = %v, want nil", key, value, token, err)
	}
}

func mustGet(t testing.TB, s *Store, key string, token uint64) Entry {
	t.Helper()
	e, err := s.Get(key, token)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(%q, %d) = %v", key, token, err)
	}
	return e
}

func wantValue(t testing.TB, s *Store, key, value string, token uint64) {
	t.Helper()
	e, err := s.Get(key, 0)
	if err != nil {
		t.Errorf("Get(%q) = %v, want %q", key, err, value)
		return
	}
	if string(e.Value) != value || e.Token != token {
		t.Errorf("Get(%q) = %q with token %d, want %q with token %d", key, e.Value, e.Token, value, token)
	}
}

func wantStale(t testing.TB, err error, max uint64) {
	t.Helper()
	var se *fence.StaleTokenError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *fence.StaleTokenError", err)
	}
	if se.Max != max {
		t.Errorf("stale token error with max %d, want %d", se.Max, max)
	}
}

// TestPausedHolderIsFenced: B (token 2) writes, then A (token 1) wakes up and
// writes. Fenced, A is refused and B's write stays. Unfenced (the negative
// control), A's write silently replaces B's.
func TestPausedHolderIsFenced(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	mustPut(t, s, "file", "B", 2)
	wantStale(t, s.Put("file", []byte("A"), 1), 2)
	wantValue(t, s, "file", "B", 2)

	// An equal token is the same holder: both writes are admitted.
	mustPut(t, s, "file", "B2", 2)
	mustPut(t, s, "file", "B3", 2)
	wantValue(t, s, "file", "B3", 2)

	off := mustOpen(t, Options{Dir: t.TempDir(), Fence: FenceOff})
	mustPut(t, off, "file", "B", 2)
	mustPut(t, off, "file", "A", 1) // admitted: nothing checks
	wantValue(t, off, "file", "A", 1)
}

// TestReadModifyWriteRace: the old holder reads with 33, the new holder
// reads with 34, the old holder writes with 33. With reads fenced the write
// is refused; with --fence writes it goes through and the new holder's
// read-modify-write would overwrite it unseen (the negative control).
func TestReadModifyWriteRace(t *testing.T) {
	for _, tc := range []struct {
		mode   FenceMode
		caught bool
	}{{FenceFull, true}, {FenceWrites, false}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			s := mustOpen(t, Options{Dir: t.TempDir(), Fence: tc.mode})
			mustPut(t, s, "counter", "10", 32)
			mustGet(t, s, "counter", 33) // old holder reads
			mustGet(t, s, "counter", 34) // new holder reads
			err := s.Put("counter", []byte("11"), 33)
			if tc.caught {
				wantStale(t, err, 34)
				wantValue(t, s, "counter", "10", 32)
			} else if err != nil {
				t.Fatalf("with --fence writes the old holder's write was refused: %v; the negative control must let it through", err)
			}
		})
	}
}

// TestFencedReadSurvivesRestart: the max raised by a read is in the log.
func TestFencedReadSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	mustPut(t, s, "k", "v", 33)
	mustGet(t, s, "k", 34)
	mustGet(t, s, "never-written", 7)
	s.Close()
	s = mustOpen(t, Options{Dir: dir})
	wantStale(t, s.Put("k", []byte("old"), 33), 34)
	wantStale(t, s.Put("never-written", []byte("old"), 6), 7)
	wantValue(t, s, "k", "v", 33)
}

func TestDeleteKeepsMax(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	mustPut(t, s, "k", "v", 5)
	if err := s.Delete("k", 6); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("k", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	wantStale(t, s.Put("k", []byte("zombie"), 5), 6)
	wantStale(t, s.Delete("k", 4), 6)
	if err := s.Put("k", nil, 0); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("Put without a token on a fenced store = %v, want ErrTokenRequired", err)
	}
}

// TestCompaction writes past the threshold and checks that the log shrank,
// that data, values' tokens and maxes (of deleted and read-only keys too)
// survived, and that the store keeps working and reopening afterwards.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, CompactBytes: 4096})
	mustPut(t, s, "deleted", "x", 40)
	if err := s.Delete("deleted", 41); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "read-only", 50)
	mustPut(t, s, "read-after-write", "w", 60)
	mustGet(t, s, "read-after-write", 61)
	for i := 1; i <= 200; i++ {
		mustPut(t, s, fmt.Sprintf("k%d", i%10), fmt.Sprintf("value-%d", i), uint64(i))
	}
	s.mu.Lock()
	size := s.size
	s.mu.Unlock()
	if size > 4096 {
		t.Errorf("log is %d bytes, past the compaction threshold of 4096", size)
	}
	if fi, err := os.Stat(filepath.Join(dir, logName)); err != nil || fi.Size() != size {
		t.Errorf("log file: %v, %v; want %d bytes", fi, err, size)
	}
	if _, err := os.Stat(filepath.Join(dir, compactName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary compaction file is still there: %v", err)
	}
	check := func(s *Store) {
		t.Helper()
		for k := 0; k < 10; k++ {
			i := 190 + k
			if k == 0 {
				i = 200
			}
			wantValue(t, s, fmt.Sprintf("k%d", k), fmt.Sprintf("value-%d", i), uint64(i))
		}
		wantStale(t, s.Put("deleted", []byte("zombie"), 40), 41)
		wantStale(t, s.Put("read-only", []byte("late"), 49), 50)
		wantStale(t, s.Put("read-after-write", []byte("late"), 60), 61)
		wantValue(t, s, "read-after-write", "w", 60)
		if _, err := s.Get("deleted", 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
		}
	}
	check(s)
	s.Close()
	s = mustOpen(t, Options{Dir: dir, CompactBytes: 4096})
	check(s)
}

// TestCompactionLeftover: a crash between writing the compacted file and
// renaming it leaves the temporary file; the old log must win.
func TestCompactionLeftover(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	mustPut(t, s, "k", "v", 3)
	s.Close()
	junk := appendRecord(nil, &record{kind: kindPut, key: "k", value: []byte("half-done"), token: 9, max: 9})
	if err := os.WriteFile(filepath.Join(dir, compactName), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, Options{Dir: dir})
	wantValue(t, s, "k", "v", 3)
}

func TestOneProcessPerDir(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, Options{Dir: dir})
	if s, err := Open(Options{Dir: dir}); err == nil {
		s.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

// TestGroupCommit: concurrent writers all get their writes, and share
// fsyncs (fewer log writes than records).
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	const writers, per = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= per; i++ {
				if err := s.Put(fmt.Sprintf("w%d", w), []byte(fmt.Sprint(i)), uint64(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, Options{Dir: dir})
	for w := 0; w < writers; w++ {
		wantValue(t, s, fmt.Sprintf("w%d", w), fmt.Sprint(per), per)
	}
}

func TestClosed(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	s.Close()
	if err := s.Put("k", nil, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestValuesAreKept(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, MaxValueBytes/4)
	if err := s.Put("big", big, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("big", append(big, 0), 2); !errors.Is(err, ErrValueTooLarge) {
		t.Errorf("Put of %d bytes = %v, want ErrValueTooLarge", len(big)+1, err)
	}
	e := mustGet(t, s, "big", 0)
	if !bytes.Equal(e.Value, big) || e.Token != 1 {
		t.Errorf("the 1 MiB binary value came back changed (token %d)", e.Token)
	}
}

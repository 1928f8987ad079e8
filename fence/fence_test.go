package fence

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestPausedHolderIsFenced: the new holder (token 2) writes, then the old one
// (token 1) wakes up from a pause and writes.
func TestPausedHolderIsFenced(t *testing.T) {
	f := New(nil)
	if err := f.Admit("file", 2); err != nil {
		t.Fatalf("Admit(file, 2) = %v, want nil", err)
	}
	err := f.Admit("file", 1)
	var se *StaleTokenError
	if !errors.As(err, &se) {
		t.Fatalf("Admit(file, 1) = %v, want *StaleTokenError", err)
	}
	if *se != (StaleTokenError{Key: "file", Token: 1, Max: 2}) {
		t.Errorf("got %+v, want {Key:file Token:1 Max:2}", *se)
	}
	if !errors.Is(err, ErrStaleToken) {
		t.Errorf("errors.Is(%v, ErrStaleToken) = false", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "fence: stale token 1") {
		t.Errorf("Error() = %q, want the prefix %q", msg, "fence: stale token 1")
	}
	if got := f.Max("file"); got != 2 {
		t.Errorf("Max(file) = %d after a rejection, want 2", got)
	}
}

func TestFenceEqualTokenAdmitted(t *testing.T) {
	f := New(nil)
	for i := 0; i < 2; i++ {
		if err := f.Admit("k", 7); err != nil {
			t.Fatalf("Admit(k, 7) #%d = %v, want nil", i+1, err)
		}
	}
}

// TestFenceReadModifyWrite: the old holder reads with 33, the new holder
// reads with 34, the old holder writes with 33. The read with 34 must have
// raised the max, or the write slips in and the new holder's
// read-modify-write loses it.
func TestFenceReadModifyWrite(t *testing.T) {
	f := New(nil)
	if err := f.Admit("counter", 33); err != nil { // old holder's read
		t.Fatal(err)
	}
	if err := f.Admit("counter", 34); err != nil { // new holder's read
		t.Fatal(err)
	}
	if err := f.Admit("counter", 33); !errors.Is(err, ErrStaleToken) { // old holder's write
		t.Fatalf("old holder's write with 33 after a read with 34: got %v, want a stale token", err)
	}
}

func TestFenceKeysIndependent(t *testing.T) {
	f := New(nil)
	if err := f.Admit("a", 10); err != nil {
		t.Fatal(err)
	}
	if err := f.Admit("b", 3); err != nil {
		t.Errorf("Admit(b, 3) = %v; keys must not share a max", err)
	}
	if got := f.Max("missing"); got != 0 {
		t.Errorf("Max(missing) = %d, want 0", got)
	}
}

func TestFenceRestoreNeverLowers(t *testing.T) {
	f := New(nil)
	f.Restore("k", 9)
	if got := f.Max("k"); got != 9 {
		t.Fatalf("Max after Restore(9) = %d, want 9", got)
	}
	f.Restore("k", 4)
	if got := f.Max("k"); got != 9 {
		t.Errorf("Restore(4) lowered the max to %d, want 9", got)
	}
	if err := f.Admit("k", 8); !errors.Is(err, ErrStaleToken) {
		t.Errorf("Admit(k, 8) after Restore(9) = %v, want a stale token", err)
	}
}

// TestFenceConcurrent hammers one key from many goroutines: the max must end
// at the highest token and no token at or above the max at its time may be
// refused (checked by counting: everything ≥ the final max is admitted).
func TestFenceConcurrent(t *testing.T) {
	f := New(nil)
	const workers, per = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= per; i++ {
				tok := uint64(i*workers + w)
				err := f.Admit("hot", tok)
				var se *StaleTokenError
				if err != nil && (!errors.As(err, &se) || se.Max <= tok) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Admit refused a token not below the max: %v", err)
	}
	if got, want := f.Max("hot"), uint64(per*workers+workers-1); got != want {
		t.Errorf("Max(hot) = %d, want %d", got, want)
	}
}

func TestFenceOnStale(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]int{}
	f := New(func(key string) {
		mu.Lock()
		refused[key]++
		mu.Unlock()
	})
	_ = f.Admit("orders", 5)
	_ = f.Admit("orders", 4)
	_ = f.Admit("orders", 3)
	_ = f.Admit("orders", 5)
	_ = f.Admit("other", 1)
	if len(refused) != 1 || refused["orders"] != 2 {
		t.Errorf("onStale calls by key = %v, want map[orders:2]", refused)
	}
}

func BenchmarkFenceAdmitParallel(b *testing.B) {
	f := New(nil)
	var next sync.Mutex
	id := 0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		next.Lock()
		key := "key-" + formatUint(uint64(id))
		id++
		next.Unlock()
		var tok uint64
		for pb.Next() {
			tok++
			if err := f.Admit(key, tok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFenceAdmitHotKey is the worst case: every goroutine on one key,
// half of the calls refused as stale.
func BenchmarkFenceAdmitHotKey(b *testing.B) {
	f := New(nil)
	var tok sync.Mutex
	n := uint64(0)
	b.RunParallel(func(pb *testing.PB) {
		tok.Lock()
		n += 1 << 40
		base := n
		tok.Unlock()
		for i := uint64(0); pb.Next(); i++ {
			_ = f.Admit("hot", base+i)
		}
	})
}

package store

import (
	"sync"
	"testing"
)

// A GET answers with what the record it waited for made durable, never with
// a later write that is still pending (which a kill -9 could take back).
func TestGetDoesNotLeakPendingWrite(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put("k", []byte("A"), 5); err != nil {
		t.Fatal(err)
	}
	var (
		once sync.Once
		wg   sync.WaitGroup
		perr error
	)
	s.flushIOHook = func() {
		once.Do(func() {
			// While the GET's flush has the lock released, a newer holder
			// writes B; its record is appended but not yet durable.
			s.mu.Lock()
			before := s.appended
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				perr = s.Put("k", []byte("B"), 6)
			}()
			for {
				s.mu.Lock()
				after := s.appended
				s.mu.Unlock()
				if after > before {
					return
				}
			}
		})
	}
	got, err := s.Get("k", 6) // a fenced read: appends a fence record and flushes it
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Value) != "A" || got.Token != 5 {
		t.Fatalf("GET = %q with token %d, want A with token 5 (B was not durable when the GET's record was)", got.Value, got.Token)
	}
	wg.Wait()
	if perr != nil {
		t.Fatal(perr)
	}
	if got, _ := s.Get("k", 0); string(got.Value) != "B" {
		t.Fatalf("after B's flush GET = %q, want B", got.Value)
	}
}

package fence_test

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/seqd/seqd/fence"
)

// A resource keeps one Fence and admits every operation, reads included,
// before doing it. The old holder woke up after the new one took over: its
// write is refused instead of overwriting newer data.
func ExampleFence() {
	f := fence.New(nil) // or a func(key string) that counts rejections

	_ = f.Admit("invoices/42", 7) // old holder, token 7
	_ = f.Admit("invoices/42", 8) // new holder, token 8

	err := f.Admit("invoices/42", 7) // old holder again, after a GC pause
	var stale *fence.StaleTokenError
	if errors.As(err, &stale) {
		fmt.Printf("refused token %d, max %d\n", stale.Token, stale.Max)
	}
	fmt.Println(errors.Is(err, fence.ErrStaleToken))
	// Output:
	// refused token 7, max 8
	// true
}

// The hook passed to New is where a resource counts its refusals, here in a
// plain counter; seqd store increments a Prometheus counter there.
func ExampleNew() {
	var refused atomic.Int64
	f := fence.New(func(key string) { refused.Add(1) })

	_ = f.Admit("reports/daily", 2)
	_ = f.Admit("reports/daily", 1)
	fmt.Println("refused:", refused.Load())
	// Output:
	// refused: 1
}

// A holder sends its sequencer with each request; the resource parses it and
// admits the token.
func ExampleParseSequencer() {
	s := fence.Sequencer{Name: "jobs/nightly", Token: 42}.String() // what the holder sends

	seq, err := fence.ParseSequencer(s)
	fmt.Println(s, seq.Kind, seq.Name, seq.Token, err)

	// An election's term names its kind: a resource guarded by the lock
	// jobs/nightly tells it apart.
	seq, _ = fence.ParseSequencer("election:jobs/nightly@43")
	fmt.Println(seq.Kind, seq.Name, seq.Token)

	_, err = fence.ParseSequencer("jobs/nightly@042")
	fmt.Println(errors.Is(err, fence.ErrInvalidSequencer))
	// Output:
	// jobs/nightly@42 lock jobs/nightly 42 <nil>
	// election jobs/nightly 43
	// true
}

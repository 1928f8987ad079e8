package sequencer_test

import (
	"errors"
	"fmt"

	"github.com/seqd/seqd/sequencer"
)

// A resource keeps one Fence and admits every operation, reads included,
// before doing it. The old holder woke up after the new one took over: its
// write is refused instead of overwriting newer data.
func ExampleFence() {
	fence := sequencer.NewFence(nil) // or a *metrics.Metrics to count rejections

	_ = fence.Admit("invoices/42", 7) // old holder, token 7
	_ = fence.Admit("invoices/42", 8) // new holder, token 8

	err := fence.Admit("invoices/42", 7) // old holder again, after a GC pause
	var stale *sequencer.StaleTokenError
	if errors.As(err, &stale) {
		fmt.Printf("refused token %d, max %d\n", stale.Token, stale.Max)
	}
	fmt.Println(errors.Is(err, sequencer.ErrStaleToken))
	// Output:
	// refused token 7, max 8
	// true
}

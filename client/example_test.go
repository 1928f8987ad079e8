package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fence"
)

// Hold a lock for as long as a job runs: the lease renews itself, and its
// context ends the moment it is lost. Every write carries the sequencer.
func ExampleClient_Hold() {
	ctx := context.Background()
	c, err := client.New("") // SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT, SEQD_KEY
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := c.Hold(ctx, "jobs/nightly-report", client.TTL(15*time.Second), client.Wait(time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Release(context.Background())

	work := h.Context() // ends when the lease is lost
	seq, _ := fence.ParseSequencer(h.Lease().Sequencer)
	fmt.Println("holding", seq.Name, "with a token:", seq.Token > 0)
	select {
	case <-work.Done():
		fmt.Println("lost:", context.Cause(work))
	default:
		fmt.Println("still held:", h.SafeFor() > 0)
	}
	// Output:
	// holding jobs/nightly-report with a token: true
	// still held: true
}

// Every new grant of a lock carries a higher token: a resource that
// remembers the highest one it has seen refuses the holder that lost it.
func ExampleClient_Acquire() {
	ctx := context.Background()
	c, _ := client.New("")
	first, _ := c.Acquire(ctx, "jobs/fenced", client.Owner("alice"))
	if _, err := c.Acquire(ctx, "jobs/fenced", client.Owner("bob")); errors.Is(err, client.ErrHeld) {
		fmt.Println("bob: held")
	}
	c.Release(ctx, first)
	second, _ := c.Acquire(ctx, "jobs/fenced", client.Owner("bob"))
	defer c.Release(ctx, second)
	fmt.Println("bob's token is higher:", second.Token > first.Token)

	// Alice's token is stale now: check says so, as a resource would.
	res, err := c.Check(ctx, first.Sequencer)
	fmt.Println("alice valid:", res.Valid, "stale:", errors.Is(err, fence.ErrStaleToken))
	// Output:
	// bob: held
	// bob's token is higher: true
	// alice valid: false stale: true
}

// A semaphore of 2 slots: a third acquirer is refused while two hold, and
// one that names another limit is told the recorded one.
func ExampleClient_AcquireSemaphore() {
	ctx := context.Background()
	c, _ := client.New("")
	a, _ := c.AcquireSemaphore(ctx, "pools/gpu", 2)
	b, _ := c.AcquireSemaphore(ctx, "pools/gpu", 2)
	defer c.Release(ctx, a)
	defer c.Release(ctx, b)
	_, err := c.AcquireSemaphore(ctx, "pools/gpu", 2)
	fmt.Println("third:", errors.Is(err, client.ErrHeld))
	_, err = c.AcquireSemaphore(ctx, "pools/gpu", 8)
	var ae *api.APIError
	if errors.As(err, &ae) && errors.Is(err, client.ErrLimitMismatch) {
		fmt.Println("limit 8 refused; recorded:", *ae.Limit)
	}
	fmt.Println(a.Sequencer[:len("semaphore:")])
	// Output:
	// third: true
	// limit 8 refused; recorded: 2
	// semaphore:
}

// Lead an election and publish a value; the term is the leader's token.
func ExampleClient_AcquireLeadership() {
	ctx := context.Background()
	c, _ := client.New("")
	l, err := c.AcquireLeadership(ctx, "scheduler", "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Release(ctx, l) // resigns
	st, _ := c.Election(ctx, "scheduler")
	fmt.Println(st.Leader.Value, st.Leader.Term == l.Term, st.Self)
	// Output:
	// 10.0.0.7:8080 true true
}

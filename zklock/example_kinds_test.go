package zklock

import (
	"context"
	"fmt"
	"log"
	"time"
)

func ExampleWithLockDelay() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// For a resource that cannot check tokens: should this grant end
	// uncleanly (the session lost, the node deleted by someone else), nobody
	// gets the lock for 10s, long enough for this holder to notice Lost and
	// stop. Release hands over at once.
	m, err := NewMutex(s, "mail/digest", WithLockDelay(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	g, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", g.Name)
	if err := g.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: holding mail/digest
}

func ExampleSemaphore() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// At most 4 exports at once, across every process that names the same
	// semaphore and limit (Curator's InterProcessSemaphoreV2 included).
	sem, err := NewSemaphore(s, "exports", 4)
	if err != nil {
		log.Fatal(err)
	}
	g, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Release(ctx)
	// Each slot's token is above every earlier grant's: fence with it as
	// with a lock's.
	fmt.Println("one of", sem.Limit(), "slots, token > 0:", g.Token > 0)
	// Output: one of 4 slots, token > 0: true
}

func ExampleMultiMutex() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// A transfer needs both accounts. Taken together, in one transaction,
	// no two transfers can deadlock, whichever way each one names them.
	mm, err := NewMultiMutex(s, []string{"accounts/alice", "accounts/bob"})
	if err != nil {
		log.Fatal(err)
	}
	g, err := mm.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Release(ctx)
	// Each lock's token fences the writes to its own account; in zxid mode
	// they are the same number.
	for _, l := range g.Locks {
		fmt.Println("holding", l.Name, "token > 0:", l.Token > 0, "same token:", l.Token == g.Locks[0].Token)
	}
	// Output:
	// holding accounts/alice token > 0: true same token: true
	// holding accounts/bob token > 0: true same token: true
}

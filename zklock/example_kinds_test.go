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

package zklock

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"
)

func ExampleMutex() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	m, err := NewMutex(s, "jobs/nightly-report")
	if err != nil {
		log.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	g, err := m.Acquire(wait)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Release(ctx)

	// Send the token (or g.Sequencer(), "name@token") with every write: the
	// resource refuses tokens below the highest it has seen, which is what
	// keeps a holder that paused and lost the lock from doing harm.
	fmt.Println("holding", g.Name, "token > 0:", g.Token > 0)
	// Output: holding jobs/nightly-report token > 0: true
}

func ExampleGrant_Lost() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	m, err := NewMutex(s, "jobs/compaction")
	if err != nil {
		log.Fatal(err)
	}
	g, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}

	for step := 0; step < 3; step++ {
		select {
		case <-g.Lost():
			// Stop acting on the lock. Holding is never guaranteed: Lost
			// closes before ZooKeeper can give the lock to someone else.
			log.Printf("lock lost at step %d: %v", step, g.Err())
			return
		default:
		}
		// ... one step of work, its writes carrying g.Token ...
	}

	if err := g.Release(ctx); err != nil {
		log.Print(err) // e.g. the lock was lost meanwhile
	}
	<-g.Lost() // closes on release too
	fmt.Println(g.Err())
	// Output: zklock: lock released
}

func ExampleMutex_TryAcquire() {
	ctx := context.Background()
	a, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	ma, _ := NewMutex(a, "singleton")
	mb, _ := NewMutex(b, "singleton")
	g, err := ma.TryAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Release(ctx)

	_, err = mb.TryAcquire(ctx)
	fmt.Println(errors.Is(err, ErrHeld))
	// Output: true
}

func ExampleWithTokenMode() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// Version tokens count the grants of one lock: 1, 2, 3 … A root records
	// one token mode, so version-mode locks get a root of their own.
	m, err := NewMutex(s, "reports/daily", WithRoot("/seqd/counted-locks"), WithTokenMode(TokenVersion))
	if err != nil {
		log.Fatal(err)
	}
	var tokens []uint64
	for i := 0; i < 2; i++ {
		g, err := m.Acquire(ctx)
		if err != nil {
			log.Fatal(err)
		}
		tokens = append(tokens, g.Token)
		g.Release(ctx)
	}
	fmt.Println("dense:", tokens[1] == tokens[0]+1)
	// Output: dense: true
}

// exampleServers is the package's shared test server. In a program it is
// the ensemble's addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
func exampleServers() []string { return shared.Get(exampleTB{}).Servers() }

// exampleTB lets examples, which have no *testing.T, use the shared server
// (started once, stopped by TestMain).
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()        {}
func (exampleTB) Cleanup(func()) {}
func (exampleTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// grantPrinter is an Observer that prints the grants of a session and their
// ends; a program would count them in its metrics instead.
type grantPrinter struct{}

func (grantPrinter) Waiting(lock string, delta int) {}
func (grantPrinter) Granted(lock string, wait time.Duration) {
	fmt.Println("granted", lock)
}
func (grantPrinter) GrantEnded(lock string, err error) {
	fmt.Println("ended", lock+":", err)
}
func (grantPrinter) TokenRegression(lock string) {}
func (grantPrinter) Connected(up bool)           {}
func (grantPrinter) SessionExpired()             {}
func (grantPrinter) Overtaken(string)            {}
func (grantPrinter) Blocked(string)              {}

func ExampleObserver() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleServers(), Options{Observer: grantPrinter{}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	m, err := NewMutex(s, "jobs/observed")
	if err != nil {
		log.Fatal(err)
	}
	g, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	g.Release(ctx)
	// Output:
	// granted jobs/observed
	// ended jobs/observed: zklock: lock released
}

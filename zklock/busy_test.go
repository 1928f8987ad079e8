package zklock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Two campaigns on one Election at once: the first waits behind another
// leader, and the second fails at once with ErrBusy, before it writes
// anything: the candidates stay two, and the first's value is the one in
// ZooKeeper. The control lets the second past the guard: it contends too,
// a third candidate, which is what the guard is for.
func TestElectionSecondCampaignIsBusy(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	name := "busy-" + newGUID()
	leader := election(t, dial(t, c.Servers(), Options{}), name)
	held, err := leader.Campaign(ctxT(t, 10*time.Second), []byte("leader"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Resign(context.Background())

	e := election(t, s, name)
	reports := e.Observe(ctxT(t, 30*time.Second))
	first, cancelFirst := context.WithCancel(ctxT(t, 30*time.Second))
	firstDone := make(chan error, 1)
	go func() { _, err := e.Campaign(first, []byte("first")); firstDone <- err }()
	awaitLeader(t, reports, "the first campaign to wait", func(l Leader) bool { return l.Candidates == 2 })

	if _, err := e.Campaign(ctxT(t, 10*time.Second), []byte("second")); !errors.Is(err, ErrBusy) {
		t.Fatalf("second campaign: got %v, want ErrBusy", err)
	}
	if _, err := e.TryCampaign(ctxT(t, 10*time.Second), []byte("second")); !errors.Is(err, ErrBusy) {
		t.Fatalf("second try: got %v, want ErrBusy", err)
	}
	values := candidateValues(t, s, e.Path())
	if want := []string{"first", "leader"}; !slices.Equal(values, want) {
		t.Fatalf("candidates' values after the refused campaigns: got %q, want %q", values, want)
	}

	// The control: without the guard the second campaign contends too.
	e.m.mu.Lock()
	e.m.unguarded = true
	e.m.mu.Unlock()
	second, cancelSecond := context.WithCancel(ctxT(t, 30*time.Second))
	secondDone := make(chan error, 1)
	go func() { _, err := e.Campaign(second, []byte("second")); secondDone <- err }()
	awaitLeader(t, reports, "the unguarded second campaign to contend", func(l Leader) bool { return l.Candidates == 3 })
	if values := candidateValues(t, s, e.Path()); !slices.Contains(values, "second") {
		t.Fatalf("control: candidates' values %q, want the second's among them", values)
	}
	cancelSecond()
	cancelFirst()
	for _, done := range []chan error{firstDone, secondDone} {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled campaign: got %v, want context.Canceled", err)
		}
	}
}

// candidateValues are the data of the election's candidates, sorted.
func candidateValues(t *testing.T, s *Session, p string) []string {
	t.Helper()
	var values []string
	for _, c := range children(t, s, p) {
		data, _, err := s.conn.Get(p + "/" + c)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, string(data))
	}
	slices.Sort(values)
	return values
}

// A second Acquire on one Mutex while the first waits, and a second on
// one MultiMutex, fail at once with ErrBusy and leave no node; an acquire
// once the first has ended goes ahead.
func TestSecondAcquireIsBusy(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	other := dial(t, c.Servers(), Options{})
	name := "busy-" + newGUID()
	held, err := mutex(t, other, name).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	m := mutex(t, s, name)
	first, cancelFirst := context.WithCancel(ctxT(t, 30*time.Second))
	firstDone := make(chan error, 1)
	go func() { _, err := m.Acquire(first); firstDone <- err }()
	waitQueued(t, m, 2)
	if _, err := m.Acquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire: got %v, want ErrBusy", err)
	}
	if _, err := m.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrBusy) {
		t.Fatalf("second TryAcquire: got %v, want ErrBusy", err)
	}
	if got := len(children(t, s, m.Path())); got != 2 {
		t.Fatalf("%d contenders after the refused acquires, want 2", got)
	}

	mm, err := NewMultiMutex(s, []string{name, name + "-b"})
	if err != nil {
		t.Fatal(err)
	}
	multiDone := make(chan error, 1)
	go func() { _, err := mm.Acquire(first); multiDone <- err }()
	waitQueued(t, m, 3)
	if _, err := mm.Acquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrBusy) {
		t.Fatalf("second MultiMutex Acquire: got %v, want ErrBusy", err)
	}
	if got := len(children(t, s, m.Path())); got != 3 {
		t.Fatalf("%d contenders after the refused multi-lock acquire, want 3", got)
	}

	cancelFirst()
	for _, done := range []chan error{firstDone, multiDone} {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled acquire: got %v, want context.Canceled", err)
		}
	}
	if err := held.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Acquire after the first ended: %v", err)
	}
	g.Release(context.Background())
}

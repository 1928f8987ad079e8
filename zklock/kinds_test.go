package zklock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestSemaphoreRecordsItsLimit: the first acquirer records the limit in the
// semaphore's node; an acquirer with another limit is refused with the
// recorded one and leaves no lease behind, so that a limit-100 acquirer
// cannot fill a limit-2 semaphore. Once nobody holds it, ZooKeeper removes
// the node and a new limit may be recorded.
func TestSemaphoreRecordsItsLimit(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	two := semaphore(t, s, "limits/pool", 2)
	g, err := two.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	hundred := semaphore(t, s, "limits/pool", 100)
	for _, acquire := range []func(context.Context) (*Grant, error){hundred.TryAcquire, hundred.Acquire} {
		_, err := acquire(ctxT(t, 10*time.Second))
		var le *LimitError
		if !errors.As(err, &le) || le.Recorded != 2 || le.Wanted != 100 || !errors.Is(err, ErrLimitMismatch) {
			t.Fatalf("a limit-100 acquire of a limit-2 semaphore: %v, want a LimitError recording 2", err)
		}
	}
	if st, err := two.State(ctxT(t, 5*time.Second)); err != nil || st.Holders != 1 || st.Limit != 2 {
		t.Fatalf("state = %+v, %v; want 1 holder, limit 2 (the refused acquirer left nothing)", st, err)
	}
	if err := g.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSemaphoreStateCountsHoldersExactly: an acquirer that waits for a
// slot keeps a lease node while it waits; it is not a holder.
func TestSemaphoreStateCountsHoldersExactly(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	sem := semaphore(t, s, "limits/exact", 1)
	g, err := sem.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	other := dial(t, c.Servers(), Options{})
	waiter := semaphore(t, other, "limits/exact", 1)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := waiter.Acquire(wctx); done <- err }()
	raw := rawConn(t, c.Servers())
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids, _, _ := raw.Children(sem.Path() + "/leases")
		if len(kids) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter's lease node never appeared (%d nodes)", len(kids))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, err := sem.State(ctxT(t, 5*time.Second)); err != nil || st.Holders != 1 {
		t.Fatalf("state with one holder and one waiter = %+v, %v; want 1 holder", st, err)
	}
	cancel()
	<-done
	g.Release(context.Background())
}

// TestSemaphoreNamesCannotReachBookkeeping: "pool/leases" would put a
// semaphore's nodes among the holders of "pool".
func TestSemaphoreNamesCannotReachBookkeeping(t *testing.T) {
	for _, name := range []string{"pool/leases", "pool/locks", "leases", "a/locks/b"} {
		if _, err := NewSemaphore(nil, name, 2); !errors.Is(err, ErrInvalidName) {
			t.Errorf("NewSemaphore(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	for _, name := range []string{"pool", "pool/leases2", "my-locks"} {
		if _, err := NewSemaphore(nil, name, 2); err != nil {
			t.Errorf("NewSemaphore(%q) = %v, want it accepted", name, err)
		}
	}
}

// TestCreatorACLRefusesAnOpenRoot: under the creator ACL, a root that
// exists already with world:anyone allowed to write (made by someone else)
// is refused, since anyone could delete or plant nodes below it; a root
// the session makes itself is fine.
func TestCreatorACLRefusesAnOpenRoot(t *testing.T) {
	c := shared.Get(t)
	raw := rawConn(t, c.Servers())
	open := "/acl-open-root/" + time.Now().Format("150405.000000")
	if _, err := raw.Create("/acl-open-root", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := raw.Create(open, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s := dial(t, c.Servers(), Options{Auth: &testAuth, ACL: ACLCreator})
	err := s.ClaimTokenMode(ctxT(t, 10*time.Second), open, TokenZxid)
	var oe *OpenRootError
	if !errors.As(err, &oe) || oe.Root != open || !errors.Is(err, ErrOpenRoot) {
		t.Fatalf("claiming an open root under the creator ACL: %v, want an OpenRootError", err)
	}
	mine := open + "-mine"
	if err := s.ClaimTokenMode(ctxT(t, 10*time.Second), mine, TokenZxid); err != nil {
		t.Fatalf("claiming a root the session creates: %v", err)
	}
	// The control: under the open ACL the same root is used as it is.
	o := dial(t, c.Servers(), Options{})
	if err := o.ClaimTokenMode(ctxT(t, 10*time.Second), open, TokenZxid); err != nil {
		t.Fatalf("claiming an open root under the open ACL: %v", err)
	}
}

// TestCheckRoots: roots that nest, or reach another root's lock-delay
// markers, are refused; side by side they are fine.
func TestCheckRoots(t *testing.T) {
	ok := [][]Root{
		{{"locks", "/seqd/locks"}, {"semaphores", "/seqd/semaphores"}, {"elections", "/seqd/elections"}},
		{{"locks", "/a"}, {"semaphores", "/b"}, {"elections", "/c/d"}},
		{{"locks", "/seqd/locks"}, {"semaphores", "/seqd/locks2"}},
	}
	for _, rs := range ok {
		if err := CheckRoots(rs...); err != nil {
			t.Errorf("CheckRoots(%v) = %v, want nil", rs, err)
		}
	}
	bad := [][]Root{
		{{"locks", "/seqd"}, {"elections", "/seqd/elections"}},         // lock "elections/x" is election "x"
		{{"locks", "/seqd/locks"}, {"elections", "/seqd/locks"}},       // the same root
		{{"locks", "/seqd/locks"}, {"elections", "/seqd/locks.delay"}}, // the locks' markers
		{{"locks", "/seqd/locks"}, {"elections", "/seqd/locks.delay/x"}},
		{{"locks", "/"}, {"elections", "/e"}},
		{{"locks", "seqd/locks"}},
		{{"locks", "/seqd/locks/"}},
	}
	for _, rs := range bad {
		if err := CheckRoots(rs...); err == nil {
			t.Errorf("CheckRoots(%v) = nil, want an error", rs)
		}
	}
}

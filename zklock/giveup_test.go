package zklock

import (
	"errors"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
)

// A session that has not heard from ZooKeeper for twice its timeout is
// given up: Done closes with ErrSessionExpired although ZooKeeper never said
// so. It cannot say so while it is unreachable, and an ensemble restored
// from an older copy refuses the session's reconnects outright (the session
// has seen a later zxid than the ensemble's), so go-zookeeper would retry
// for ever and the session's owner would never dial the new session it
// needs. ZooKeeper has expired such a session by then anyway, and every
// grant of it was declared lost at its deadline.
func TestSessionGivenUpAfterLongSilence(t *testing.T) {
	c := shared.Get(t)
	p := testenv.NewProxy("given-up")
	t.Cleanup(p.Close)
	addr, err := p.Forward(c.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second
	s := dial(t, []string{addr}, Options{SessionTimeout: timeout})
	m, err := NewMutex(s, "given-up")
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	cut := time.Now()
	select {
	case <-g.Lost():
	case <-time.After(5 * timeout):
		t.Fatal("the grant was not lost within five session timeouts of the cut")
	}
	select {
	case <-s.Done():
		if since := time.Since(cut); since < s.Timeout() {
			t.Errorf("the session was given up %v after the cut, before its timeout %v had passed", since, s.Timeout())
		}
		if !errors.Is(s.Err(), ErrSessionExpired) {
			t.Errorf("the given-up session's error is %v, want ErrSessionExpired", s.Err())
		}
		t.Logf("given up %v after the cut (session timeout %v)", time.Since(cut).Round(time.Millisecond), s.Timeout())
	case <-time.After(10 * timeout):
		t.Fatalf("the session still waits for ZooKeeper %v after it was cut off", 10*timeout)
	}
}

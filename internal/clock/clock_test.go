package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrder(t *testing.T) {
	c := NewFake(time.Unix(1000, 0))
	var got []int
	ch1, _ := c.NewTimer(3 * time.Second)
	ch2, _ := c.NewTimer(1 * time.Second)
	stopped, tm := c.NewTimer(2 * time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false, want true")
	}
	c.Advance(2 * time.Second)
	select {
	case <-ch2:
		got = append(got, 2)
	default:
	}
	select {
	case <-ch1:
		t.Fatal("3s timer fired after 2s")
	case <-stopped:
		t.Fatal("stopped timer fired")
	default:
	}
	c.Advance(time.Second)
	select {
	case now := <-ch1:
		got = append(got, 1)
		if want := time.Unix(1003, 0); !now.Equal(want) {
			t.Fatalf("fired at %v, want %v", now, want)
		}
	default:
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Fatalf("fired %v, want [2 1]", got)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending = %d, want 0", c.Pending())
	}
}

func TestFakeWaitPending(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	done := make(chan struct{})
	go func() {
		c.AfterFunc(time.Second, func() { close(done) })
	}()
	if !c.WaitPending(1, nil) {
		t.Fatal("WaitPending returned false")
	}
	c.Advance(time.Second)
	<-done
}

func TestFakeWaitTimerAt(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	c.NewTimer(2 * time.Second) // another timer: not the one waited for
	found := make(chan bool, 1)
	go func() { found <- c.WaitTimerAt(time.Unix(1, 0), nil) }()
	select {
	case <-found:
		t.Fatal("WaitTimerAt returned before a timer was due at its deadline")
	case <-time.After(50 * time.Millisecond):
	}
	c.NewTimer(time.Second)
	if !<-found {
		t.Fatal("WaitTimerAt returned false")
	}
	done := make(chan struct{})
	close(done)
	if c.WaitTimerAt(time.Unix(3, 0), done) {
		t.Fatal("WaitTimerAt found a timer due at 3s, where none is")
	}
}

// A timer for an absolute deadline is not postponed when the clock moves
// between reading the time and arming it (NewTimer(deadline.Sub(Now())) is).
func TestFakeTimerAtIgnoresMovesBeforeArming(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	deadline := c.Now().Add(2 * time.Second)
	c.Advance(time.Second) // the clock moves before the timer is armed
	ch, _ := c.TimerAt(deadline)
	c.Advance(time.Second)
	select {
	case <-ch:
	default:
		t.Fatal("TimerAt did not fire at its deadline")
	}
	past, _ := c.TimerAt(deadline)
	select {
	case <-past:
	default:
		t.Fatal("TimerAt of a past deadline did not fire at once")
	}
}

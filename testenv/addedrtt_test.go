package testenv

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// AddedRTT sees the delay a proxy adds, sees none through a proxy that
// delays nothing, and is 0 when a probe fails.
func TestAddedRTT(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.CopyN(c, c, 1) }()
		}
	}()
	echo := func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte{1}); err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	}
	p := NewProxy("rtt")
	defer p.Close()
	via, err := p.Forward(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const delay = 20 * time.Millisecond
	if d := AddedRTT(via, l.Addr().String(), echo); d > delay/2 {
		t.Errorf("a proxy that delays nothing adds %v", d)
	}
	p.DelayOneWay(ToTarget, delay)
	if d := AddedRTT(via, l.Addr().String(), echo); d < delay*3/4 {
		t.Errorf("a proxy that delays %v adds %v, by the probes", delay, d)
	}
	failing := func(string) error { return errors.New("no answer") }
	if d := AddedRTT(via, l.Addr().String(), failing); d != 0 {
		t.Errorf("failing probes measured %v, want 0", d)
	}
}

package testenv

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestMemberOnATakenPortSaysSo: a member whose client port another process
// bound before it exits with a BindException, and WaitServing says the
// port was taken (which Start answers by choosing new ports), not merely
// that the member exited.
func TestMemberOnATakenPortSaysSo(t *testing.T) {
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	defer c.Stop()
	m := c.Members[0]
	m.Stop()
	ln, err := net.Listen("tcp", m.ClientAddr)
	if err != nil {
		t.Fatalf("take the member's port: %v", err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = m.Restart(ctx)
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("Restart on a taken port: %v; want errPortTaken", err)
	}
}

package testenv

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
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

	// The port free again, the member exits for another reason (a config
	// it cannot read): the earlier run's BindException, still in its
	// logs, is not this run's.
	ln.Close()
	if err := os.WriteFile(m.cfg, []byte("clientPort=not-a-port\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = m.Restart(ctx)
	if err == nil || errors.Is(err, errPortTaken) {
		t.Fatalf("Restart with a broken config: %v; want an exit that is not errPortTaken", err)
	}
	if !strings.Contains(m.Logs(), "BindException") {
		t.Fatal("the logs no longer hold the earlier run's BindException: the check above tests nothing")
	}
}

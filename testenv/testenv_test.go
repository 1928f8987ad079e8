package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

func TestStandalone(t *testing.T) {
	start := time.Now()
	c := zktest.StartT(t, testenv.Options{})
	t.Logf("standalone ready in %v", time.Since(start))
	mode, err := c.Members[0].Mode()
	if err != nil || mode != "standalone" {
		t.Fatalf("mode = %q, %v; want standalone", mode, err)
	}
	out, err := testenv.FourLetter(c.Members[0].ClientAddr, "ruok", time.Second)
	if err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v; want imok", out, err)
	}
	c.Members[0].Kill()
	if _, err := c.Members[0].Mode(); err == nil {
		t.Fatal("killed server still answers srvr")
	}
	if err := c.Members[0].Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestEnsembleControls(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Followers()); n != 2 {
		t.Fatalf("followers = %d, want 2", n)
	}
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	// A paused server answers nothing (a read that ends without data is
	// no answer either).
	if out, err := testenv.FourLetter(leader.ClientAddr, "srvr", 300*time.Millisecond); err == nil && out != "" {
		t.Fatalf("paused leader answered srvr: %q", out)
	}
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	newLeader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatal("killed member still reported as leader")
	}
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.ConnectString(), leader.ClientAddr) {
		t.Fatalf("connect string %q lacks %s", c.ConnectString(), leader.ClientAddr)
	}
}

func TestClientPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_, err = testenv.Start(context.Background(), testenv.Options{ClientPort: port})
	if !errors.Is(err, testenv.ErrPortInUse) {
		t.Fatalf("Start on a taken port: got %v, want ErrPortInUse", err)
	}
	l.Close()
	c := zktest.StartT(t, testenv.Options{ClientPort: port})
	if got, want := c.ConnectString(), fmt.Sprintf("127.0.0.1:%d", port); got != want {
		t.Fatalf("ConnectString() = %q, want %q", got, want)
	}
	if testenv.PortFree(port) {
		t.Fatalf("port %d free while ZooKeeper serves on it", port)
	}
}

func TestStartCancelledQuietly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := testenv.Start(ctx, testenv.Options{})
	if err == nil {
		t.Fatal("Start with a cancelled context succeeded")
	}
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "ZooKeeper logs") {
		t.Fatalf("Start with a cancelled context: got %q, want context.Canceled without server logs", err)
	}
}

package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLinksCarryAllPeerTraffic checks, from the kernel's socket table, that
// with PeerProxies no member holds a connection to another member's real
// quorum or election port: every connection between members goes through a
// link, connections dialed back after an election hello included.
func TestLinksCarryAllPeerTraffic(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	c, err := Start(context.Background(), Options{Servers: 3, PeerProxies: true})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	defer c.Stop()
	peerPort := map[int]int{} // real quorum or election port -> member id
	for _, m := range c.Members {
		peerPort[m.peerPorts[0]], peerPort[m.peerPorts[1]] = m.ID, m.ID
	}
	// Sample the socket table for a while: election connections are
	// dialed, refused and dialed back as the members meet.
	through := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		conns := established()
		through = 0
		for _, m := range c.Members {
			for _, ino := range socketInodes(m.PID()) {
				cn, ok := conns[ino]
				if !ok {
					continue
				}
				if id, ok := peerPort[cn.remote]; ok && id != m.ID {
					t.Fatalf("zk%d is connected straight to zk%d's port %d, around the links", m.ID, id, cn.remote)
				}
				if id, ok := peerPort[cn.local]; !ok || id != m.ID {
					through++ // dialed out: to a link
				}
			}
		}
	}
	if through == 0 {
		t.Error("no member has a connection to a link: want every peer connection through one")
	}
	t.Logf("connections from members to links: %d", through)
}

type tcpConn struct{ local, remote int }

// established reads the established TCP connections by socket inode.
func established() map[string]tcpConn {
	out := map[string]tcpConn{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "01" {
				continue
			}
			out[fs[9]] = tcpConn{local: hexPort(fs[1]), remote: hexPort(fs[2])}
		}
		fh.Close()
	}
	return out
}

func hexPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseInt(p, 16, 32)
	return int(n)
}

func socketInodes(pid int) []string {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			out = append(out, strings.TrimSuffix(ino, "]"))
		}
	}
	return out
}

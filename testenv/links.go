package testenv

import (
	"fmt"
	"net"
	"time"
)

// startLinks starts a Proxy for each ordered pair of members (ids from 1),
// with two routes: the target's quorum port first, its election port second.
// ports are the members' client, quorum and election ports, three each.
func (c *Cluster) startLinks(ports []int, n int) error {
	type pair = [2]int
	lns := map[pair][2]net.Listener{}
	closeAll := func() {
		for _, ls := range lns {
			ls[0].Close()
			ls[1].Close()
		}
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			if i == j {
				continue
			}
			var ls [2]net.Listener
			for k := range ls {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					if ls[0] != nil {
						ls[0].Close()
					}
					closeAll()
					return fmt.Errorf("testenv: link zk%d->zk%d: %w", i, j, err)
				}
				ls[k] = l
			}
			lns[pair{i, j}] = ls
		}
	}
	c.links = map[pair]*Proxy{}
	for pr, ls := range lns {
		i, j := pr[0], pr[1]
		p := NewProxy(fmt.Sprintf("zk%d->zk%d", i, j))
		c.links[pr] = p
		// Member i advertises, in its election hello to j, its end of the
		// reverse link, so that j's connections back to i go through it.
		back := lns[pair{j, i}][1].Addr().String()
		p.serve(ls[0], fmt.Sprintf("127.0.0.1:%d", ports[3*(j-1)+1]), nil)
		p.serve(ls[1], fmt.Sprintf("127.0.0.1:%d", ports[3*(j-1)+2]), electionHello(back))
	}
	return nil
}

// Link returns the proxy that carries member from's connections to member to
// (ids from 1), or nil without Options.PeerProxies. It carries the quorum
// connection while from follows to, and the leader-election connection
// between the two when from has the higher id (ZooKeeper keeps only the
// connection the higher id dials).
func (c *Cluster) Link(from, to int) *Proxy { return c.links[[2]int{from, to}] }

// CutLinks cuts every link between members a and b, both ways.
func (c *Cluster) CutLinks(a, b int) {
	c.Link(a, b).Cut()
	c.Link(b, a).Cut()
}

// HealLinks makes the links between members a and b pass again.
func (c *Cluster) HealLinks(a, b int) {
	c.Link(a, b).Pass()
	c.Link(b, a).Pass()
}

// DelayLinks delays every chunk between members a and b by d, both ways.
func (c *Cluster) DelayLinks(a, b int, d time.Duration) {
	c.Link(a, b).Delay(d)
	c.Link(b, a).Delay(d)
}

// DropLinks discards what member from sends to member to, on every
// connection between them, and lets the other direction through.
func (c *Cluster) DropLinks(from, to int) {
	c.Link(from, to).Drop(ToTarget)
	c.Link(to, from).Drop(FromTarget)
}

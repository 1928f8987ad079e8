package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/zklock"
)

// What ZooKeeper's CPU per lock cycle is made of: the same uncontended cycle
// (each client on a lock of its own) in five shapes, from the raw
// create+delete up to the requests a zklock cycle sends (a multi that
// creates the contender and stamps the lock node, a children read that
// leaves a watch, a delete), ZooKeeper's CPU per cycle read from /proc
// around each shape. The shapes alternate, round after round, and each
// prints its median cost against zk.Lock's shape measured in the same run.
//
//	go test -run '^$' -bench BenchmarkZooKeeperCostByShape -benchtime 1x ./cmd/seqd/internal/bench
func BenchmarkZooKeeperCostByShape(b *testing.B) {
	zkc := sharedZK.Get(b)
	servers := zkc.Servers()
	pid := zkc.Members[0].PID()
	const (
		clients = 8
		window  = 2 * time.Second
		rounds  = 5
	)
	acl := zk.WorldACL(zk.PermAll)
	conns := make([]*zk.Conn, clients)
	mutexes := make([]*zklock.Mutex, clients)
	type shape struct {
		name  string
		cycle func(c *zk.Conn, parent string) error
	}
	create := func(c *zk.Conn, parent string) (string, error) {
		return c.Create(parent+"/c-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	}
	shapes := []shape{
		{"create+delete (raw)", func(c *zk.Conn, parent string) error {
			p, err := create(c, parent)
			if err == nil {
				err = c.Delete(p, -1)
			}
			return err
		}},
		{"create+children+delete (zk.Lock)", func(c *zk.Conn, parent string) error {
			p, err := create(c, parent)
			if err == nil {
				_, _, err = c.Children(parent)
			}
			if err == nil {
				err = c.Delete(p, -1)
			}
			return err
		}},
		{"create+children watch+delete", func(c *zk.Conn, parent string) error {
			p, err := create(c, parent)
			if err == nil {
				_, _, _, err = c.ChildrenW(parent)
			}
			if err == nil {
				err = c.Delete(p, -1)
			}
			return err
		}},
		{"multi(create,stamp)+children+delete", func(c *zk.Conn, parent string) error {
			p, err := stampedCreate(c, parent, acl)
			if err == nil {
				_, _, err = c.Children(parent)
			}
			if err == nil {
				err = c.Delete(p, -1)
			}
			return err
		}},
		{"multi(create,stamp)+children watch+delete", func(c *zk.Conn, parent string) error {
			p, err := stampedCreate(c, parent, acl)
			if err == nil {
				_, _, _, err = c.ChildrenW(parent)
			}
			if err == nil {
				err = c.Delete(p, -1)
			}
			return err
		}},
	}
	// The real thing: zklock's Mutex, a session per client, beside the
	// shapes of its requests.
	shapes = append(shapes, shape{"zklock Mutex.Acquire+Release", func(c *zk.Conn, parent string) error {
		m := mutexes[slices.Index(conns, c)]
		g, err := m.Acquire(context.Background())
		if err == nil {
			err = g.Release(context.Background())
		}
		return err
	}})
	base := fmt.Sprintf("/bench-shapes-%d", time.Now().UnixNano())
	admin := zkConn(b, servers)
	if err := mkdirs(admin, base, acl); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = removeTree(admin, base) }()
	for i := range conns {
		conns[i] = zkConn(b, servers)
		if _, err := admin.Create(fmt.Sprintf("%s/l%d", base, i), nil, 0, acl); err != nil {
			b.Fatal(err)
		}
		s, err := zklock.Dial(context.Background(), servers, zklock.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if mutexes[i], err = zklock.NewMutex(s, fmt.Sprintf("m%d", i), zklock.WithRoot(base+"/zklock")); err != nil {
			b.Fatal(err)
		}
	}
	// run drives every client through s for the window and returns
	// ZooKeeper's CPU per cycle.
	run := func(s shape) time.Duration {
		before, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(window)
		var wg sync.WaitGroup
		counts := make([]int, clients)
		errs := make([]error, clients)
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				parent := fmt.Sprintf("%s/l%d", base, i)
				for time.Now().Before(deadline) {
					if errs[i] = s.cycle(c, parent); errs[i] != nil {
						return
					}
					counts[i]++
				}
			}()
		}
		wg.Wait()
		after, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for i := range counts {
			if errs[i] != nil {
				b.Fatalf("%s: %v", s.name, errs[i])
			}
			n += counts[i]
		}
		return (after - before) / time.Duration(max(n, 1))
	}
	for range b.N {
		costs := make([][]time.Duration, len(shapes))
		for range rounds {
			for i, s := range shapes {
				costs[i] = append(costs[i], run(s))
			}
		}
		med := func(ds []time.Duration) time.Duration {
			ds = slices.Clone(ds)
			slices.Sort(ds)
			return ds[len(ds)/2]
		}
		base := med(costs[1])
		var out strings.Builder
		for i, s := range shapes {
			m := med(costs[i])
			fmt.Fprintf(&out, "%-52s ZooKeeper CPU per cycle %6.0fµs  %.2f× zk.Lock's\n", s.name, float64(m)/float64(time.Microsecond), float64(m)/float64(base))
			b.ReportMetric(float64(m)/float64(base), fmt.Sprintf("ratio-%d", i))
		}
		b.Log("\n" + out.String())
	}
}

// stampedCreate creates a contender under parent and, in the same multi,
// writes the lock node's data, as zklock's stamped create does.
func stampedCreate(c *zk.Conn, parent string, acl []zk.ACL) (string, error) {
	res, err := c.Multi(
		&zk.CreateRequest{Path: parent + "/c-", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence},
		&zk.SetDataRequest{Path: parent, Data: []byte("stamp"), Version: -1},
	)
	if err != nil {
		return "", err
	}
	return res[0].String, nil
}

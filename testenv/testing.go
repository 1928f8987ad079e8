package testenv

import (
	"context"
	"sync"
	"testing"
)

// StartT starts a cluster for a test: it fails the test (never skips) when
// ZooKeeper cannot be started, prints the server logs if the test failed, and
// stops the cluster at cleanup.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ZooKeeper logs:\n%s", c.Logs())
		}
		c.Stop()
	})
	return c
}

// Lazy is one cluster per package, started by the first test that asks and
// stopped by Close in TestMain. Use it for tests that do not break the
// cluster.
type Lazy struct {
	Options Options

	once sync.Once
	c    *Cluster
	err  error
}

// Get returns the shared cluster, starting it on first use; it fails the
// test if ZooKeeper cannot be started.
func (l *Lazy) Get(t testing.TB) *Cluster {
	t.Helper()
	l.once.Do(func() { l.c, l.err = Start(context.Background(), l.Options) })
	if l.err != nil {
		t.Fatalf("start ZooKeeper: %v", l.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ZooKeeper logs:\n%s", l.c.Logs())
		}
	})
	return l.c
}

// Close stops the cluster if it was started.
func (l *Lazy) Close() {
	if l.c != nil {
		l.c.Stop()
	}
}

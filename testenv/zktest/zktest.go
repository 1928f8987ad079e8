// Package zktest holds the testing.TB helpers around package testenv: a
// cluster per test or per package that fails the test (never skips it) when
// ZooKeeper cannot start, and a poll-until helper. It is kept apart from
// testenv so that the seqd binary, which starts servers with testenv for
// `seqd dev`, does not link package testing.
package zktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/clockstep"
	"github.com/seqd/seqd/testenv"
)

// StartT starts a cluster for a test: it fails the test (never skips) when
// ZooKeeper cannot be started, prints the server logs if the test failed, and
// stops the cluster at cleanup.
func StartT(t testing.TB, opts testenv.Options) *testenv.Cluster {
	t.Helper()
	clockstep.Watch()
	c, err := testenv.Start(context.Background(), opts)
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
	Options testenv.Options

	once sync.Once
	c    *testenv.Cluster
	err  error
}

// Get returns the shared cluster, starting it on first use; it fails the
// test if ZooKeeper cannot be started.
func (l *Lazy) Get(t testing.TB) *testenv.Cluster {
	t.Helper()
	clockstep.Watch()
	l.once.Do(func() { l.c, l.err = testenv.Start(context.Background(), l.Options) })
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

// Eventually polls cond every 10ms until it is true, and fails the test if it
// is still false after d. what names the awaited condition in the failure.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

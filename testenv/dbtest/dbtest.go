// Package dbtest holds the testing.TB helpers around testenv's database
// servers: a server per test, or one per package, that fails the test
// (never skips it) when the server cannot start, and prints its log when
// the test failed. It is apart from testenv so that what starts servers
// outside tests does not link package testing.
package dbtest

import (
	"context"
	"sync"
	"testing"

	"github.com/seqd/seqd/internal/clockstep"
	"github.com/seqd/seqd/testenv"
)

// StartT starts a database server for a test and stops it (removing its
// directory) at cleanup.
func StartT(t testing.TB, opts testenv.DBOptions) *testenv.DB {
	t.Helper()
	clockstep.Watch()
	d, err := testenv.StartDB(context.Background(), opts)
	if err != nil {
		t.Fatalf("start %s: %v", opts.Kind, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", opts.Kind, d.Logs())
		}
		d.Stop()
	})
	return d
}

// Lazy is one server per package, started by the first test that asks and
// stopped by Close in TestMain.
type Lazy struct {
	Options testenv.DBOptions

	once sync.Once
	d    *testenv.DB
	err  error
}

// Get returns the shared server, starting it on first use; it fails the
// test if the server cannot be started.
func (l *Lazy) Get(t testing.TB) *testenv.DB {
	t.Helper()
	clockstep.Watch()
	l.once.Do(func() { l.d, l.err = testenv.StartDB(context.Background(), l.Options) })
	if l.err != nil {
		t.Fatalf("start %s: %v", l.Options.Kind, l.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", l.Options.Kind, l.d.Logs())
		}
	})
	return l.d
}

// Close stops the server if one was started.
func (l *Lazy) Close() {
	if l.d != nil {
		l.d.Stop()
	}
}

package bench

import (
	"context"
	"testing"
	"time"
)

// The session case's clients contend on one ZooKeeper session, as the
// daemon's callers do; the zklock case's each on a session of its own.
// Each client holds its lock while the owners of the lock nodes' children
// are read.
func TestSessionCaseSharesOneSession(t *testing.T) {
	servers := sharedZK.Get(t).Servers()
	conn := zkConn(t, servers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		kind     string
		sessions int
	}{
		{KindSession, 1},
		{KindZklock, 3}, // the control: a session each
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var err0 error
			r := newRunner(Config{Servers: servers, Base: "/bench-test-session"}.withDefaults(), tc.kind)
			if r.admin, err0 = r.connect(ctx); err0 != nil { // cleanup closes it
				t.Fatal(err0)
			}
			defer r.cleanup()
			cs, closeAll, err := r.setup(ctx, tc.kind, Group{Clients: 3, Locks: LocksOwn})
			if err != nil {
				t.Fatalf("setup: %v", err)
			}
			defer closeAll()
			owners := map[int64]bool{}
			for w, c := range cs {
				m := c.(zklockCycler).m
				g, err := m.TryAcquire(ctx)
				if err != nil {
					t.Fatalf("client %d: %v", w, err)
				}
				defer g.Release(context.Background())
				kids, _, err := conn.Children(m.Path())
				if err != nil || len(kids) != 1 {
					t.Fatalf("client %d: children of %s %q, %v: want its one contender", w, m.Path(), kids, err)
				}
				_, st, err := conn.Exists(m.Path() + "/" + kids[0])
				if err != nil {
					t.Fatal(err)
				}
				owners[st.EphemeralOwner] = true
			}
			if len(owners) != tc.sessions {
				t.Errorf("3 clients' contenders are owned by %d sessions, want %d", len(owners), tc.sessions)
			}
		})
	}
}

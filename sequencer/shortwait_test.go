package sequencer_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// A blocking read whose wait ends before the daemon has read the state
// (its watch session is dialled on the first blocking read, and closed
// once nothing is watched) answers the state as a plain read would, at
// the plain read's index, not 503: the wait bounds how long it waits for
// a change, and the daemon is healthy. Each kind runs on a daemon of its
// own, whose first blocking read it is.
func TestShortBlockingReadsAnswerTheState(t *testing.T) {
	zkc := sharedZK.Get(t)
	const wait = time.Millisecond
	for _, tc := range []struct {
		kind string
		// read grants, then makes a plain read and a blocking one; each
		// returns what it saw and its index.
		read func(ctx context.Context, t *testing.T, cl *client.Client) (plain, blocking any, plainIdx, blockingIdx uint64)
	}{
		{"lock", func(ctx context.Context, t *testing.T, cl *client.Client) (any, any, uint64, uint64) {
			if _, err := cl.Acquire(ctx, "shortwait/lock", client.Owner("a")); err != nil {
				t.Fatal(err)
			}
			p, err := cl.Status(ctx, "shortwait/lock")
			if err != nil {
				t.Fatal(err)
			}
			b, err := cl.WaitStatus(ctx, "shortwait/lock", p.Index, wait)
			if err != nil {
				t.Fatalf("a blocking read of %v on a healthy daemon: %v", wait, err)
			}
			return [3]any{p.Held, p.Token, len(p.Holding)}, [3]any{b.Held, b.Token, len(b.Holding)}, p.Index, b.Index
		}},
		{"semaphore", func(ctx context.Context, t *testing.T, cl *client.Client) (any, any, uint64, uint64) {
			if _, err := cl.AcquireSemaphore(ctx, "shortwait/sem", 3, client.Owner("a")); err != nil {
				t.Fatal(err)
			}
			p, err := cl.SemaphoreStatus(ctx, "shortwait/sem")
			if err != nil {
				t.Fatal(err)
			}
			b, err := cl.WaitSemaphore(ctx, "shortwait/sem", p.Index, wait)
			if err != nil {
				t.Fatalf("a blocking read of %v on a healthy daemon: %v", wait, err)
			}
			return [2]int{p.Holders, p.Limit}, [2]int{b.Holders, b.Limit}, p.Index, b.Index
		}},
		{"election", func(ctx context.Context, t *testing.T, cl *client.Client) (any, any, uint64, uint64) {
			if _, err := cl.AcquireLeadership(ctx, "shortwait/el", "v", client.Owner("a")); err != nil {
				t.Fatal(err)
			}
			p, err := cl.Election(ctx, "shortwait/el")
			if err != nil {
				t.Fatal(err)
			}
			b, err := cl.WaitElection(ctx, "shortwait/el", p.Index, wait)
			if err != nil {
				t.Fatalf("a blocking read of %v on a healthy daemon: %v", wait, err)
			}
			if p.Leader == nil || b.Leader == nil {
				t.Fatalf("no leader: plain %+v, blocking %+v", p, b)
			}
			return [2]any{p.Leader.Term, p.Candidates}, [2]any{b.Leader.Term, b.Candidates}, p.Index, b.Index
		}},
		{"overview", func(ctx context.Context, t *testing.T, cl *client.Client) (any, any, uint64, uint64) {
			if _, err := cl.Acquire(ctx, "shortwait/ov", client.Owner("a")); err != nil {
				t.Fatal(err)
			}
			p, err := cl.Overview(ctx, api.Locks, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cl.Overview(ctx, api.Locks, p.Index, wait)
			if err != nil {
				t.Fatalf("a blocking overview of %v on a healthy daemon: %v", wait, err)
			}
			view := func(o api.Overview) []string {
				var out []string
				for _, st := range o.Locks {
					if st.Held {
						out = append(out, st.Name)
					}
				}
				return out
			}
			return view(p), view(b), p.Index, b.Index
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			d := startDaemon(t, daemonOpts{servers: zkc.Servers()})
			cl, _ := client.New(d.srv.URL, client.WithoutEnv())
			plain, blocking, pi, bi := tc.read(ctxT(t, time.Minute), t, cl)
			if !reflect.DeepEqual(plain, blocking) || pi != bi {
				t.Errorf("the blocking read answered %v at index %d; the plain read %v at index %d", blocking, bi, plain, pi)
			}
		})
	}
}

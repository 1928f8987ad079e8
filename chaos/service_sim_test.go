package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/clock"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

var serviceSchedules = flag.Int("chaos.service-schedules", 40, "seeded schedules of the real sequencer.Service on a fake clock")

// TestServiceSimulation drives the real sequencer.Service, on a fake clock
// and a real ZooKeeper, through seeded schedules of grants, reads, writes,
// renewals, releases and client pauses (the clock jumps 0.5–3× the TTL),
// against a store fenced by fence.Fence. One step at a time: after the
// clock moves, the schedule waits until every lease whose TTL has passed is
// gone from the Service and from ZooKeeper, so a seed gives the same
// sequence of events (the tokens' values differ, their order does not).
// With the fence off, the same schedules must lose adds.
func TestServiceSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("needs ZooKeeper")
	}
	seed := chaosSeed(t)
	zk := zktest.StartT(t, testenv.Options{})
	for _, fenced := range []bool{true, false} {
		name := "fenced"
		if !fenced {
			name = "control-unfenced"
		}
		t.Run(name, func(t *testing.T) {
			failed, ops, pauses, expiries := 0, 0, 0, 0
			for i := 0; i < *serviceSchedules; i++ {
				s := uint64(i) + seed
				h, st := serviceSchedule(t, zk.Servers(), s, fenced)
				ops += len(h)
				pauses += st.Pauses
				expiries += st.Expiries
				rep := Check(h, nil)
				if v := rep.Violations(); len(v) > 0 {
					failed++
					if fenced {
						t.Errorf("schedule %d: %v", s, v[0])
					}
				}
			}
			t.Logf("%s: %d schedules of the real Service, %d operations, %d pauses, %d expiries; %d schedules with violations",
				name, *serviceSchedules, ops, pauses, expiries, failed)
			if pauses == 0 || expiries == 0 {
				t.Errorf("the schedules exercised no pause or no expiry")
			}
			if !fenced && failed == 0 {
				t.Errorf("without the fence no schedule failed a checker")
			}
		})
	}
}

type svcClient struct {
	lease   *api.Lease
	read    []int
	hasRead bool
	iter    int
}

func serviceSchedule(t *testing.T, servers []string, seed uint64, fenced bool) ([]Op, SimStats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := rand.New(rand.NewPCG(seed, 0x5e7c))
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	svc := sequencer.New(sequencer.Config{
		Servers:        servers,
		Root:           fmt.Sprintf("/chaos-svc/%d-%v", seed, fenced),
		SessionTimeout: 30 * time.Second,
		Clock:          fake,
		DialTimeout:    30 * time.Second,
	})
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	defer svc.Close(context.Background())

	const name = "set"
	ttl := time.Duration(1+r.IntN(5)) * time.Second
	guard := fence.New(nil)
	var set []int
	var ops []Op
	var st SimStats
	var tick int64
	live := map[string]*api.Lease{} // leases handed out and not yet seen to end
	record := func(op Op) {
		tick++
		op.Invoke = tick
		tick++
		op.Complete = tick
		op.ID = len(ops) + 1
		ops = append(ops, op)
	}
	// settle waits until every lease whose TTL has passed has ended, in the
	// Service and in ZooKeeper.
	settle := func() {
		now := fake.Now()
		for id, l := range live {
			if now.Before(l.ExpiresAt) {
				continue
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				// A listing names no lease ids: the token tells the lease.
				gone := !slices.ContainsFunc(svc.Leases(context.Background(), api.Locks), func(x api.Lease) bool { return x.Token == l.Token })
				var stt api.LockStatus
				var err error
				if gone {
					stt, err = svc.Status(ctx, name)
					if err == nil && (!stt.Held || stt.Token != l.Token) {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("seed %d: lease %s (token %d, expires %v, fake now %v) still held 20s after its TTL passed on the fake clock: gone from the Service %v, status %+v, %v; timers pending %d",
						seed, id, l.Token, l.ExpiresAt, fake.Now(), gone, stt, err, fake.Pending())
				}
				time.Sleep(5 * time.Millisecond) // polling a condition, not ordering
			}
			st.Expiries++
			delete(live, id)
		}
	}
	// Before the clock moves, the Service must have armed its one expiry
	// timer (for the earliest lease), and the session its heartbeat and
	// its deadline watch (which tells every grant): a timer armed after a
	// jump would see the jump late.
	advance := func(d time.Duration) {
		n := len(svc.Leases(context.Background(), api.Locks))
		want := 2 + min(n, 1)
		quiet := make(chan struct{})
		tm := time.AfterFunc(5*time.Second, func() { close(quiet) })
		if !fake.WaitPending(want, quiet) {
			t.Logf("seed %d: only %d of %d timers armed after 5s; advancing anyway", seed, fake.Pending(), want)
		}
		tm.Stop()
		fake.Advance(d)
		settle()
	}
	read := func(p int, c *svcClient, final bool) {
		op := Op{Process: p, Kind: KindRead, Token: c.lease.Token, Grant: c.lease.LeaseID, Final: final}
		if err := guard.Admit(name, c.lease.Token); err != nil && fenced {
			op.Result = ResultStale
		} else {
			op.Result, op.Value = ResultOK, append([]int{}, set...)
			c.read, c.hasRead = op.Value, true
		}
		record(op)
	}
	acquire := func(p int, c *svcClient) {
		c.iter++
		op := Op{Process: p, Kind: KindAcquire, Daemon: "svc"}
		d := api.Duration(ttl)
		l, err := svc.Acquire(ctx, name, api.AcquireRequest{Owner: fmt.Sprintf("c%d-%d", p, c.iter), TTL: &d})
		switch {
		case err == nil:
			op.Result, op.Token, op.Grant = ResultOK, l.Token, l.LeaseID
			c.lease, c.hasRead = &l, false
			live[l.LeaseID] = &l
		case errors.Is(err, api.ErrHeld):
			op.Result = ResultFail
		default:
			t.Fatalf("seed %d: acquire: %v", seed, err)
		}
		record(op)
	}

	clients := make([]*svcClient, 3)
	for i := range clients {
		clients[i] = &svcClient{}
	}
	for step := 0; step < 40; step++ {
		p := r.IntN(len(clients))
		c := clients[p]
		switch {
		case c.lease == nil:
			acquire(p, c)
		case !c.hasRead:
			read(p, c, false)
		default:
			switch x := r.IntN(10); {
			case x < 2: // the client pauses: 0.5–3× the TTL
				st.Pauses++
				advance(ttl/2 + time.Duration(r.Int64N(int64(5*ttl/2))))
			case x < 4:
				if l, err := svc.Renew(ctx, api.Locks, name, api.LeaseRequest{LeaseID: c.lease.LeaseID, Token: c.lease.Token}); err == nil {
					st.Renewals++
					live[l.LeaseID] = &l
				}
			default: // write, then release
				c.iter++
				x := (p+1)*1_000_000 + c.iter
				v := append(append([]int{}, c.read...), x)
				op := Op{Process: p, Kind: KindWrite, Token: c.lease.Token, Grant: c.lease.LeaseID, Value: v, Add: x}
				if err := guard.Admit(name, c.lease.Token); err != nil && fenced {
					op.Result = ResultStale
				} else {
					op.Result, set = ResultOK, v
				}
				record(op)
				res := ResultOK
				if err := svc.Release(ctx, api.Locks, name, api.LeaseRequest{LeaseID: c.lease.LeaseID, Token: c.lease.Token}); err != nil {
					res = ResultFail
				} else {
					delete(live, c.lease.LeaseID)
				}
				record(Op{Process: p, Kind: KindRelease, Token: c.lease.Token, Grant: c.lease.LeaseID, Result: res})
				c.lease = nil
			}
		}
		if r.IntN(4) == 0 { // time passes for everyone
			advance(time.Duration(r.Int64N(int64(ttl / 2))))
		}
	}
	// Let every lease run out, then the closing read through a grant of
	// its own.
	advance(3 * ttl)
	fc := &svcClient{}
	acquire(len(clients), fc)
	if fc.lease == nil {
		t.Fatalf("seed %d: the final acquire was refused with every lease expired", seed)
	}
	read(len(clients), fc, true)
	return ops, st
}

package chaos

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	seqdclient "github.com/seqd/seqd/client"

	"github.com/seqd/seqd/testenv"
)

var partitionFlag = flag.Duration("chaos.partition", 30*time.Second, "length of the real-process run under network partitions")

// Network faults of the partition runs. Each is applied through the
// proxies between the daemons and the members and between the members, and
// healed before the next one starts.
const (
	// The daemon through which a workload lock is held is cut from the
	// ZooKeeper majority: from every member, or from two of them with the
	// third cut from the other two (the daemon and one member form a
	// minority). Its clients still reach it.
	faultHolderCut = "holder-cut"
	// The ZooKeeper leader is cut from both followers, and half of the time
	// from the daemons too.
	faultLeaderIsolate = "zk-leader-isolate"
	// One direction is dropped, the other forwarded: between a daemon and
	// the member its session is on, or between two members.
	faultOneWay = "one-way"
	// Every chunk is delayed on some links: one daemon's, one pair of
	// members', or all of them.
	faultDelay = "delay"
)

var partitionFaults = []string{faultHolderCut, faultLeaderIsolate, faultOneWay, faultDelay}

// Link-level counts, reported next to the faults.
const (
	countLinkCut    = "links-cut"
	countLinkOneWay = "links-one-way"
	countLinkDelay  = "links-delayed"
)

// Fault lengths of the partition runs: from half a session timeout (the
// session survives) to 2.5 (it expires, its leases and contenders go).
const (
	partitionMin = chaosSessionTimeout / 2
	partitionMax = 5 * chaosSessionTimeout / 2
)

// partitionSchedule: each network fault alone, then all of them mixed with
// pauses, kills and leader failover, two at a time.
func partitionSchedule(total time.Duration) []phase {
	ps := schedule(total, partitionFaults)
	last := &ps[len(ps)-1]
	last.kinds = append(append([]string(nil), partitionFaults...), faultClientPause, faultDaemonPause, faultDaemonKill, faultZKLeaderKill)
	return ps
}

// partitionLocks is the workload of the partition runs: three locks, two
// keys each.
func partitionLocks(name string) []LockKeys {
	var lks []LockKeys
	for l := 0; l < 3; l++ {
		lk := LockKeys{Lock: fmt.Sprintf("chaos/%s/l%d", name, l)}
		for k := 0; k < 2; k++ {
			lk.Keys = append(lk.Keys, fmt.Sprintf("%s-l%d-k%d", name, l, k))
		}
		lks = append(lks, lk)
	}
	return lks
}

// injectNet applies one network fault of kind and heals it before
// returning. It holds netMu throughout (one network fault at a time: two
// would fight over a proxy's state), and zkMu or seqdMu as the faults on
// members and daemons do, so that no mix of faults takes down the quorum
// or both daemons.
func (in *injector) injectNet(ctx context.Context, kind string) {
	in.netMu.Lock()
	defer in.netMu.Unlock()
	d := in.between(partitionMin, partitionMax)
	zk := in.e.zk
	switch kind {
	case faultHolderCut:
		in.seqdMu.Lock()
		defer in.seqdMu.Unlock()
		di := in.holderDaemon(ctx)
		links := in.e.zkLinks[di]
		var cut []*testenv.Proxy
		if in.intn(2) == 0 {
			cut = links
		} else {
			in.zkMu.Lock()
			defer in.zkMu.Unlock()
			keep := in.intn(len(links)) // the member left in the daemon's minority
			for j, px := range links {
				if j != keep {
					cut = append(cut, px)
				}
			}
			for _, m := range zk.Members {
				if m.ID != keep+1 {
					zk.CutLinks(keep+1, m.ID)
					defer zk.HealLinks(keep+1, m.ID)
					in.countN(countLinkCut, 2)
				}
			}
		}
		for _, px := range cut {
			px.Cut()
			defer px.Pass()
		}
		in.countN(countLinkCut, len(cut))
	case faultLeaderIsolate:
		in.zkMu.Lock()
		defer in.zkMu.Unlock()
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		leader, err := zk.Leader(lctx)
		cancel()
		if err != nil {
			return
		}
		for _, m := range zk.Members {
			if m != leader {
				zk.CutLinks(leader.ID, m.ID)
				defer zk.HealLinks(leader.ID, m.ID)
				in.countN(countLinkCut, 2)
			}
		}
		if in.intn(2) == 0 {
			for _, links := range in.e.zkLinks {
				px := links[leader.ID-1]
				px.Cut()
				defer px.Pass()
				in.countN(countLinkCut, 1)
			}
		}
	case faultOneWay:
		if in.intn(2) == 0 {
			in.seqdMu.Lock()
			defer in.seqdMu.Unlock()
			links := in.e.zkLinks[in.intn(len(in.e.zkLinks))]
			px := links[in.intn(len(links))]
			for _, l := range links { // the member the session is on, if any
				if l.Conns() > 0 {
					px = l
				}
			}
			px.Drop([]testenv.Direction{testenv.ToTarget, testenv.FromTarget}[in.intn(2)])
			defer px.Pass()
			in.countN(countLinkOneWay, 1)
		} else {
			in.zkMu.Lock()
			defer in.zkMu.Unlock()
			a := 1 + in.intn(len(zk.Members))
			b := 1 + (a+in.intn(len(zk.Members)-1))%len(zk.Members)
			zk.DropLinks(a, b)
			defer zk.HealLinks(a, b)
			in.countN(countLinkOneWay, 2)
		}
	case faultDelay:
		lat := in.between(20*time.Millisecond, 250*time.Millisecond)
		var links []*testenv.Proxy
		switch in.intn(3) {
		case 0:
			links = in.e.zkLinks[in.intn(len(in.e.zkLinks))]
		case 1:
			a := 1 + in.intn(len(zk.Members))
			b := 1 + (a+in.intn(len(zk.Members)-1))%len(zk.Members)
			links = []*testenv.Proxy{zk.Link(a, b), zk.Link(b, a)}
		default:
			for _, ls := range in.e.zkLinks {
				links = append(links, ls...)
			}
			for _, a := range zk.Members {
				for _, b := range zk.Members {
					if a != b {
						links = append(links, zk.Link(a.ID, b.ID))
					}
				}
			}
		}
		for _, px := range links {
			px.Delay(lat)
			defer px.Pass()
		}
		in.countN(countLinkDelay, len(links))
	}
	in.count(kind)
	hold(ctx, d)
}

func (in *injector) countN(kind string, n int) {
	in.mu.Lock()
	in.counts[kind] += n
	in.mu.Unlock()
}

// holderDaemon returns the index of a daemon through which one of the
// run's locks is held, or of a daemon drawn at random when none is.
func (in *injector) holderDaemon(ctx context.Context) int {
	locks := map[string]bool{in.r.lock: true}
	for _, lk := range in.r.locks {
		locks[lk.Lock] = true
	}
	var holders []int
	for i, u := range in.e.urls {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		var leases []api.Lease
		c, err := seqdclient.New(u, seqdclient.WithoutEnv())
		if err == nil {
			leases, err = c.Leases(lctx, api.Locks)
		}
		cancel()
		for _, l := range leases {
			if err == nil && locks[l.Name] {
				holders = append(holders, i)
				break
			}
		}
	}
	if len(holders) == 0 {
		return in.intn(len(in.e.urls))
	}
	return holders[in.intn(len(holders))]
}

// stallBound is how long the partition runs may go without any client
// completing an operation. A fault can stop everything while it lasts (the
// leader isolated before the followers elect another; both faults of the
// mixed phase at once), so the bound starts from parallel times the longest
// fault. After the heal, the ZooKeeper session of a lost holder can take one
// session timeout to expire, its lease one TTL to run out, and a client call
// that was in flight its full acquire wait plus its timeout before it gives
// up and tries again.
func stallBound(parallel int, clientTimeout time.Duration) time.Duration {
	return time.Duration(parallel)*partitionMax + chaosSessionTimeout + chaosTTL + chaosTTL + clientTimeout
}

// TestPartition is the lock-set workload under network partitions, with
// several locks and keys and renewed leases: no violation allowed, and the
// longest stretch with no completed operation bounded. Its negative control
// runs the holder cut against a store without fencing and must fail.
func TestPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process chaos: not in -short")
	}
	seed := chaosSeed(t)
	e := startEnvWith(t, true)

	t.Run("fenced", func(t *testing.T) {
		store := e.startStore("partition", FenceFull)
		r := e.newRun("partition", store)
		r.locks, r.renew = partitionLocks("partition"), true
		r.think = 3 * chaosTTL / 2 // can outlast the TTL: the lease lives on renewals
		phases := partitionSchedule(*partitionFlag)
		start := time.Now()
		rep, faults, stall := r.executeStall(t, seed, *partitionFlag, phases)
		ran := 0
		for _, k := range partitionFaults {
			ran += faults[k]
		}
		bound := stallBound(2, 4*time.Second)
		t.Logf("partition run, seed %d, %v:\n%s%s", seed, time.Since(start).Round(time.Second), rep.Table(), faultTable(faults))
		t.Logf("partition schedules run %d: cuts %d, one-way drops %d, delays %d (links); longest stall %v = %.1fx the session timeout (bound %v); violations %d",
			ran, faults[countLinkCut], faults[countLinkOneWay], faults[countLinkDelay],
			stall.Round(time.Millisecond), float64(stall)/float64(chaosSessionTimeout), bound, len(rep.Violations()))
		if rep.Counts[KindWrite][ResultOK] == 0 || rep.Counts[KindRenew][ResultOK] == 0 {
			t.Errorf("the workload made no progress or never renewed: %v", rep.Counts)
		}
		if ran == 0 {
			t.Error("no partition was injected")
		}
		if stall > bound {
			t.Errorf("longest stall %v, want at most %v", stall, bound)
		}
		if v := rep.Violations(); len(v) > 0 {
			for _, x := range v {
				t.Errorf("violation: %v", x)
			}
			r.save(t, rep)
		}
	})

	t.Run("control-fence-off", func(t *testing.T) {
		// A cut holder's clients keep writing while the lock passes to a
		// client of the other daemon; without the fence, their writes must
		// be caught as lost adds or stale acceptances. The race needs a
		// write to land in the other holder's read-modify-write, so the
		// control gets a few attempts, each on a fresh store and seed.
		const attempts = 4
		for attempt := 0; attempt < attempts; attempt++ {
			name := fmt.Sprintf("partition-control-%d", attempt)
			r := e.newRun(name, e.startStore(name, FenceOff))
			// One lock, one key, and sleeps that outlast a session timeout:
			// the cut holder's write comes late, after the next holder's read.
			lk := partitionLocks(name)[0]
			r.locks, r.renew = []LockKeys{{Lock: lk.Lock, Keys: lk.Keys[:1]}}, true
			r.think, r.wait = 3*chaosTTL, chaosTTL/4
			s := seed + uint64(attempt)
			phases := []phase{{name: faultHolderCut, kinds: []string{faultHolderCut}, d: *controlFlag, parallel: 1}}
			rep, faults, _ := r.executeStall(t, s, *controlFlag, phases)
			t.Logf("%s, seed %d:\n%s%s", name, s, rep.Table(), faultTable(faults))
			bc := rep.ByChecker()
			if bc["adds"]+bc["linearizable"] > 0 {
				for i, v := range rep.Violations() {
					if i == 3 {
						break
					}
					t.Logf("caught (as it must be) on attempt %d: %v", attempt+1, v)
				}
				return
			}
			t.Logf("attempt %d found no violation (%v)", attempt+1, bc)
		}
		t.Errorf("the unfenced store under holder cuts: no violation in %d attempts, want lost adds or stale acceptances", attempts)
	})
}

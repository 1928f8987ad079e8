package chaos

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var simSchedules = flag.Int("chaos.schedules", 4000, "simulated schedules per fence mode")

// simRun runs n schedules from seed on cfg and counts the schedules in which
// each checker found a violation.
func simRun(t *testing.T, seed uint64, n int, cfg SimConfig) (failed map[string]int, ops, stale int, stats SimStats, first string) {
	t.Helper()
	failed = map[string]int{}
	for i := 0; i < n; i++ {
		c := cfg
		c.Seed = seed + uint64(i)
		h, st := Simulate(c)
		ops += len(h)
		stats.Pauses += st.Pauses
		stats.Delays += st.Delays
		stats.SessionLosses += st.SessionLosses
		stats.Expiries += st.Expiries
		stats.Handoffs += st.Handoffs
		stats.Renewals += st.Renewals
		r := Check(h, nil)
		stale += r.Counts[KindRead][ResultStale] + r.Counts[KindWrite][ResultStale]
		for k, v := range r.ByChecker() {
			if v > 0 {
				failed[k]++
				if first == "" {
					first = fmt.Sprintf("seed %d: %v", c.Seed, r.Violations()[0])
				}
			}
		}
	}
	return failed, ops, stale, stats, first
}

func TestSimulation(t *testing.T) {
	seed := chaosSeed(t)
	start := time.Now()
	failed, ops, stale, st, first := simRun(t, seed, *simSchedules, SimConfig{})
	t.Logf("simulation: %d schedules from seed %d, %d operations (%d refused as stale), %d pauses, %d delayed writes, %d session losses, %d expiries, %d hand-offs, %d renewals in %v",
		*simSchedules, seed, ops, stale, st.Pauses, st.Delays, st.SessionLosses, st.Expiries, st.Handoffs, st.Renewals, time.Since(start).Round(time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("violations with full fencing: schedules failed per checker %v; first: %s", failed, first)
	}
	if st.Expiries == 0 || st.Handoffs == 0 || st.SessionLosses == 0 || st.Pauses == 0 {
		t.Errorf("the schedules exercised too little: %+v", st)
	}
}

// TestSimulationNegativeControls: each broken setting must make a checker
// fail in some schedules, and the one named must be among them.
func TestSimulationNegativeControls(t *testing.T) {
	seed := chaosSeed(t)
	n := *simSchedules / 4
	for _, tc := range []struct {
		name string
		cfg  SimConfig
		want []string
	}{
		{"fence-off", SimConfig{Fence: FenceOff}, []string{"adds", "linearizable"}},
		{"fence-writes", SimConfig{Fence: FenceWrites}, []string{"linearizable"}},
		{"cached-token", SimConfig{CachedToken: true}, []string{"tokens", "linearizable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed, ops, _, _, first := simRun(t, seed, n, tc.cfg)
			t.Logf("%s: %d schedules, %d operations; schedules failed per checker %v; first: %s", tc.name, n, ops, failed, first)
			for _, c := range tc.want {
				if failed[c] == 0 {
					t.Errorf("%s: checker %s found nothing in %d schedules", tc.name, c, n)
				}
			}
		})
	}
}

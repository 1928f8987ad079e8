package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLabelsFollowTheLocksInUse: with the label set full, a new name is
// counted under _other while the others are in use, and takes the place of
// one (whose series go) once that one has been idle for LabelIdle.
func TestLabelsFollowTheLocksInUse(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, Options{MaxLockLabels: 2})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.labels.now = func() time.Time { return now }
	series := func() []string {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, mf := range mfs {
			if mf.GetName() != "seqd_grants_total" {
				continue
			}
			for _, mm := range mf.GetMetric() {
				out = append(out, fmt.Sprintf("%s=%v", mm.GetLabel()[0].GetValue(), mm.GetCounter().GetValue()))
			}
		}
		sort.Strings(out)
		return out
	}
	m.Granted("a", 0)
	m.Granted("b", 0)
	m.Granted("c", 0) // a and b are in use: c has no room
	if got, want := series(), []string{"_other=1", "a=1", "b=1"}; !slices.Equal(got, want) {
		t.Fatalf("grants = %v, want %v", got, want)
	}
	now = now.Add(LabelIdle / 2)
	m.Granted("b", 0)
	now = now.Add(LabelIdle / 2) // a idle for LabelIdle, b for half of it
	m.Granted("c", 0)
	if got, want := series(), []string{"_other=1", "b=2", "c=1"}; !slices.Equal(got, want) {
		t.Fatalf("grants after a went idle = %v, want %v", got, want)
	}
	m.Granted("d", 0) // b is not idle long enough
	if got, want := series(), []string{"_other=2", "b=2", "c=1"}; !slices.Equal(got, want) {
		t.Fatalf("grants = %v, want %v", got, want)
	}
}

// TestNoLockLabels: a negative cap keeps every lock name out of the metrics.
func TestNoLockLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, Options{MaxLockLabels: -1})
	m.Granted("secret/name", 0)
	m.StaleRejected("secret/other", SourceCheck)
	const want = `
# HELP seqd_grants_total Lock grants, each with a new and higher fencing token.
# TYPE seqd_grants_total counter
seqd_grants_total{lock="_other"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "seqd_grants_total"); err != nil {
		t.Error(err)
	}
}

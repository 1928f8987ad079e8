package sequencer

import (
	"testing"

	"github.com/seqd/seqd/api"
)

// An overview read plainly and one read through watches that have each
// state as first read (its index ZooKeeper's) have the same index, so that
// a blocking overview answered with the plain one does not wake its next
// reader for nothing; a state's index that differs makes them differ.
func TestPlainIndexIsTheWatchedIndex(t *testing.T) {
	names := []string{"a", "b/c", "d"}
	idx := []uint64{7, 12, 3}
	o := api.Overview{}
	var ws []*watched
	for i, n := range names {
		o.Locks = append(o.Locks, api.LockStatus{Name: n, Index: idx[i]})
		ws = append(ws, &watched{have: true, index: idx[i], changed: make(chan struct{})})
	}
	watchedIdx, ready, _ := overviewIndex(names, ws)
	if !ready {
		t.Fatal("every state was read, yet overviewIndex says not ready")
	}
	if got := plainIndex(o); got != watchedIdx {
		t.Errorf("plain index %d, watched index %d: they differ for the same states", got, watchedIdx)
	}
	ws[1].index++
	if again, _, _ := overviewIndex(names, ws); again == plainIndex(o) {
		t.Errorf("a state's index moved, yet the watched index %d is still the plain one", again)
	}
}

package api

import (
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
)

// A 409 held suggests the lease_id retry to a request that tried once (it
// may be an owner retrying its own acquire), not to one whose wait ran out:
// that one says how long it waited instead.
func TestHeldSuggestsTheRetryOnlyWhereItApplies(t *testing.T) {
	for _, kind := range []fence.Kind{fence.KindLock, fence.KindShared, fence.KindSemaphore, fence.KindElection} {
		once := (&ConflictError{Err: ErrHeld, Kind: kind, Name: "jobs/a", Limit: 2}).Error()
		if !strings.Contains(once, "lease_id") {
			t.Errorf("%s, tried once: %q does not suggest the lease_id retry", kind, once)
		}
		waited := (&ConflictError{Err: ErrHeld, Kind: kind, Name: "jobs/a", Limit: 2, Waited: 30 * time.Second}).Error()
		if strings.Contains(waited, "lease_id") || !strings.Contains(waited, "30s") {
			t.Errorf("%s, after a 30s wait: %q, want how long it waited and no lease_id retry", kind, waited)
		}
	}
}

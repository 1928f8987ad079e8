package api

import (
	"strings"
	"time"
)

// The wire types of the multilocks family.

// MaxMultiLocks is the most locks one multi-lock acquire names.
const MaxMultiLocks = 64

// MultiAcquireRequest is the body of POST /v1/multilocks/acquire: several
// exclusive locks at once, all or nothing. The daemon creates a contender
// in every lock in one ZooKeeper transaction, so that no two multi-lock
// acquirers (and no single-lock one) can deadlock, whatever sets they ask
// for; the lease is granted once every lock is.
type MultiAcquireRequest struct {
	// Names ("names", required) are 1 to MaxMultiLocks distinct lock names.
	// The lease lists its locks in this order.
	Names []string `json:"names"`
	// Owner ("owner", required), TTL ("ttl") and Wait ("wait") are as for a
	// lock's acquire; the wait is for every lock of the set.
	Owner string    `json:"owner"`
	TTL   *Duration `json:"ttl,omitempty"`
	Wait  *Duration `json:"wait,omitempty"`
	// LeaseID ("lease_id", optional) makes the acquire idempotent, as for a
	// lock: a retry returns the live lease only if it repeats the request,
	// names in the same order included; any difference is a 400 naming the
	// field.
	LeaseID string `json:"lease_id,omitempty"`
	// LockDelay ("lock_delay", optional) is every lock's lock-delay, as for
	// a lock's acquire.
	LockDelay *Duration `json:"lock_delay,omitempty"`
}

// LockToken is one lock of a MultiLease.
type LockToken struct {
	// Name ("name") is the lock's name.
	Name string `json:"name"`
	// Token ("token") is the lock's fencing token: higher than every token
	// granted before on that lock. With zxid tokens every lock of one lease
	// has the same token.
	Token uint64 `json:"token"`
	// Sequencer ("sequencer") is the lock's own exclusive sequencer,
	// "<name>@<token>" (signed on a daemon that signs): it fences that
	// lock's resource, as a single lock's does.
	Sequencer string `json:"sequencer"`
}

// MultiLease is a multi-lock's grant: the answer of acquire and renew
// under /v1/multilocks/, and an entry of MultiLeaseList.
type MultiLease struct {
	// Locks ("locks") are the lease's locks, in the order the acquire
	// named them.
	Locks []LockToken `json:"locks"`
	// LeaseID ("lease_id"), Owner ("owner"), TTL ("ttl") and ExpiresAt
	// ("expires_at") are as in Lease. The lease is one: renewed, released,
	// expired or lost for every lock at once.
	LeaseID   string    `json:"lease_id,omitempty"`
	Owner     string    `json:"owner"`
	TTL       Duration  `json:"ttl"`
	ExpiresAt time.Time `json:"expires_at"`
}

// LockRef names one lock of a multi-lock lease with its token.
type LockRef struct {
	Name  string `json:"name"`
	Token uint64 `json:"token"`
}

// MultiLeaseRequest is the body of POST /v1/multilocks/renew and
// /v1/multilocks/release.
type MultiLeaseRequest struct {
	// LeaseID ("lease_id", required) is the MultiLease's LeaseID.
	LeaseID string `json:"lease_id"`
	// Locks ("locks", required) are the lease's locks with their tokens, in
	// the lease's order. A token below its lock's current one is a 409
	// stale_token naming the lock.
	Locks []LockRef `json:"locks"`
	// TTL ("ttl", renew only) as in LeaseRequest.
	TTL *Duration `json:"ttl,omitempty"`
}

// MultiLockStatus is the answer of GET /v1/multilocks/{lease_id}: a live
// multi-lock lease of this daemon, as its holder sees it.
type MultiLockStatus struct {
	MultiLease
	// SafeForMS ("safe_for_ms") as in LockStatus.
	SafeForMS int64 `json:"safe_for_ms"`
	// Index ("index") changes when the lease is renewed or ends; send it
	// back as ?index= to wait for that.
	Index uint64 `json:"index"`
}

// MultiLeaseList is the answer of GET /v1/multilocks: the live multi-lock
// leases held through this daemon, without lease ids or signed
// sequencers.
type MultiLeaseList struct {
	MultiLocks []MultiLease `json:"multilocks"`
}

// Refs are the lease's locks with their tokens, as a renew or a release
// names them.
func (l MultiLease) Refs() []LockRef {
	refs := make([]LockRef, len(l.Locks))
	for i, lk := range l.Locks {
		refs[i] = LockRef{Name: lk.Name, Token: lk.Token}
	}
	return refs
}

// Sequencers are the lease's sequencers separated by spaces, in its
// order, as `seqd lock A B -- CMD` gives them to CMD in SEQD_SEQUENCERS.
func (l MultiLease) Sequencers() string {
	seqs := make([]string, len(l.Locks))
	for i, lk := range l.Locks {
		seqs[i] = lk.Sequencer
	}
	return strings.Join(seqs, " ")
}

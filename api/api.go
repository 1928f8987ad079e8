package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// The wire types of the HTTP API, one definition that the daemon and the
// clients share. Every body is JSON. Three families of leases share one
// shape of endpoints, with the family's name in the path:
//
//	family       grant action   renew   end action   extra
//	locks        acquire        renew   release
//	semaphores   acquire        renew   release
//	elections    campaign       renew   resign       proclaim
//	multilocks   acquire        renew   release      (no name in the path)
//
//	POST /v1/{family}/{name}/{action}   body per action → 200
//	POST /v1/{family}/{name}/break      BreakRequest (admin token) → 200 BreakResponse
//	GET  /v1/{family}/{name}[?index=I&wait=D]           → 200 status
//	GET  /v1/{family}                                   → 200 LeaseList
//	GET  /v1/{family}?all=1[&index=I&wait=D]            → 200 Overview
//	POST /v1/multilocks/{action}        MultiAcquireRequest or MultiLeaseRequest → 200
//	GET  /v1/multilocks/{lease_id}[?index=I&wait=D]     → 200 MultiLockStatus
//	GET  /v1/multilocks                                 → 200 MultiLeaseList
//	POST /v1/check   CheckRequest     → 200 or 409 CheckResponse
//	POST /v1/renew   RenewManyRequest → 200 RenewManyResponse
//	GET  /healthz, /readyz            → 200 ProbeResponse
//
// The bodies: AcquireRequest (locks), SemaphoreAcquireRequest, and
// CampaignRequest grant a Lease; LeaseRequest renews (→ Lease) and ends
// (→ ReleaseResponse) one of any family; ProclaimRequest changes a
// leader's value. The status reads answer LockStatus, SemaphoreStatus and
// ElectionStatus. Every other failure is an ErrorBody with one of the Code*
// constants.
//
// Every GET of a status takes the same query: ?index=I makes it a blocking
// read that answers as soon as the state's index differs from I, or once
// wait (default DefaultBlockingWait, at most MaxWait) has passed, with the
// same state. The index is opaque (compare it, do not compute with it); it
// is in the body and in the X-Seqd-Index header of every such GET.
// A name is a path of segments of [A-Za-z0-9._-] joined by "/", at most
// 256 bytes; in a URL each segment is path-escaped.

// Limits on the durations of a request.
const (
	// DefaultTTL is the TTL of an acquire that sends none.
	DefaultTTL = 15 * time.Second
	// MinTTL and MaxTTL bound a lease's TTL, on acquire and on renew.
	MinTTL = time.Second
	MaxTTL = time.Hour
	// MaxWait bounds how long an acquire may wait; 0 tries once.
	MaxWait = 10 * time.Minute
	// MaxLockDelay bounds an acquire's lock_delay.
	MaxLockDelay = time.Minute
)

// The renewal cadence every client keeps.
const (
	// RenewDivisor: a holder renews its lease every TTL/RenewDivisor, so
	// that two renewals can fail before the lease's deadline. Every client
	// renews at this cadence (a conformance vector fails one that has not
	// renewed by half the TTL).
	RenewDivisor = 3
	// RetryDivisor: after a renewal that did not reach the daemon, a holder
	// retries every (TTL/RenewDivisor)/RetryDivisor until its deadline.
	RetryDivisor = 4
)

// RenewInterval is how often a holder renews a lease of ttl, and
// RetryInterval how often it retries a renewal that did not reach the
// daemon.
func RenewInterval(ttl time.Duration) time.Duration { return ttl / RenewDivisor }
func RetryInterval(ttl time.Duration) time.Duration { return RenewInterval(ttl) / RetryDivisor }

// MaxSemaphoreLimit bounds a semaphore's limit.
const MaxSemaphoreLimit = 1 << 16

// DefaultBlockingWait is how long a blocking read waits when it names no
// wait.
const DefaultBlockingWait = 5 * time.Minute

// IndexHeader carries the state's index on every GET of a lock's or an
// election's state.
const IndexHeader = "X-Seqd-Index"

// MaxNameBytes bounds a name (of a lock, a semaphore or an election).
const MaxNameBytes = 256

// MaxOwnerBytes bounds a grant's owner.
const MaxOwnerBytes = 256

// MaxValueBytes bounds a candidate's value.
const MaxValueBytes = 4096

// MaxBodyBytes is the largest request body accepted; a larger one is a 400
// bad_request.
const MaxBodyBytes = 64 << 10

// AcquireRequest is the body of POST /v1/locks/{name}/acquire.
type AcquireRequest struct {
	// Owner ("owner", required) names who is asking, e.g. host:pid; at most
	// 256 bytes. It is shown to anyone who asks the lock's status: it is a
	// label, not a proof.
	Owner string `json:"owner"`
	// LeaseID ("lease_id", optional, 32 lowercase hex digits) makes the
	// acquire idempotent: if it is a live lease of this daemon, that lease
	// comes back with the same token, its TTL extended, provided every
	// other field the request gives (owner, mode, lock_delay) equals the
	// lease's: a difference is a 400 naming the field, and changes nothing.
	// Otherwise a new lease is granted under this id, so that a retry
	// after a lost answer finds it. Without it, an acquire of a lock the
	// owner already holds is 409 held like any other. The same rule holds
	// for a semaphore's acquire (limit) and a campaign (value).
	LeaseID string `json:"lease_id,omitempty"`
	// TTL ("ttl", a Duration) is how long the lease lives without renewal:
	// MinTTL..MaxTTL, DefaultTTL when absent; a retry without it keeps the
	// lease's TTL.
	TTL *Duration `json:"ttl,omitempty"`
	// Wait ("wait", a Duration) is how long to wait for the lock before a
	// 409 held: 0..MaxWait; absent or "0s" tries once.
	Wait *Duration `json:"wait,omitempty"`
	// LockDelay ("lock_delay", a Duration, optional) is how long, after
	// this lease ends uncleanly (its TTL passed, the daemon lost its
	// ZooKeeper session, its node was deleted by someone else), nobody is
	// granted the lock, on any daemon: 0..MaxLockDelay; absent takes the
	// daemon's --lock-delay. A release hands over at once.
	LockDelay *Duration `json:"lock_delay,omitempty"`
	// Mode ("mode", optional) is "exclusive" (the default) or "shared": a
	// shared lease (a reader) holds the lock together with other shared
	// ones and excludes exclusive ones, FIFO between them. A shared lease's
	// token is above every exclusive token granted before it and below
	// every one granted after it; a resource fences with it as with any
	// token. A shared lease has no lock_delay.
	Mode string `json:"mode,omitempty"`
}

// Lock modes of an acquire.
const (
	ModeExclusive = "exclusive"
	ModeShared    = "shared"
)

// SemaphoreAcquireRequest is the body of POST
// /v1/semaphores/{name}/acquire. Renew and release take a LeaseRequest, as
// for locks.
type SemaphoreAcquireRequest struct {
	// Owner ("owner", required), LeaseID ("lease_id"), TTL ("ttl") and
	// Wait ("wait") are as for a lock.
	Owner   string    `json:"owner"`
	LeaseID string    `json:"lease_id,omitempty"`
	TTL     *Duration `json:"ttl,omitempty"`
	Wait    *Duration `json:"wait,omitempty"`
	// Limit ("limit", required, 1..MaxSemaphoreLimit) is how many holders
	// the semaphore admits at once. The first acquirer records it in
	// ZooKeeper; an acquire naming another limit while that record stands
	// (while anyone holds or waits) is a 409 limit_mismatch with the
	// recorded limit. A retry with a lease_id may leave it out (0).
	Limit int `json:"limit"`
}

// SemaphoreStatus is the answer of GET /v1/semaphores/{name}, read from
// ZooKeeper, so that it counts holders on every daemon (and Curator's).
type SemaphoreStatus struct {
	// Name ("name") is the semaphore's name.
	Name string `json:"name"`
	// Holders ("holders") counts its holders. An acquirer waiting for a
	// slot has a node of its own meanwhile; it is not counted.
	Holders int `json:"holders"`
	// Limit ("limit") is the limit its holders agreed on (recorded by the
	// first); 0 when nobody holds it.
	Limit int `json:"limit"`
	// Index ("index") as in LockStatus.
	Index uint64 `json:"index"`
	// SafeForMS ("safe_for_ms") as in LockStatus, for a semaphore lease.
	SafeForMS *int64 `json:"safe_for_ms,omitempty"`
	// Holding ("holding") is every holder (a lease node within the
	// limit), oldest first; Queue ("queue") the acquirers waiting for a
	// slot, in order; Unread as in LockStatus.
	Holding []Contender `json:"holding"`
	Queue   []Contender `json:"queue"`
	Unread  int         `json:"unread,omitempty"`
}

// CampaignRequest is the body of POST /v1/elections/{name}/campaign.
type CampaignRequest struct {
	// Owner ("owner", required) names who campaigns, as for an acquire.
	Owner string `json:"owner"`
	// Value ("value", optional, at most MaxValueBytes) is what the leader
	// publishes (an address, a pod name): the candidate node's data.
	// Default the owner.
	Value string `json:"value,omitempty"`
	// LeaseID ("lease_id", optional) makes the campaign idempotent, as for
	// an acquire.
	LeaseID string `json:"lease_id,omitempty"`
	// TTL ("ttl") and Wait ("wait") are as for an acquire: the leadership
	// lease ends when its TTL passes without renewal; wait is how long to
	// wait to be elected before a 409 held (0 tries once).
	TTL  *Duration `json:"ttl,omitempty"`
	Wait *Duration `json:"wait,omitempty"`
}

// ProclaimRequest is the body of POST /v1/elections/{name}/proclaim: the
// leader changes its value, keeping its term.
type ProclaimRequest struct {
	LeaseID string `json:"lease_id"`
	Token   uint64 `json:"token"`
	// Value ("value", at most MaxValueBytes) replaces the leader's value.
	Value string `json:"value"`
}

// LeaseRequest is the body of POST /v1/locks/{name}/renew and
// /v1/locks/{name}/release, and of an election's renew and resign.
type LeaseRequest struct {
	// LeaseID ("lease_id", required) is the Lease's LeaseID.
	LeaseID string `json:"lease_id"`
	// Token ("token", required, > 0) is the Lease's token. A token below
	// the lock's current one is a 409 stale_token.
	Token uint64 `json:"token"`
	// TTL ("ttl", a Duration, renew only) replaces the lease's TTL:
	// MinTTL..MaxTTL; absent keeps it. A release with a ttl is a 400.
	TTL *Duration `json:"ttl,omitempty"`
}

// CheckRequest is the body of POST /v1/check: either Sequencer, or Name and
// Token, not both.
type CheckRequest struct {
	// Sequencer ("sequencer") is "<name>@<token>", as a holder passes it to
	// a resource.
	Sequencer string `json:"sequencer,omitempty"`
	// Name ("name") is the lock's name.
	Name string `json:"name,omitempty"`
	// Token ("token", > 0) is the token to check against Name's holder.
	Token uint64 `json:"token,omitempty"`
}

// Lease is a grant to an owner: the answer of acquire and renew, and an
// entry of LeaseList.
type Lease struct {
	// Name ("name") is the lock's name.
	Name string `json:"name"`
	// Token ("token") is the fencing token: higher for every new grant of
	// the lock, the same across renewals.
	Token uint64 `json:"token"`
	// Sequencer ("sequencer") is "[<kind>:]<name>@<token>", what the holder
	// passes to a resource: the kind is "shared", "semaphore" or "election"
	// (none for an exclusive lock). On a daemon that signs, it carries the
	// signature (".<kid>.<sig>"): a bearer capability that only the
	// holder's own answers carry, never a listing.
	Sequencer string `json:"sequencer"`
	// LeaseID ("lease_id") is 32 hex digits (128 random bits), needed with
	// the token to renew or release: keep it secret. It is absent from
	// listings.
	LeaseID string `json:"lease_id,omitempty"`
	// Owner ("owner") is the owner named at acquire.
	Owner string `json:"owner"`
	// TTL ("ttl", a Duration) is how long the lease lives from its last
	// grant or renewal. A holder renews every TTL/3 (RenewDivisor) and,
	// after a renewal that did not reach the daemon, retries every quarter
	// of that (RetryDivisor) until the lease's deadline.
	TTL Duration `json:"ttl"`
	// ExpiresAt ("expires_at", RFC 3339, UTC) is when the lease ends
	// unless renewed. The lease can end earlier, when the daemon loses its
	// ZooKeeper session: holding is never guaranteed, which is what the
	// token is for.
	ExpiresAt time.Time `json:"expires_at"`
	// Term ("term", elections only) is the leadership's term: the token.
	Term uint64 `json:"term,omitempty"`
	// Limit ("limit") is the semaphore's limit for a semaphore's lease,
	// absent for a lock's.
	Limit int `json:"limit,omitempty"`
	// Mode ("mode") is "shared" for a shared lease, absent for an
	// exclusive one.
	Mode string `json:"mode,omitempty"`
}

// LeaseList is the answer of GET /v1/{family}: the live leases of the
// family held through this daemon, by name, under the family's name:
// {"locks":[…]} (exclusive and shared), {"semaphores":[…]} or
// {"elections":[…]}. A listing gives neither lease ids nor signed
// sequencers (its sequencers are unsigned): whoever can list the leases
// must not be able to act as their holders.
type LeaseList struct {
	Family string  // "locks", "semaphores" or "elections"
	Leases []Lease // [] in JSON when there are none
}

// MarshalJSON writes {"<family>":[…]}.
func (l LeaseList) MarshalJSON() ([]byte, error) {
	leases := l.Leases
	if leases == nil {
		leases = []Lease{}
	}
	return json.Marshal(map[string][]Lease{l.Family: leases})
}

// UnmarshalJSON reads {"<family>":[…]}, one key.
func (l *LeaseList) UnmarshalJSON(b []byte) error {
	var m map[string][]Lease
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m) != 1 {
		return fmt.Errorf("a lease list has one key, the family's, not %d", len(m))
	}
	for k, v := range m {
		l.Family, l.Leases = k, v
	}
	return nil
}

// MaxRenewBatch is the most leases one POST /v1/renew names.
const MaxRenewBatch = 500

// RenewManyRequest is the body of POST /v1/renew: many lock leases renewed
// in one round trip, each as its own renew would be.
type RenewManyRequest struct {
	// Leases ("leases", required, 1 to MaxRenewBatch) are the leases to
	// renew, each a lock's name with its lease_id and token. A malformed
	// entry refuses the whole request (400) and renews nothing.
	Leases []RenewItem `json:"leases"`
	// TTL ("ttl", optional) is every lease's new TTL; without it each
	// keeps its own.
	TTL *Duration `json:"ttl,omitempty"`
}

// RenewItem is one lease of a RenewManyRequest.
type RenewItem struct {
	Name    string `json:"name"`
	LeaseID string `json:"lease_id"`
	Token   uint64 `json:"token"`
}

// RenewManyResponse answers POST /v1/renew: one result per lease, in the
// request's order.
type RenewManyResponse struct {
	Results []RenewResult `json:"results"`
}

// RenewResult is the answer for one lease: Status is the HTTP status its
// own renew would have had (200 with the lease, or 409, 503 … with the
// error's sentence, code and, for a stale token, the current one).
type RenewResult struct {
	Name         string  `json:"name"`
	Status       int     `json:"status"`
	Lease        *Lease  `json:"lease,omitempty"`
	Error        string  `json:"error,omitempty"`
	Code         string  `json:"code,omitempty"`
	CurrentToken *uint64 `json:"current_token,omitempty"`
}

// ReleaseResponse is the answer of a release that ended the lease.
type ReleaseResponse struct {
	// Released ("released") is always true.
	Released bool `json:"released"`
}

// CheckResponse is the answer of POST /v1/check: 200 when the token is the
// current holder's, 409 otherwise.
type CheckResponse struct {
	// Valid ("valid") tells whether the token is the current holder's.
	Valid bool `json:"valid"`
	// CurrentToken ("current_token") is the lock's current token (0 when
	// none is known).
	CurrentToken uint64 `json:"current_token"`
	// Code ("code", 409 only) is CodeStaleToken (the token is below the
	// current one) or CodeNotHeld (it is not, but nobody holds the lock
	// with it).
	Code string `json:"code,omitempty"`
	// Error ("error", 409 only) is a sentence saying why.
	Error string `json:"error,omitempty"`
}

// ProbeResponse is the answer of GET /healthz ({"status":"ok"}: the
// process serves) and of GET /readyz ({"status":"ready"}: its ZooKeeper
// session is connected; otherwise a 503 unavailable).
type ProbeResponse struct {
	Status string `json:"status"`
}

// ErrorBody is every error response but a failed check's.
type ErrorBody struct {
	// Error ("error") is a sentence for people, without Go package
	// prefixes.
	Error string `json:"error"`
	// Code ("code") is one of the Code* constants, for programs.
	Code string `json:"code"`
	// CurrentToken ("current_token", 409 only) is the lock's current token,
	// present where one is known.
	CurrentToken *uint64 `json:"current_token,omitempty"`
	// Limit ("limit", limit_mismatch only) is the semaphore's recorded
	// limit.
	Limit *int `json:"limit,omitempty"`
	// Reason ("reason", broken only) is the reason the break gave.
	Reason string `json:"reason,omitempty"`
}

// The codes of ErrorBody and CheckResponse, with their HTTP status.
const (
	// CodeBadRequest (400): an invalid name, a duration out of range,
	// malformed JSON, an unknown field or a body over MaxBodyBytes.
	CodeBadRequest = "bad_request"
	// CodeHeld (409): not granted within the wait: the lock is held (or in
	// its lock-delay), the semaphore full, the election led by another.
	CodeHeld = "held"
	// CodeLimitMismatch (409): a semaphore acquire named another limit than
	// the one its holders recorded (in the body's limit).
	CodeLimitMismatch = "limit_mismatch"
	// CodeStaleToken (409): the token is below the lock's current one.
	CodeStaleToken = "stale_token"
	// CodeLost (409): the lease has ended (released, expired or lost with
	// the session) and nobody has been granted the lock since.
	CodeLost = "lost"
	// CodeNotHeld (409): a check's token is not below the current one,
	// but nobody holds the lock with it; a break's token (or, without
	// one, anyone) does not hold it now.
	CodeNotHeld = "not_held"
	// CodeBroken (409): the lease was broken by an operator (POST
	// …/break); the body's reason says why. A loss like CodeLost.
	CodeBroken = "broken"
	// CodeForbidden (403): a break without the admin token, or on a daemon
	// that has none; a request the daemon's policy file does not allow the
	// caller (the sentence names the rule, file:line); a request a web page
	// may have sent (another origin, a Host not the daemon's).
	CodeForbidden = "forbidden"
	// CodeQuotaExceeded (429): a grant or renewal beyond the caller's quota
	// in the daemon's policy file (maximum TTL, leases held, waiters,
	// distinct names); the sentence names the quota, file:line. Nothing
	// changed.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeUnavailable (503): ZooKeeper cannot be reached now; try again.
	CodeUnavailable = "unavailable"
	// CodeBadSignature (403, check only): a signed sequencer whose
	// signature does not check with the daemon's keys: seqd did not make it.
	CodeBadSignature = "bad_signature"
	// CodeUnauthorized (401): a missing or wrong bearer token.
	CodeUnauthorized = "unauthorized"
	// CodeNotFound (404): no such endpoint or action.
	CodeNotFound = "not_found"
	// CodeMethod (405): the method is not allowed on the path; the Allow
	// header lists those that are.
	CodeMethod = "method_not_allowed"
	// CodeInternal (500): a bug; the daemon logs it.
	CodeInternal = "internal"
)

// Duration is a time.Duration that marshals as a Go duration string such as
// "15s" or "1m30s"; a JSON number is refused.
type Duration time.Duration

// MarshalJSON writes "15s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string such as "15s" or "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"15s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"15s\"", s)
	}
	*d = Duration(v)
	return nil
}

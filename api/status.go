package api

import "time"

// The wire types of the status reads, the overview and the break.

// LockStatus is the answer of GET /v1/locks/{name}, read from ZooKeeper, so
// that it shows holders on any daemon.
type LockStatus struct {
	// Name ("name") is the lock's name.
	Name string `json:"name"`
	// Held ("held") tells whether anyone holds the lock now.
	Held bool `json:"held"`
	// Token ("token") is the lock's current token; 0 when none is known
	// (nobody holds it, with zxid tokens).
	Token uint64 `json:"token"`
	// Owner ("owner") is the holder's owner: the owner of a lease, or
	// user@host:pid of a `seqd lock` holder; "" when not held or when the
	// holder is neither.
	Owner string `json:"owner"`
	// Command ("command", omitted when empty) is the command a `seqd lock`
	// holder runs under the lock.
	Command string `json:"command,omitempty"`
	// ExpiresAt ("expires_at", RFC 3339 or null) is when the holder's lease
	// ends unless renewed; known only for leases of this daemon (a `seqd
	// lock` holder has no lease: it holds until its command exits or its
	// session is lost).
	ExpiresAt *time.Time `json:"expires_at"`
	// Waiters ("waiters") is the number of contenders queued behind the
	// holder.
	Waiters int `json:"waiters"`
	// SafeForMS ("safe_for_ms", only for GET /v1/locks/{name}?lease_id=ID
	// with the id of this daemon's live lease on the lock) is how many
	// milliseconds the lease is guaranteed to hold: until its TTL passes or
	// the daemon's ZooKeeper session could expire, whichever is first; 0
	// once it has ended. Check it before an action no token can fence.
	SafeForMS *int64 `json:"safe_for_ms,omitempty"`
	// BlockedBy ("blocked_by", omitted when empty) names a node shaped like
	// a contender at the head of the queue that no session owns (it is not
	// ephemeral): it blocks the lock until someone deletes it, and is not a
	// holder.
	BlockedBy string `json:"blocked_by,omitempty"`
	// OwnerRewritten ("owner_rewritten", omitted when false) says that the
	// holder's contender data was changed after it was created: its owner
	// cannot be trusted and is not shown.
	OwnerRewritten bool `json:"owner_rewritten,omitempty"`
	// Index ("index") differs whenever the state may have changed; send it
	// back as ?index= to wait for a change.
	Index uint64 `json:"index"`
	// Holding ("holding") is the holder: one contender, or for shared
	// holders every reader that holds; [] when nobody holds.
	Holding []Contender `json:"holding"`
	// Queue ("queue") is every contender behind the holders, in the order
	// they will be granted; [] when none waits.
	Queue []Contender `json:"queue"`
	// Unread ("unread", omitted when 0) counts contenders past
	// MaxQueueRead, neither in Holding nor in Queue.
	Unread int `json:"unread,omitempty"`
}

// MaxQueueRead bounds the contenders a status read lists; the rest are
// counted in its unread.
const MaxQueueRead = 1000

// Contender is a holder or a waiter of a lock, a semaphore or an election,
// as far as its ZooKeeper node tells: seqd's own contenders name their
// owner and daemon; those of other recipes on the same path give their
// node's data as the owner (kazoo's identifier, Curator's address).
type Contender struct {
	// Node ("node") is the contender's child node name.
	Node string `json:"node"`
	// Client ("client") names what made it, from its name and data:
	// "seqd" (a daemon's lease or a `seqd lock`), "kazoo", "curator",
	// "zk.Lock" (a Curator-style node with no data, as go-zookeeper's
	// zk.Lock leaves), "planted" (not ephemeral: no session owns it; it
	// blocks the queue until someone deletes it) or "unknown".
	Client string `json:"client"`
	// Owner ("owner") is the lease's owner, a `seqd lock`'s user@host:pid,
	// or another recipe's node data (printable text, at most 256 bytes);
	// "" when unknown or rewritten since the node was made.
	Owner string `json:"owner,omitempty"`
	// Daemon ("daemon") is the daemon that holds the contender for its
	// owner (its --identity, host:pid by default); "" for a `seqd lock` or
	// another recipe.
	Daemon string `json:"daemon,omitempty"`
	// Command ("command") is the command a `seqd lock` runs under it.
	Command string `json:"command,omitempty"`
	// Mode ("mode", locks only) is "exclusive" or "shared".
	Mode string `json:"mode,omitempty"`
	// Value ("value", elections only) is the candidate's published value.
	// A candidate's node carries no owner: Owner is known for the
	// leaderships of the daemon that answers, and Client is "unknown" for
	// the others but kazoo's.
	Value string `json:"value,omitempty"`
	// Since ("since", RFC 3339) is when the contender queued: its node's
	// creation time (ZooKeeper's clock).
	Since time.Time `json:"since"`
	// Token ("token", holders only) is the holder's token (an election's
	// term); absent for waiters, whose token is decided at their grant.
	Token uint64 `json:"token,omitempty"`
	// ExpiresAt ("expires_at", RFC 3339) is when the holder's lease ends
	// unless renewed: known for the leases of the daemon that answers.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// BreakRequest is the body of POST /v1/{family}/{name}/break, which needs
// the daemon's admin token.
type BreakRequest struct {
	// Reason ("reason", required, at most MaxReasonBytes) says why: it
	// goes into the audit log and the broken lease's answers.
	Reason string `json:"reason"`
	// Token ("token", optional) is the token (an election's term) of the
	// holder to break: it is broken only if it still holds, otherwise the
	// answer is a 409 with the current token. Without it the lock's or
	// election's one holder is broken; a semaphore, or a lock held by
	// several readers, needs it.
	Token uint64 `json:"token,omitempty"`
}

// MaxReasonBytes bounds a break's reason.
const MaxReasonBytes = 1024

// BreakResponse is the answer of a break: the holder whose contender was
// deleted. The next grant gets a higher token.
type BreakResponse struct {
	// Broken ("broken") is always true.
	Broken bool `json:"broken"`
	// Token ("token") is the broken holder's token (term).
	Token uint64 `json:"token"`
	// Holder ("holder") is the broken contender, as a status read showed
	// it.
	Holder Contender `json:"holder"`
	// Reason ("reason") is the request's reason.
	Reason string `json:"reason"`
}

// Overview is the answer of GET /v1/{family}?all=1: the status of every
// name of the family that has contenders under the daemon's root for it,
// by name, at most MaxOverview of them. Its index (in the body and the
// X-Seqd-Index header) makes it a blocking read like a status read's:
// ?all=1&index=I&wait=D answers once a listed name's state changes, or a
// name appears or goes, or wait passes.
type Overview struct {
	// Family ("family") is "locks", "semaphores" or "elections".
	Family string `json:"family"`
	// Exactly one of Locks ("locks"), Semaphores ("semaphores") and
	// Elections ("elections") is present, the family's.
	Locks      []LockStatus      `json:"locks,omitempty"`
	Semaphores []SemaphoreStatus `json:"semaphores,omitempty"`
	Elections  []ElectionStatus  `json:"elections,omitempty"`
	// More ("more") says that the root holds more names than listed.
	More bool `json:"more"`
	// Index ("index") as in LockStatus.
	Index uint64 `json:"index"`
}

// MaxOverview bounds the names of an Overview.
const MaxOverview = 200

// ElectionStatus is the answer of GET /v1/elections/{name}, read from
// ZooKeeper, so that it shows leaders on any daemon (and those of
// Curator's LeaderSelector and kazoo's Election on the same path).
type ElectionStatus struct {
	Name string `json:"name"`
	// Leader ("leader") is null when nobody leads.
	Leader *LeaderView `json:"leader"`
	// Candidates ("candidates") counts every candidate, the leader
	// included.
	Candidates int `json:"candidates"`
	// Index ("index") as in LockStatus.
	Index uint64 `json:"index"`
	// Self ("self") is true while a campaign through this daemon (its own,
	// with serve --campaign, or a client's) leads. It turns false as soon
	// as the daemon can no longer vouch for it, before another candidate
	// can be elected.
	Self bool `json:"self"`
	// SafeForMS ("safe_for_ms") as in LockStatus, for a leadership lease.
	SafeForMS *int64 `json:"safe_for_ms,omitempty"`
	// Holding ("holding") is the leader's candidate ([] when nobody
	// leads); Queue ("queue") the other candidates in the order they would
	// lead; Unread as in LockStatus.
	Holding []Contender `json:"holding"`
	Queue   []Contender `json:"queue"`
	Unread  int         `json:"unread,omitempty"`
}

// LeaderView is an election's leader.
type LeaderView struct {
	// Owner ("owner") is the leader's owner when its campaign runs through
	// this daemon; "" otherwise (other daemons and recipes publish only
	// the value).
	Owner string `json:"owner"`
	// Value ("value") is the leader's published value.
	Value string `json:"value"`
	// Term ("term") strictly rises from one leader to the next.
	Term uint64 `json:"term"`
	// Since ("since", RFC 3339) is when the leader took office.
	Since time.Time `json:"since"`
}

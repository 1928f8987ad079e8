// Package sequencer is seqd's daemon core: it grants leases on named locks,
// semaphores, elections and multi-locks, each with a fencing token.
//
// Service holds leases for owners over zklock, all on one ZooKeeper session
// per daemon: Acquire grants a lease with a fencing token (a new grant always
// a higher token; the same live owner asking again gets the same one),
// Renew keeps it alive for its TTL, Release ends it, and Check answers
// whether a token is a lock's current one by reading ZooKeeper, so that it
// works for locks held through other daemons (Chubby's CheckSequencer).
// The HTTP API over a Service is package sequencer/httpapi; the wire types
// are package api's. This package imports no net/http.
//
// A lease is never guaranteed: it ends when its TTL passes without renewal
// or when the daemon's session is lost. The token is what makes that safe.
//
// The package is not a lock library: Go programs that want a lock on their
// own ZooKeeper session use zklock directly. Nor is it the resource side:
// a resource that checks tokens imports package fence (Fence, sequencer
// parsing), which needs no ZooKeeper client.
package sequencer

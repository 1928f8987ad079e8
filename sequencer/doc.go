// Package sequencer is seqd's daemon core.
//
// Service holds leases for owners over zklock, all on one ZooKeeper session
// per daemon: Acquire grants a lease with a fencing token (a new grant always
// a higher token; the same live owner asking again gets the same one),
// Renew keeps it alive for its TTL, Release ends it, and Check answers
// whether a token is a lock's current one by reading ZooKeeper, so that it
// works for locks held through other daemons (Chubby's CheckSequencer).
// Handler serves the HTTP/JSON API of DESIGN §4 and Client speaks it.
//
// The resource side (Fence, and parsing the sequencers holders pass along) is
// package fence, which a resource can import without a ZooKeeper client.
//
// A lease is never guaranteed: it ends when its TTL passes without renewal
// or when the daemon's session is lost. The token is what makes that safe.
package sequencer

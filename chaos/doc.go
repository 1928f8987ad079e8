// Package chaos is seqd's fault-injection suite: it shows, rather than
// asserts, that fencing tokens keep a resource safe while locks are lost
// under pauses, crashes, ZooKeeper failovers and network partitions.
//
// It has three parts:
//
//   - a recorded history of operations (Op, Recorder, ReadHistory): each
//     client appends one JSON line when it invokes an operation and one when
//     it completes, so a client that dies mid-operation leaves an
//     operation of unknown outcome, never a hole;
//   - checkers over a history: CheckAdds (every acknowledged add is in the
//     final read), CheckLinearizable (the store behaved as a fenced register:
//     no operation with a token below one already used was accepted, and no
//     token was used by two grants; porcupine does the search) and
//     CheckTokens (grants have unique tokens, rising in real-time order);
//   - two ways to produce histories: a deterministic simulation of the lease
//     logic on a virtual clock (Simulate), and the real-process harness in
//     the package's tests (ZooKeeper ensemble, two `seqd serve`, `seqd
//     store`, client processes, a seeded fault schedule; loopback proxies
//     between daemons and members and between members for partitions).
//
// It is not a load test: a run's numbers say how much was exercised, not how
// fast anything is.
package chaos

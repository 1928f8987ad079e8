// Package zklock is the ZooKeeper lock recipe with fencing tokens.
//
// A Session owns one ZooKeeper connection and its session. NewMutex names a
// lock on it; Acquire waits for the lock (only the immediate predecessor is
// watched, waiters are served in FIFO order) and returns a Grant whose Token
// is strictly higher than every earlier grant of that lock, also across
// ZooKeeper leader failover.
//
// Holding a lock is never guaranteed. A Grant's Lost channel closes when the
// session expires, when the contender node disappears, or when ZooKeeper has
// not been heard from for long enough that it may have expired the session —
// before another holder can be granted. Even so, a paused process can act
// after its lock is gone: send the Token with every write and let the
// resource reject lower ones. That, not the lock, is what makes it safe.
//
// Contenders are ephemeral-sequential nodes named like Curator's protected
// InterProcessMutex nodes (_c_<uuid>-lock-<seq>), so seqd, Curator,
// go-zookeeper's zk.Lock and kazoo locks on the same path exclude each other.
//
// Any ZooKeeper client allowed to write under a lock node can break the
// lock. Options.Auth gives the session a digest identity, and the creator
// ACL it implies (Options.ACL) lets every other client read the nodes the
// session creates but not delete, plant or rewrite them; Options.TLS
// connects to ZooKeeper's secure client port. Where nodes can still be
// planted, a contender that appears below a holder ends its grant (a holder
// is only the lowest contender), and a contender-shaped node that is not
// ephemeral is reported as blocking the lock, never as its holder. The first
// grant on a root records its token mode there; the other mode is refused
// on that root (ErrTokenModeMismatch).
//
// A Session reports what it does (grants, waits, losses, refused tokens,
// connectivity, expiry) to the Observer in its Options, and names no metrics
// of its own: the program decides what to record and under which names.
//
// # Shortcuts
//
// Four shortcuts save ZooKeeper requests on the path of a grant. Each rests
// on one invariant; remove one and the recipe stays correct, only slower.
// The gains are from BenchmarkShortcuts (in process, one local ZooKeeper,
// each shortcut off against all on, interleaved in one run; the numbers
// below are its output on a shared 2-core machine).
//
//   - Stamped create (createStamped): the contender is created in one multi
//     with a setData of the lock node, whose answer carries the multi's
//     zxid, so the contender's czxid (its zxid token) comes with the create
//     instead of one more read. Invariant: every operation of a multi has
//     the multi's zxid, and in zxid mode nobody reads the lock node's data.
//   - Marker-absence proof (markerAbsence): the lock-delay marker is not
//     read while an exists watch on the root's marker directory has not
//     fired on this connection. The watch is set in the background, off
//     the path of the acquire that first needs it. Invariant: ZooKeeper
//     delivers a watch's event before any answer showing a later state, and
//     a holder writes its marker before its grant.
//   - Hand-over without a look (awaitTurn): when our predecessor was
//     granted on this session and is gone, we are the lowest without
//     reading the children again. Invariant: a contender that was once the
//     lowest has nothing lower after it (sequence numbers only grow); a
//     node planted below is seen by the grant's look right after.
//   - lookEvery: a grant's look reads what it watches at most every
//     lookEvery, so a holder released within it reads nothing. Invariant:
//     the read only finds a loss sooner; the session deadline, not the read,
//     bounds how late a loss is declared.
//
// Measured (go test -run '^$' -bench BenchmarkShortcuts -benchtime 4x, in
// process, under a load of about 24 on 2 cores, so each figure is rough):
// the hand-over saves most, off/on 2.5 (4 contenders on one session);
// the stamped create 1.5 (one contender); the marker-absence proof and
// lookEvery were within the noise in time, 0.98 and 0.96. The first saves
// ZooKeeper one request of 4 per uncontended cycle (TestUncontendedCycleRequests
// counts 3, and 4 once the root has a marker directory), a read sent right
// behind the create's children read, so it costs the holder little time;
// the second saves reads when many waiters join a hot lock, more than the
// 4 here.
//
// zklock is a library on its own: it depends on go-zookeeper and the standard
// library only, and knows nothing of HTTP, flags, leases or metrics; seqd's
// daemon builds those on top of it (package sequencer).
package zklock

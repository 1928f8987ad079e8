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
// zklock is a library on its own: it depends on go-zookeeper and the standard
// library only, and knows nothing of HTTP, flags, leases or metrics; seqd's
// daemon builds those on top of it (package sequencer).
package zklock

package dev.seqd.client;

import java.time.Duration;

/**
 * The options of a lock's acquire, beyond its name, TTL and wait. Immutable: each method returns
 * a copy with one option changed, e.g. {@code LockOptions.defaults().shared().lockDelay(d)}.
 */
public final class LockOptions {
    final String owner;
    final String leaseId;
    final boolean shared;
    final Duration lockDelay;
    final boolean autoRenew;

    private LockOptions(String owner, String leaseId, boolean shared, Duration lockDelay, boolean autoRenew) {
        this.owner = owner;
        this.leaseId = leaseId;
        this.shared = shared;
        this.lockDelay = lockDelay;
        this.autoRenew = autoRenew;
    }

    /** The client's owner, a fresh lease id, exclusive, the daemon's lock-delay, renewed. */
    public static LockOptions defaults() {
        return new LockOptions(null, null, false, null, true);
    }

    /** Who asks (shown in the lock's status); default the client's owner, host:pid. */
    public LockOptions owner(String owner) {
        return new LockOptions(owner, leaseId, shared, lockDelay, autoRenew);
    }

    /**
     * The lease id (32 lowercase hex digits) to acquire under; by default the client picks a
     * random one. Acquiring again with the id of one's live lease returns that lease: a retry
     * after a lost answer.
     */
    public LockOptions leaseId(String leaseId) {
        return new LockOptions(owner, leaseId, shared, lockDelay, autoRenew);
    }

    /** A shared (reader) lease: held together with other shared ones, excluding exclusive ones. */
    public LockOptions shared() {
        return new LockOptions(owner, leaseId, true, lockDelay, autoRenew);
    }

    /** After this lease ends uncleanly, nobody is granted the lock for this long (0s..60s). */
    public LockOptions lockDelay(Duration lockDelay) {
        return new LockOptions(owner, leaseId, shared, lockDelay, autoRenew);
    }

    /**
     * Whether a held {@link Lease} renews itself in the background (default true). Without it,
     * call {@link Lease#renew()} yourself more often than the TTL: the lease is lost at its
     * deadline otherwise.
     */
    public LockOptions autoRenew(boolean autoRenew) {
        return new LockOptions(owner, leaseId, shared, lockDelay, autoRenew);
    }
}

package dev.seqd.client;

/** The options of a semaphore's acquire, beyond its name, limit, TTL and wait. Immutable. */
public final class SemaphoreOptions {
    final String owner;
    final String leaseId;
    final boolean autoRenew;

    private SemaphoreOptions(String owner, String leaseId, boolean autoRenew) {
        this.owner = owner;
        this.leaseId = leaseId;
        this.autoRenew = autoRenew;
    }

    /** The client's owner, a fresh lease id, renewed. */
    public static SemaphoreOptions defaults() {
        return new SemaphoreOptions(null, null, true);
    }

    /** Who asks; default the client's owner, host:pid. */
    public SemaphoreOptions owner(String owner) {
        return new SemaphoreOptions(owner, leaseId, autoRenew);
    }

    /** The lease id to acquire under, as {@link LockOptions#leaseId}. */
    public SemaphoreOptions leaseId(String leaseId) {
        return new SemaphoreOptions(owner, leaseId, autoRenew);
    }

    /** Whether a held {@link Lease} renews itself, as {@link LockOptions#autoRenew}. */
    public SemaphoreOptions autoRenew(boolean autoRenew) {
        return new SemaphoreOptions(owner, leaseId, autoRenew);
    }
}

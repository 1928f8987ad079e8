package dev.seqd.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A seqd lock behind {@link java.util.concurrent.locks.Lock}, with fencing tokens: code written
 * against {@code Lock} locks across processes and machines, and {@link #getFence()} gives the
 * token to send with every write.
 *
 * <pre>{@code
 * Client client = new Client();                       // SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, …
 * SeqdLock lock = new SeqdLock(client, "jobs/nightly");
 * long fence = lock.lockAndGetFence();
 * try {
 *     store.write(batch, fence);                      // the resource refuses a fence below its highest
 * } finally {
 *     lock.unlock();
 * }
 * }</pre>
 *
 * <p><b>Who holds it.</b> A hold belongs to a thread, as with {@link
 * java.util.concurrent.locks.ReentrantLock}: each thread that locks gets a lease of its own from
 * the daemon, so two threads of one JVM exclude each other as two processes do, whether they share
 * this object or not. The lease renews itself in the background ({@link Lease}) until the last
 * {@link #unlock()} releases it.
 *
 * <p><b>Re-entry.</b> The thread that holds the lock may lock it again, up to the acquire limit
 * ({@link Builder#acquireLimit(int)}: 0, the default, for no limit; 1 for a lock that is not
 * reentrant). A re-entry asks nothing of the daemon and has the same fence: one fence per hold.
 * Past the limit, {@code lock()} throws {@link LockAcquireLimitReachedException} and {@code
 * tryLock} answers {@code false}; every {@code lock} that succeeded needs its {@code unlock}.
 *
 * <p><b>Loss.</b> Holding is never guaranteed: a pause, a partition or an operator can end the
 * lease while the thread runs on. From then on {@link #getFence()}, {@link #unlock()} and a
 * re-entry throw {@link LockOwnershipLostException} (an {@link IllegalMonitorStateException}), and
 * {@link #isLockedByCurrentThread()} answers false. The fence is what keeps a late write harmless:
 * pass it to every resource you write to.
 *
 * <p><b>Waiting.</b> {@link #lock()} waits as long as it takes (in acquires of at most a minute
 * each); {@link #lockInterruptibly()} and {@link #tryLock(long, TimeUnit)} end their wait with
 * {@link InterruptedException} when the thread is interrupted, and leave no lease behind: the
 * request is cancelled and a grant it may have got is released. {@link #lock()} and {@link
 * #tryLock()} keep waiting through an interrupt and return with the thread's interrupt status
 * set. A failure that waiting cannot fix (the daemon unreachable, a 400, a protocol error) is
 * thrown as the {@link SeqdException} it is, from every locking method.
 *
 * <p>A SeqdLock is safe for concurrent use; making one does no I/O. It has no {@link Condition}s.
 */
public final class SeqdLock implements Lock {
    /** What {@code tryLockAndGetFence} answers when the lock was not acquired: tokens start at 1. */
    public static final long INVALID_FENCE = 0L;

    private final Client client;
    private final String name;
    private final Duration ttl;
    private final int acquireLimit;
    private final LockOptions options;
    private final Duration waitSlice;
    private final ThreadLocal<Hold> holds = new ThreadLocal<>();

    /** One thread's hold: its lease and how many times it locked. Touched by that thread only. */
    private static final class Hold {
        final Lease lease;
        int count = 1;

        Hold(Lease lease) {
            this.lease = lease;
        }
    }

    /**
     * The lock name through client, with the defaults: the daemon's TTL (15s), no acquire limit.
     */
    public SeqdLock(Client client, String name) {
        this(builder(client, name));
    }

    private SeqdLock(Builder b) {
        this.client = b.client;
        this.name = b.name;
        this.ttl = b.ttl;
        this.acquireLimit = b.acquireLimit;
        this.options = b.options;
        this.waitSlice = b.waitSlice;
    }

    /** A builder of the lock name through client, to set its TTL, acquire limit and options. */
    public static Builder builder(Client client, String name) {
        return new Builder(client, name);
    }

    /** The settings of a {@link SeqdLock}. */
    public static final class Builder {
        private final Client client;
        private final String name;
        private Duration ttl;
        private int acquireLimit;
        private LockOptions options = LockOptions.defaults();
        private Duration waitSlice = Duration.ofMinutes(1);

        private Builder(Client client, String name) {
            this.client = Objects.requireNonNull(client, "client");
            this.name = Objects.requireNonNull(name, "name");
        }

        /** The TTL of each hold's lease (renewed every TTL/3); null takes the daemon's (15s). */
        public Builder ttl(Duration ttl) {
            this.ttl = ttl;
            return this;
        }

        /**
         * How many times the holding thread may hold the lock at once: 0 (the default) for no
         * limit, 1 for a lock that is not reentrant.
         *
         * @throws IllegalArgumentException for a negative limit
         */
        public Builder acquireLimit(int limit) {
            if (limit < 0) {
                throw new IllegalArgumentException("acquire limit " + limit + " is negative: give 0 for no limit, 1 for a lock that is not reentrant");
            }
            this.acquireLimit = limit;
            return this;
        }

        /** After a hold ends uncleanly, nobody is granted the lock for this long (0s..60s). */
        public Builder lockDelay(Duration delay) {
            this.options = options.lockDelay(delay);
            return this;
        }

        /** Who holds it, as the lock's status shows it; default the client's owner (host:pid). */
        public Builder owner(String owner) {
            this.options = options.owner(owner);
            return this;
        }

        /** The longest wait of one acquire while {@code lock()} waits; for tests. */
        Builder waitSlice(Duration slice) {
            this.waitSlice = slice;
            return this;
        }

        public SeqdLock build() {
            return new SeqdLock(this);
        }
    }

    /** The lock's name. */
    public String name() {
        return name;
    }

    /**
     * Acquires the lock, waiting as long as it takes; a re-entry by the holding thread counts one
     * more hold. An interrupt does not end the wait: the thread's interrupt status is set again on
     * return.
     *
     * @throws LockAcquireLimitReachedException on a re-entry past the acquire limit
     * @throws LockOwnershipLostException on a re-entry after this thread's hold was lost
     */
    @Override
    public void lock() {
        lockAndGetFence();
    }

    /**
     * {@link #lock()}, answering the fence of this thread's hold: the lease's token, the same for
     * every re-entry, higher than every earlier holder's (compare with {@link
     * Long#compareUnsigned}).
     */
    public long lockAndGetFence() {
        Hold h = reenter(true);
        if (h != null) {
            return h.lease.token();
        }
        try {
            return hold(acquire(0, true, false));
        } catch (InterruptedException e) {
            throw new AssertionError("an acquire that ignores interrupts was interrupted", e);
        }
    }

    /**
     * {@link #lock()}, unless the thread is interrupted (before the call or while it waits): then
     * the wait ends with InterruptedException, and no lease is left behind.
     */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        if (Thread.interrupted()) {
            throw interrupted();
        }
        if (reenter(true) != null) {
            return;
        }
        hold(acquire(0, true, true));
    }

    /**
     * Acquires the lock if it is free now (one try at the daemon), or re-enters it; {@code false}
     * if another holds it, or on a re-entry past the acquire limit.
     *
     * @throws LockOwnershipLostException on a re-entry after this thread's hold was lost
     */
    @Override
    public boolean tryLock() {
        return tryLockAndGetFence() != INVALID_FENCE;
    }

    /** {@link #tryLock()}, answering the fence, or {@link #INVALID_FENCE} when not acquired. */
    public long tryLockAndGetFence() {
        Hold h = reenter(false);
        if (h != null) {
            return h.count == 0 ? INVALID_FENCE : h.lease.token();
        }
        try {
            Lease l = acquire(System.nanoTime(), false, false);
            return l == null ? INVALID_FENCE : hold(l);
        } catch (InterruptedException e) {
            throw new AssertionError("an acquire that ignores interrupts was interrupted", e);
        }
    }

    /**
     * Acquires the lock if it is free within time, or re-enters it; {@code false} when the time
     * passed first, or on a re-entry past the acquire limit. A time of zero or less tries once.
     *
     * @throws InterruptedException when the thread is interrupted before or while waiting (no
     *     lease is left behind)
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return tryLockAndGetFence(time, unit) != INVALID_FENCE;
    }

    /** {@link #tryLock(long, TimeUnit)}, answering the fence, or {@link #INVALID_FENCE}. */
    public long tryLockAndGetFence(long time, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + Math.max(0, unit.toNanos(time));
        if (Thread.interrupted()) {
            throw interrupted();
        }
        Hold h = reenter(false);
        if (h != null) {
            return h.count == 0 ? INVALID_FENCE : h.lease.token();
        }
        Lease l = acquire(deadline, false, true);
        return l == null ? INVALID_FENCE : hold(l);
    }

    /**
     * Ends one hold of this thread; the last one releases the lease.
     *
     * @throws IllegalMonitorStateException when this thread does not hold the lock
     * @throws LockOwnershipLostException when this thread's hold was lost (the hold still ends)
     */
    @Override
    public void unlock() {
        Hold h = holds.get();
        if (h == null) {
            throw new IllegalMonitorStateException("unlock of the lock " + name + " by a thread that does not hold it");
        }
        boolean held = h.lease.isHeld();
        if (--h.count == 0) {
            holds.remove();
            h.lease.close(); // releases it if held; a lost lease has nothing to release
        }
        if (!held) {
            throw lost(h);
        }
    }

    /**
     * The fence of this thread's hold: its lease's token (unsigned, in a long).
     *
     * @throws IllegalMonitorStateException when this thread does not hold the lock
     * @throws LockOwnershipLostException when this thread's hold was lost: the fence is not valid
     */
    public long getFence() {
        return valid().lease.token();
    }

    /**
     * The sequencer of this thread's hold, for a resource that takes one (it may be signed; pass
     * it on unchanged). Throws as {@link #getFence()} does.
     */
    public String getSequencer() {
        return valid().lease.sequencer();
    }

    /**
     * The lease under this thread's hold (its {@link Lease#lost()} signal, {@link
     * Lease#safeFor()}), if this thread holds the lock; it stays this thread's to unlock.
     */
    public Optional<Lease> currentLease() {
        Hold h = holds.get();
        return h == null ? Optional.empty() : Optional.of(h.lease);
    }

    /**
     * Whether anyone holds the lock now, in any process: one status read from the daemon (which
     * reads ZooKeeper).
     */
    public boolean isLocked() {
        return client.status(name).held();
    }

    /** Whether this thread holds the lock and its lease has not been lost. No I/O. */
    public boolean isLockedByCurrentThread() {
        Hold h = holds.get();
        return h != null && h.lease.isHeld();
    }

    /** How many holds this thread has (0 when it does not hold the lock), lost or not. No I/O. */
    public int getHoldCount() {
        Hold h = holds.get();
        return h == null ? 0 : h.count;
    }

    /** The acquire limit: 0 for none, 1 for a lock that is not reentrant. */
    public int acquireLimit() {
        return acquireLimit;
    }

    /**
     * Not supported: a condition needs the lock service to wake a waiter on a signal, which seqd
     * does not do. Wait for a lock's change with {@link Client#waitStatus}, or hand work over
     * through your queue or database.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("SeqdLock has no conditions: seqd does not signal waiters, so "
                + "wait for a change of the lock with Client.waitStatus, or hand work over through a queue or a database");
    }

    @Override
    public String toString() {
        Hold h = holds.get();
        String state = h == null ? "not held by this thread"
                : (h.lease.isHeld() ? "held by this thread" : "lost by this thread") + ", fence "
                        + Long.toUnsignedString(h.lease.token()) + ", " + h.count + (h.count == 1 ? " hold" : " holds");
        return "SeqdLock[" + name + ", " + state + "]";
    }

    // ---- Holding.

    /**
     * A re-entry, if this thread holds the lock: the hold, one more count on it (count 0 marks a
     * re-entry refused by the limit, for a tryLock); null when this thread does not hold it.
     */
    private Hold reenter(boolean throwAtLimit) {
        Hold h = holds.get();
        if (h == null) {
            return null;
        }
        if (!h.lease.isHeld()) {
            throw lost(h);
        }
        if (acquireLimit > 0 && h.count >= acquireLimit) {
            if (throwAtLimit) {
                throw new LockAcquireLimitReachedException("this thread already holds the lock " + name + " "
                        + h.count + (h.count == 1 ? " time" : " times") + ", its acquire limit"
                        + (acquireLimit == 1 ? " (the lock is not reentrant)" : "") + "; unlock before locking again");
            }
            return REFUSED;
        }
        h.count++;
        return h;
    }

    /** The marker of a re-entry refused by the limit. */
    private static final Hold REFUSED = refused();

    private static Hold refused() {
        Hold h = new Hold(null);
        h.count = 0;
        return h;
    }

    private long hold(Lease l) {
        holds.set(new Hold(l));
        return l.token();
    }

    /** This thread's hold, if it is valid; otherwise the exception saying why not. */
    private Hold valid() {
        Hold h = holds.get();
        if (h == null) {
            throw new IllegalMonitorStateException("the lock " + name + " is not held by this thread");
        }
        if (!h.lease.isHeld()) {
            throw lost(h);
        }
        return h;
    }

    private LockOwnershipLostException lost(Hold h) {
        var f = h.lease.lost();
        LostException why = f.isDone() && !f.isCancelled() ? f.getNow(null) : null;
        String fence = Long.toUnsignedString(h.lease.token());
        String reason = why != null ? why.getMessage() + " (" + why.code() + ")" : "its lease was closed, with its client";
        return new LockOwnershipLostException("the lock " + name + " was lost while this thread held it, and its fence "
                + fence + " is no longer valid: " + reason, name, h.lease.token(), why);
    }

    // ---- Acquiring.

    /**
     * Acquires a lease on the lock: until granted (forever), or until deadline (a System.nanoTime;
     * null when it passed first). All tries of one call use one lease id, so that a try whose answer was
     * lost (an interrupt cancels the request) finds its lease again. An interruptible acquire
     * that is interrupted withdraws and throws; otherwise the interrupt status is set again on
     * return.
     */
    private Lease acquire(long deadline, boolean forever, boolean interruptible) throws InterruptedException {
        String leaseId = Client.newLeaseId();
        LockOptions o = options.leaseId(leaseId);
        // A thread that must not be interrupted out of its wait holds its interrupt until the end,
        // so that it does not cancel each request as it is sent.
        boolean interrupted = !interruptible && Thread.interrupted();
        try {
            while (true) {
                Duration wait = waitSlice;
                if (!forever) {
                    long left = Math.max(0, deadline - System.nanoTime());
                    wait = Duration.ofMillis(Math.min(waitSlice.toMillis(), TimeUnit.NANOSECONDS.toMillis(left)));
                }
                Lease l;
                try {
                    l = client.lock(name, ttl, wait, o);
                } catch (HeldException e) {
                    if (!forever && deadline - System.nanoTime() <= 0) {
                        return null;
                    }
                    continue;
                } catch (SeqdException e) {
                    if (!(e.getCause() instanceof InterruptedException)) {
                        throw e;
                    }
                    Thread.interrupted(); // the client set it again; this loop decides
                    if (interruptible) {
                        withdraw(leaseId);
                        throw interrupted();
                    }
                    interrupted = true;
                    continue;
                }
                if (interruptible && Thread.interrupted()) { // while the grant was renewed
                    l.close();
                    throw interrupted();
                }
                return l;
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * After a cancelled acquire: the daemon withdraws a request that was still waiting when its
     * connection closed, but one granted just before is a lease nobody knows of. Release it.
     */
    private void withdraw(String leaseId) {
        try {
            LockStatus s = client.status(name, leaseId);
            if (s.safeFor().isPresent()) { // a live lease of that id: the grant came
                client.release(name, leaseId, s.token());
            }
        } catch (SeqdException e) {
            Client.warn("seqd: could not check that the interrupted acquire of " + name
                    + " left no lease; if it was granted, it ends at its TTL", e);
        }
    }

    private InterruptedException interrupted() {
        return new InterruptedException("interrupted while waiting for the lock " + name);
    }
}

package dev.seqd.client;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A held lock, semaphore slot or leadership: it renews itself in the background every TTL/3 and
 * {@link #close()} releases it. Use it in a try-with-resources block.
 *
 * <p><b>Holding is never guaranteed.</b> The lease is lost, and {@link #lost()} completes at
 * once, when a renewal is answered 409 ({@code lost}, {@code stale_token}, {@code broken}: the
 * lease ended at the daemon, or an operator broke it), or when its deadline passes without a
 * successful renewal (the daemon unreachable or unable to reach ZooKeeper). The deadline is
 * measured on this JVM's monotonic clock from when the last successful renewal was <em>sent</em>,
 * plus the TTL, so that a slow answer cannot stretch it: the lease is never reported held past
 * the end the daemon gives it. Stop acting on the lock when it is lost, and pass {@link
 * #sequencer()} or {@link #token()} to every resource you write to, so that it refuses a holder
 * that acts late anyway.
 *
 * <p>{@code close()} releases a held lease; one already lost is not released (the daemon would
 * answer 409) and {@code close()} returns quietly either way: a failed release is logged, the
 * lease then ends at its TTL.
 */
public class Lease implements AutoCloseable {
    /** A lease renews itself every TTL/RENEW_DIVISOR (the daemon's api.RenewDivisor). */
    public static final int RENEW_DIVISOR = 3;
    /** After a renewal that did not reach the daemon, it retries every (TTL/RENEW_DIVISOR)/RETRY_DIVISOR (api.RetryDivisor). */
    public static final int RETRY_DIVISOR = 4;

    private enum State { HELD, LOST, CLOSED }

    final Client client;
    final Kind kind;
    private final String name;
    private final long token;
    private final String sequencer;
    private final String leaseId;
    private final boolean autoRenew;
    private final CompletableFuture<LostException> lost = new CompletableFuture<>();

    private final Object mu = new Object();
    // Guarded by mu.
    private LeaseInfo info;
    private long ttlNanos;
    private long deadline; // System.nanoTime() past which the lease is not trusted
    private State state = State.HELD;
    private LostException ended; // why it was lost; lost() is completed with it
    private boolean inFlight;
    private SeqdException lastFailure;
    private ScheduledFuture<?> renewTask;
    private ScheduledFuture<?> deadlineTask;

    Lease(Client client, Kind kind, LeaseInfo info, boolean autoRenew) {
        this.client = client;
        this.kind = kind;
        this.name = info.name();
        this.token = info.token();
        this.sequencer = info.sequencer();
        this.leaseId = info.leaseId();
        this.autoRenew = autoRenew;
        this.info = info;
        this.ttlNanos = (info.ttl() != null ? info.ttl() : Duration.ofSeconds(15)).toNanos();
    }

    /** The lock's (semaphore's, election's) name. */
    public String name() {
        return name;
    }

    /** The fencing token: an unsigned 64-bit integer, in a long. */
    public long token() {
        return token;
    }

    /** The sequencer to hand to resources, unchanged (it may carry a kind and a signature). */
    public String sequencer() {
        return sequencer;
    }

    /** The lease id: with the token, it renews or releases the lease. Keep it secret. */
    public String leaseId() {
        return leaseId;
    }

    /** The latest answer of the daemon about this lease (acquire, renew or proclaim). */
    public LeaseInfo info() {
        synchronized (mu) {
            return info;
        }
    }

    /** The TTL the daemon granted. */
    public Duration ttl() {
        synchronized (mu) {
            return Duration.ofNanos(ttlNanos);
        }
    }

    /** How often the lease renews itself: TTL/RENEW_DIVISOR. */
    public Duration renewInterval() {
        return ttl().dividedBy(RENEW_DIVISOR);
    }

    /**
     * Completes, with why, as soon as the lease is lost ({@link LostException#code()}: {@code
     * lost}, {@code broken}, {@code stale_token} or {@code expired}). It is cancelled by {@link
     * #close()} when the lease ends cleanly, so {@code lost().isDone()} means "stop". Callbacks
     * registered with {@code thenRun}/{@code thenAccept} run on the client's own thread: keep them
     * short (interrupt a worker, set a flag) or use the {@code *Async} variants.
     */
    public CompletableFuture<LostException> lost() {
        synchronized (mu) {
            expireIfDue();
        }
        publish();
        return lost;
    }

    /** Whether the lease is held now: not lost, not closed, and before its deadline. */
    public boolean isHeld() {
        boolean held;
        synchronized (mu) {
            expireIfDue();
            held = state == State.HELD;
        }
        publish();
        return held;
    }

    /**
     * Returns if the lease is held; otherwise throws a {@link LostException} saying why. Call it
     * before each step of the work done under the lease.
     *
     * @throws IllegalStateException after {@link #close()}
     */
    public void ensureHeld() {
        State s;
        LostException why;
        synchronized (mu) {
            expireIfDue();
            s = state;
            why = ended;
        }
        publish();
        if (s == State.HELD) {
            return;
        }
        if (why == null) {
            throw new IllegalStateException("the lease on " + name + " was closed");
        }
        throw new LostException(why.getMessage(), why.status(), why.code(),
                why.currentToken().isPresent() ? why.currentToken().getAsLong() : null, why);
    }

    /**
     * How long the lease is guaranteed from now, by the local deadline (TTL from the last
     * successful renewal's sending); zero once lost or closed. Check it before an action no token
     * can fence (an email, a payment).
     */
    public Duration safeFor() {
        long left;
        synchronized (mu) {
            expireIfDue();
            left = state == State.HELD ? deadline - System.nanoTime() : 0;
        }
        publish();
        return Duration.ofNanos(Math.max(0, left));
    }

    /**
     * {@link #safeFor()}, also bounded by what the daemon says ({@code safe_for_ms}, which counts
     * its ZooKeeper session too). One call to the daemon for a lock; a semaphore's or an
     * election's lease has the local figure only.
     */
    public Duration confirmSafeFor() {
        if (kind != Kind.LOCK) {
            return safeFor();
        }
        Duration daemon = client.status(name, leaseId).safeFor().orElse(Duration.ZERO);
        Duration local = safeFor();
        return daemon.compareTo(local) < 0 ? daemon : local;
    }

    /**
     * Renews now (the background renewal does this by itself unless it was switched off) and
     * answers the renewed lease.
     *
     * @throws LostException when the lease is lost (it is then marked lost)
     * @throws UnavailableException when the daemon could not renew it now
     */
    public LeaseInfo renew() {
        long sent = System.nanoTime();
        Duration timeout;
        synchronized (mu) {
            timeout = Duration.ofNanos(Math.max(deadline - sent, Duration.ofMillis(200).toNanos()));
        }
        ensureHeld();
        Client.Answer a;
        try {
            a = Client.await(client.renewAsync(kind, name, leaseId, token, timeout));
        } catch (SeqdException e) {
            failed(e, true);
            throw e;
        }
        if (!a.ok()) {
            SeqdException e = a.error();
            LostException end = failed(e, true);
            throw end != null ? end : e;
        }
        LeaseInfo renewed = LeaseInfo.from(a.body());
        synchronized (mu) {
            renewed(sent, renewed);
        }
        ensureHeld();
        return renewed;
    }

    /** Stops the renewal and releases the lease, unless it is already lost. Never throws. */
    @Override
    public void close() {
        boolean release;
        long left;
        synchronized (mu) {
            if (state == State.CLOSED) {
                return;
            }
            expireIfDue();
            release = state == State.HELD;
            left = deadline - System.nanoTime();
            state = State.CLOSED;
            cancelTimers();
        }
        publish();
        client.forget(this);
        if (release) {
            long cap = client.requestTimeout().toNanos();
            Duration timeout = Duration.ofNanos(Math.min(cap, Math.max(left, Duration.ofSeconds(1).toNanos())));
            try {
                client.release(kind, name, leaseId, token, timeout);
            } catch (SeqdException e) {
                if (e.status() != 409) { // 409: it ended meanwhile, nothing left to release
                    Client.warn("seqd: could not release the lease on " + name + "; it ends at its TTL", e);
                }
            }
            lost.cancel(false);
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + sequencer + (isHeld() ? "" : ", not held") + "]";
    }

    // ---- Renewal.

    /** Sets the first deadline and starts the timers; renews first if the grant came late. */
    void start(long sent) {
        synchronized (mu) {
            deadline = sent + ttlNanos;
        }
        if (System.nanoTime() - sent > ttlNanos / RENEW_DIVISOR) {
            renewLateGrant();
        }
        synchronized (mu) {
            scheduleDeadline();
            if (autoRenew) {
                scheduleRenew(sent + ttlNanos / RENEW_DIVISOR - System.nanoTime());
            }
        }
    }

    /**
     * The acquire waited: its grant, and the daemon's TTL, started at a moment after it was sent
     * that we cannot know, so the first deadline (sent + TTL) may be far too early, even past. A
     * renewal now gives a deadline we can measure. Should it fail, the lease is handed out only
     * while that first deadline holds.
     */
    private void renewLateGrant() {
        long sent = System.nanoTime();
        SeqdException failure;
        try {
            // Not much past the grant's own deadline (the lease is not handed out meanwhile), but
            // long enough for a loaded daemon to answer.
            long left;
            synchronized (mu) {
                left = deadline - sent;
            }
            Duration timeout = Duration.ofNanos(Math.min(client.requestTimeout().toNanos(), Math.max(Duration.ofSeconds(1).toNanos(), left)));
            Client.Answer a = Client.await(client.renewAsync(kind, name, leaseId, token, timeout));
            if (a.ok()) {
                synchronized (mu) {
                    renewed(sent, LeaseInfo.from(a.body()));
                }
                return;
            }
            failure = a.error();
        } catch (SeqdException e) {
            failure = e;
        }
        LostException end = failed(failure, true);
        if (end != null) {
            throw end;
        }
        ensureHeld(); // throws once the first deadline has passed
    }

    private void renewTick() {
        long sent;
        Duration timeout;
        synchronized (mu) {
            renewTask = null;
            expireIfDue();
            if (state != State.HELD || inFlight) {
                sent = -1;
                timeout = null;
            } else {
                inFlight = true;
                sent = System.nanoTime();
                // An answer after the deadline is of no use: wait no longer than that, nor
                // much longer than a renewal interval.
                long wait = Math.min(deadline - sent, ttlNanos / RENEW_DIVISOR);
                timeout = Duration.ofNanos(Math.max(wait, Duration.ofMillis(200).toNanos()));
            }
        }
        if (timeout == null) {
            publish();
            return;
        }
        client.renewAsync(kind, name, leaseId, token, timeout).whenComplete((a, err) -> {
            synchronized (mu) {
                inFlight = false;
                if (state != State.HELD) {
                    return;
                }
                if (err == null && a.ok()) {
                    renewed(sent, LeaseInfo.from(a.body()));
                    scheduleRenew(sent + ttlNanos / RENEW_DIVISOR - System.nanoTime());
                    return;
                }
            }
            SeqdException e = err != null ? Client.asSeqd(err) : a.error();
            if (failed(e, true) == null) {
                synchronized (mu) {
                    if (state == State.HELD) {
                        scheduleRenew(retryDelay());
                    }
                }
            }
        });
    }

    /** Retries of a failed renewal come faster than renewals, so that one can land in time. */
    private long retryDelay() {
        long d = ttlNanos / RENEW_DIVISOR / RETRY_DIVISOR;
        return Math.max(Duration.ofMillis(50).toNanos(), Math.min(d, Duration.ofSeconds(2).toNanos()));
    }

    /** Records a successful renewal sent at sent. Needs mu. */
    private void renewed(long sent, LeaseInfo renewed) {
        if (state != State.HELD) {
            return;
        }
        info = renewed;
        if (renewed.ttl() != null) {
            ttlNanos = renewed.ttl().toNanos();
        }
        long d = sent + ttlNanos;
        if (d - deadline > 0) {
            deadline = d;
        }
        lastFailure = null;
        scheduleDeadline();
    }

    /**
     * Records a failed call on the lease: an answer that says the lease has ended (409, or for a
     * renewal a 400/404 that no retry can fix) loses it at once, and is returned; other failures
     * are kept for the deadline's message and the renewal tries again.
     */
    LostException failed(SeqdException e, boolean renewal) {
        LostException end = null;
        synchronized (mu) {
            lastFailure = e;
            int s = e.status();
            if (state == State.HELD && e instanceof ProtocolException) {
                // An answer that cannot be trusted: nothing says the lease still holds.
                end = new LostException("the lease on " + name + " is lost: its renewal's answer broke the protocol: "
                        + e.getMessage(), s, "protocol", null, e);
                endLocked(end);
            } else if (state == State.HELD && (s == 409 || (renewal && (s == 400 || s == 404)))) {
                end = e instanceof LostException le ? le
                        : new LostException(e.getMessage(), s, e.code(),
                                e.currentToken().isPresent() ? e.currentToken().getAsLong() : null, e);
                endLocked(end);
            }
        }
        publish();
        return end;
    }

    /** Loses a held lease whose deadline has passed. Needs mu; call publish() after. */
    private void expireIfDue() {
        if (state != State.HELD || System.nanoTime() - deadline < 0) {
            return;
        }
        String msg = "the lease on " + name + " (token " + Long.toUnsignedString(token)
                + ") passed its deadline without a successful renewal";
        if (lastFailure != null) {
            msg += "; last failure: " + lastFailure.getMessage();
        } else if (!autoRenew) {
            msg += " (renewal is off)";
        }
        endLocked(new LostException(msg, 0, "expired", null, lastFailure));
    }

    private void endLocked(LostException why) {
        state = State.LOST;
        ended = why;
        cancelTimers();
        client.forget(this);
    }

    /**
     * Completes lost() once the lease has ended. Called outside mu, so that lost()'s callbacks
     * cannot block the lease's other users.
     */
    private void publish() {
        LostException why;
        synchronized (mu) {
            why = ended;
        }
        if (why != null) {
            lost.complete(why);
        }
    }

    private void scheduleRenew(long delayNanos) {
        if (renewTask != null) {
            renewTask.cancel(false);
        }
        renewTask = schedule(this::renewTick, delayNanos);
    }

    private void scheduleDeadline() {
        if (deadlineTask != null) {
            deadlineTask.cancel(false);
        }
        deadlineTask = schedule(() -> {
            synchronized (mu) {
                expireIfDue();
                if (state == State.HELD) {
                    scheduleDeadline();
                }
            }
            publish();
        }, deadline - System.nanoTime());
    }

    private ScheduledFuture<?> schedule(Runnable r, long delayNanos) {
        try {
            return client.timers.schedule(r, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return null; // the client was closed
        }
    }

    private void cancelTimers() {
        if (renewTask != null) {
            renewTask.cancel(false);
            renewTask = null;
        }
        if (deadlineTask != null) {
            deadlineTask.cancel(false);
            deadlineTask = null;
        }
    }

    /** Keeps the answer of a call that does not renew (proclaim) as the latest lease. */
    void setInfo(LeaseInfo latest) {
        synchronized (mu) {
            info = latest;
        }
    }
}

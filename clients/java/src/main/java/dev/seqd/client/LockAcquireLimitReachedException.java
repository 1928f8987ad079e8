package dev.seqd.client;

/**
 * A re-entry of a {@link SeqdLock} by the thread that holds it was refused: that thread already
 * holds it as many times as the lock's acquire limit allows ({@link
 * SeqdLock.Builder#acquireLimit(int)}; with a limit of 1 the lock is not reentrant). Thrown by
 * {@code lock()}, {@code lockInterruptibly()} and {@code lockAndGetFence()}; the {@code tryLock}
 * methods answer {@code false} (or {@link SeqdLock#INVALID_FENCE}) instead. The hold is unchanged.
 */
public class LockAcquireLimitReachedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    LockAcquireLimitReachedException(String message) {
        super(message);
    }
}

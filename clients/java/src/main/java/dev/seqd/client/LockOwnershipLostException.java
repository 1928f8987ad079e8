package dev.seqd.client;

/**
 * A {@link SeqdLock} that this thread holds was lost: its lease ended (a renewal answered 409, an
 * operator broke it, or its deadline passed without a successful renewal). Thrown by {@link
 * SeqdLock#getFence()}, {@link SeqdLock#unlock()} and a re-entry from then on: the fence of that
 * hold is no longer valid, and whatever ran under the lock since the loss was not protected by it
 * (a fenced resource refuses its writes). {@link #getCause()} is the {@link LostException} saying
 * why, when the lease was lost (rather than closed with its {@link Client}).
 */
public class LockOwnershipLostException extends IllegalMonitorStateException {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final long fence;

    LockOwnershipLostException(String message, String name, long fence, Throwable cause) {
        super(message);
        this.name = name;
        this.fence = fence;
        if (cause != null) {
            initCause(cause);
        }
    }

    /** The lock's name. */
    public String lockName() {
        return name;
    }

    /** The fence of the hold that was lost (unsigned, in a long): no longer valid. */
    public long fence() {
        return fence;
    }
}

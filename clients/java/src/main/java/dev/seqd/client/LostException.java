package dev.seqd.client;

/**
 * A lease has ended: the daemon answered 409 {@code lost} or {@code broken} (an operator broke
 * it), or, as the reason a held {@link Lease} was lost, {@code stale_token} (someone else holds
 * the lock now) or {@code expired} (its deadline passed without a successful renewal, e.g. while
 * the daemon could not be reached). {@link #getCause()} is the failure behind it, if any.
 */
public class LostException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public LostException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

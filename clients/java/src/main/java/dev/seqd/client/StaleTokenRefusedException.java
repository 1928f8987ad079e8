package dev.seqd.client;

/**
 * 409 stale_token: the daemon refused a token below the lock's current one ({@link
 * #currentToken()}). Not {@code StaleTokenException}, the name of the resource side's {@link
 * dev.seqd.fence.StaleTokenException}, so that a program may import both packages whole.
 */
public class StaleTokenRefusedException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public StaleTokenRefusedException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

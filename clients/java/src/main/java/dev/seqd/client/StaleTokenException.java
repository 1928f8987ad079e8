package dev.seqd.client;

/** 409 stale_token: the token is below the lock's current one ({@link #currentToken()}). */
public class StaleTokenException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public StaleTokenException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

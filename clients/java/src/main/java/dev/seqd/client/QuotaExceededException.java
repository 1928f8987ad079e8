package dev.seqd.client;

/**
 * 429 quota_exceeded: the request would take the caller beyond its quota in the daemon's policy
 * file (the message names it). Nothing changed.
 */
public class QuotaExceededException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public QuotaExceededException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

package dev.seqd.client;

/** The daemon could not be reached (status 0: refused, timed out, TLS failed), or it answered 503 because ZooKeeper cannot be reached now. Try again. */
public class UnavailableException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public UnavailableException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

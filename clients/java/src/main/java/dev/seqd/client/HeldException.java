package dev.seqd.client;

/** 409 held: the lock (or semaphore, or election) was not granted within the wait. */
public class HeldException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public HeldException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

package dev.seqd.client;

/**
 * The daemon's answer broke the protocol (code {@code protocol}): not JSON, not {@code
 * application/json}, of the wrong shape, cut short, for another lock or lease, or with a token
 * that is not an integer in 1..2^64-1 or that changed. The message names the daemon and quotes
 * what it sent (at most 200 bytes, never the API token). Something other than seqd answered (a
 * proxy, a wrong port) or the daemon is broken: nothing of it is trusted, and a held lease that
 * gets such an answer is lost at once.
 */
public class ProtocolException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message, int status, Throwable cause) {
        super(message, status, "protocol", null, cause);
    }
}

package dev.seqd.client;

/**
 * 403 forbidden: the daemon's policy file does not allow this caller the request (the message
 * names the rule), or a break without the admin token. Nothing changed.
 */
public class ForbiddenException extends UnauthorizedException {
    private static final long serialVersionUID = 1L;

    public ForbiddenException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

package dev.seqd.client;

/** 401 unauthorized: a missing or wrong bearer token (give {@code SEQD_API_TOKEN_FILE}). */
public class UnauthorizedException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public UnauthorizedException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

package dev.seqd.client;

/** 400 bad_request: a bad name, a duration out of range, or another invalid argument; the message says which. */
public class BadRequestException extends SeqdException {
    private static final long serialVersionUID = 1L;

    public BadRequestException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, status, code, currentToken, cause);
    }
}

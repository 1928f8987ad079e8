package dev.seqd.client;

import java.util.OptionalLong;

/**
 * A call to the daemon failed, or a lease ended. Unchecked; the subclasses name the cases a
 * program handles: {@link HeldException}, {@link StaleTokenRefusedException}, {@link LostException},
 * {@link UnavailableException}, {@link UnauthorizedException} (and {@link ForbiddenException}),
 * {@link QuotaExceededException}, {@link BadRequestException}.
 * Other answers (403 {@code bad_signature}, 409 {@code limit_mismatch}, 404, 500) are this base
 * type with their code.
 */
public class SeqdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final Long currentToken;

    public SeqdException(String message, int status, String code, Long currentToken, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.code = code;
        this.currentToken = currentToken;
    }

    /** The HTTP status of the answer; 0 when there was none (the daemon could not be reached). */
    public int status() {
        return status;
    }

    /**
     * The daemon's code ({@code held}, {@code stale_token}, {@code lost}, {@code broken}, {@code
     * unavailable}, {@code unauthorized}, {@code bad_request}, …), or {@code expired} for a lease
     * whose deadline passed without a successful renewal.
     */
    public String code() {
        return code;
    }

    /** The lock's current token where the daemon named one (unsigned, in a long). */
    public OptionalLong currentToken() {
        return currentToken == null ? OptionalLong.empty() : OptionalLong.of(currentToken);
    }

    /** The exception of the type that fits a status and code. */
    static SeqdException of(int status, String code, String message, Long current, Throwable cause) {
        if (status == 401 || code.equals("unauthorized")) {
            return new UnauthorizedException(message, status, code, current, cause);
        }
        if (status == 400) {
            return new BadRequestException(message, status, code, current, cause);
        }
        if (status == 0 || status == 503 || code.equals("unavailable")) {
            return new UnavailableException(message, status, code, current, cause);
        }
        switch (code) {
            case "held":
                return new HeldException(message, status, code, current, cause);
            case "stale_token":
                return new StaleTokenRefusedException(message, status, code, current, cause);
            case "lost":
            case "broken":
                return new LostException(message, status, code, current, cause);
            case "forbidden":
                return new ForbiddenException(message, status, code, current, cause);
            case "quota_exceeded":
                return new QuotaExceededException(message, status, code, current, cause);
            default:
                return new SeqdException(message, status, code, current, cause);
        }
    }
}

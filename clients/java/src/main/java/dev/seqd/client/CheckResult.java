package dev.seqd.client;

import java.util.Map;

/**
 * The answer of {@code POST /v1/check}: whether a token is the current holder's.
 *
 * @param valid whether it is
 * @param currentToken the lock's current token (unsigned; 0 when none is known)
 * @param code when not valid: "stale_token" (below the current one) or "not_held"
 * @param error when not valid, a sentence saying why
 */
public record CheckResult(boolean valid, long currentToken, String code, String error) {
    static CheckResult from(Map<String, Object> m) {
        return new CheckResult(Json.bool(m, "valid"), Json.unsigned(m, "current_token"),
                Json.str(m, "code"), Json.str(m, "error"));
    }
}

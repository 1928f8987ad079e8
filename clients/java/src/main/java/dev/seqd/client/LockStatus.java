package dev.seqd.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * A lock's state, read from ZooKeeper ({@code GET /v1/locks/{name}}), so that it shows holders
 * on any daemon.
 *
 * @param name the lock's name
 * @param held whether anyone holds the lock now
 * @param token the current token (unsigned; 0 when none is known)
 * @param owner the holder's owner, "" when unknown
 * @param command the command a {@code seqd lock} holder runs, "" otherwise
 * @param expiresAt when the holder's lease ends unless renewed; null unless the daemon asked
 *     granted it
 * @param waiters contenders queued behind the holder
 * @param safeFor how long the asker's own lease is guaranteed, only when the status was read
 *     with that lease's id
 * @param blockedBy a node no session owns that blocks the lock, "" when none
 * @param ownerRewritten whether the holder's owner was changed after its grant (not shown then)
 * @param index opaque (unsigned): send it back to {@link Client#waitStatus} to wait for a change
 */
public record LockStatus(
        String name,
        boolean held,
        long token,
        String owner,
        String command,
        Instant expiresAt,
        int waiters,
        Optional<Duration> safeFor,
        String blockedBy,
        boolean ownerRewritten,
        long index) {

    static LockStatus from(Map<String, Object> m) {
        Long safe = Json.optUnsigned(m, "safe_for_ms");
        return new LockStatus(
                Json.str(m, "name"),
                Json.bool(m, "held"),
                Json.unsigned(m, "token"),
                Json.str(m, "owner"),
                Json.str(m, "command"),
                Json.instant(m, "expires_at"),
                Json.integer(m, "waiters"),
                Optional.ofNullable(safe).map(Duration::ofMillis),
                Json.str(m, "blocked_by"),
                Json.bool(m, "owner_rewritten"),
                Json.unsigned(m, "index"));
    }
}

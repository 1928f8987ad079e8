package dev.seqd.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * A lease as the daemon answers it (acquire, renew, campaign, proclaim).
 *
 * <p>{@code token} and {@code term} are unsigned 64-bit integers on the wire, held in a {@code
 * long}: compare them with {@link Long#compareUnsigned} and print them with {@link
 * Long#toUnsignedString(long)} (tokens of a real ZooKeeper stay far below 2^63, where the two
 * agree). The {@code sequencer} is opaque: pass it to resources unchanged.
 *
 * @param name the lock's, semaphore's or election's name
 * @param token the fencing token, the same across renewals
 * @param sequencer what a resource checks (it may carry a kind prefix and a signature)
 * @param leaseId the secret that, with the token, renews or releases the lease
 * @param owner the owner named at acquire
 * @param ttl how long the lease lives from its last renewal
 * @param expiresAt the daemon's clock's end of the lease unless renewed (for display: the
 *     client's own deadline is measured on its monotonic clock)
 * @param term an election's term (its token), 0 for other kinds
 * @param limit a semaphore's limit, 0 for other kinds
 * @param mode "shared" for a shared lease, "" for an exclusive one
 */
public record LeaseInfo(
        String name,
        long token,
        String sequencer,
        String leaseId,
        String owner,
        Duration ttl,
        Instant expiresAt,
        long term,
        int limit,
        String mode) {

    static LeaseInfo from(Map<String, Object> m) {
        return new LeaseInfo(
                Json.str(m, "name"),
                Json.unsigned(m, "token"),
                Json.str(m, "sequencer"),
                Json.str(m, "lease_id"),
                Json.str(m, "owner"),
                Json.duration(m, "ttl"),
                Json.instant(m, "expires_at"),
                Json.unsigned(m, "term"),
                Json.integer(m, "limit"),
                Json.str(m, "mode"));
    }
}

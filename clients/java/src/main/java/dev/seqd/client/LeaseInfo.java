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

    private static final java.util.regex.Pattern LEASE_ID = java.util.regex.Pattern.compile("[0-9a-f]{32}");
    private static final java.util.regex.Pattern DIGITS = java.util.regex.Pattern.compile("[0-9]+");

    /**
     * What is wrong with a lease the daemon answered for name, or null: the rules every seqd
     * client applies to a grant or a renewal (docs/clients.md). leaseId is the one the request
     * sent; token, on a renewal, the lease's (it never changes), else null. Lease ids are never
     * quoted: they are secrets.
     */
    static String problem(Map<String, Object> m, String name, String leaseId, Long token) {
        if (!(m.get("name") instanceof String n)) {
            return "the lease has no name";
        }
        if (!n.equals(name)) {
            return "the lease is for the name \"" + n + "\", not the requested \"" + name + "\"";
        }
        Object t = m.get("token");
        if (t == null) {
            return "the lease has no token";
        }
        if (!(t instanceof Json.Num num) || !DIGITS.matcher(num.text()).matches()) {
            return "the token " + (t instanceof String s ? "\"" + s + "\"" : t instanceof Json.Num x ? x.text() : String.valueOf(t))
                    + " is not a base-10 integer";
        }
        long v;
        try {
            v = Long.parseUnsignedLong(num.text());
        } catch (NumberFormatException e) {
            return "the token " + num.text() + " is out of the range 1..2^64-1";
        }
        if (v == 0) {
            return "the token 0 is out of the range 1..2^64-1";
        }
        if (token != null && v != token) {
            return "the token changed from " + Long.toUnsignedString(token) + " to " + Long.toUnsignedString(v)
                    + ": a lease's token never changes";
        }
        if (!(m.get("lease_id") instanceof String id) || !LEASE_ID.matcher(id).matches()) {
            return "the lease id is not 32 lowercase hex digits";
        }
        if (leaseId != null && !id.equals(leaseId)) {
            return "the lease id is not the one the request sent";
        }
        if (!(m.get("sequencer") instanceof String)) {
            return "the lease has no sequencer";
        }
        Duration ttl = null;
        try {
            ttl = m.get("ttl") instanceof String s ? Json.parseDuration(s) : null;
        } catch (IllegalArgumentException e) {
            // reported below
        }
        if (ttl == null || ttl.isNegative() || ttl.isZero()) {
            return "the ttl " + m.get("ttl") + " is not a positive duration";
        }
        return null;
    }

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

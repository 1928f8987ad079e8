package dev.seqd.client;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A multi-lock lease, as {@link Client#acquireMulti} and {@link Client#renewMulti} answer it:
 * every lock of {@code locks} held under the one lease id, renewed, released or lost together.
 *
 * @param locks the locks, in the order the acquire named them
 * @param leaseId the secret that renews or releases the lease
 * @param owner the owner named at acquire
 * @param ttl how long the lease lives from its last renewal
 * @param expiresAt the daemon's clock's end of the lease unless renewed
 */
public record MultiLease(List<Lock> locks, String leaseId, String owner, Duration ttl, Instant expiresAt) {
    /**
     * One lock of the lease.
     *
     * @param name the lock's name
     * @param token its fencing token (unsigned, in a long)
     * @param sequencer what that lock's resource checks
     */
    public record Lock(String name, long token, String sequencer) {}

    private static final Pattern LEASE_ID = Pattern.compile("[0-9a-f]{32}");
    private static final Pattern DIGITS = Pattern.compile("[0-9]+");

    /** Every lock's sequencer, space-separated (as {@code SEQD_SEQUENCERS}). */
    public String sequencers() {
        return locks.stream().map(Lock::sequencer).collect(Collectors.joining(" "));
    }

    @SuppressWarnings("unchecked")
    static MultiLease from(Map<String, Object> m) {
        List<Lock> locks = new ArrayList<>();
        if (m.get("locks") instanceof List<?> l) {
            for (Object o : l) {
                if (o instanceof Map<?, ?> x) {
                    Map<String, Object> lk = (Map<String, Object>) x;
                    locks.add(new Lock(Json.str(lk, "name"), Json.unsigned(lk, "token"), Json.str(lk, "sequencer")));
                }
            }
        }
        return new MultiLease(List.copyOf(locks), Json.str(m, "lease_id"), Json.str(m, "owner"), Json.duration(m, "ttl"),
                Json.instant(m, "expires_at"));
    }

    /**
     * What is wrong with a multi-lock lease the daemon answered, or null: one lock per name asked
     * for, in that order, each with a token in 1..2^64-1; on a renewal (tokens not null), each
     * token unchanged.
     */
    @SuppressWarnings("unchecked")
    static String problem(Map<String, Object> m, List<String> names, String leaseId, List<Long> tokens) {
        if (!(m.get("lease_id") instanceof String id) || !LEASE_ID.matcher(id).matches()) {
            return "the lease id is not 32 lowercase hex digits";
        }
        if (!id.equals(leaseId)) {
            return "the lease id is not the one the request sent";
        }
        if (!(m.get("locks") instanceof List<?> locks) || locks.size() != names.size()) {
            return "the lease does not list the " + names.size() + " locks asked for";
        }
        for (int i = 0; i < names.size(); i++) {
            if (!(locks.get(i) instanceof Map<?, ?> x) || !names.get(i).equals(((Map<String, Object>) x).get("name"))) {
                return "lock " + i + " of the lease is not the requested \"" + names.get(i) + "\"";
            }
            Object t = ((Map<String, Object>) x).get("token");
            if (!(t instanceof Json.Num num) || !DIGITS.matcher(num.text()).matches()) {
                return "the token of \"" + names.get(i) + "\" is not a base-10 integer";
            }
            long v;
            try {
                v = Long.parseUnsignedLong(num.text());
            } catch (NumberFormatException e) {
                v = 0;
            }
            if (v == 0) {
                return "the token " + num.text() + " of \"" + names.get(i) + "\" is out of the range 1..2^64-1";
            }
            if (tokens != null && v != tokens.get(i)) {
                return "the token of \"" + names.get(i) + "\" changed from " + Long.toUnsignedString(tokens.get(i)) + " to "
                        + Long.toUnsignedString(v) + ": a lease's token never changes";
            }
        }
        return null;
    }
}

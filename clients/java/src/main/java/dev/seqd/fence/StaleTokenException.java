package dev.seqd.fence;

/**
 * A token below the highest one already used for {@link #key()}: its holder lost the lock and a
 * newer holder ({@link #max()}) has acted since. Nothing was written. Tokens are unsigned 64-bit
 * values in a {@code long}: compare them with {@link Long#compareUnsigned}.
 */
public class StaleTokenException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String key;
    private final long token;
    private final long max;

    public StaleTokenException(String key, long token, long max) {
        super("stale token " + Long.toUnsignedString(token) + " for \"" + key
                + "\": a newer holder already used token " + Long.toUnsignedString(max));
        this.key = key;
        this.token = token;
        this.max = max;
    }

    public String key() {
        return key;
    }

    /** The token presented (unsigned). */
    public long token() {
        return token;
    }

    /** The highest token used for the key (unsigned). */
    public long max() {
        return max;
    }
}

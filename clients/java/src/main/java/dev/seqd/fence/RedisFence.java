package dev.seqd.fence;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Fenced Redis commands: one Lua script compares the token with the key's max and, if it is not
 * below it, runs the command and raises the max, atomically (Redis runs a script with nothing in
 * between). It runs through the Redis client the application already has, behind {@link
 * ScriptRunner}: {@code (script, keys, args) -> jedis.eval(script, keys, args)} with Jedis, {@code
 * commands.eval(script, ScriptOutputType.MULTI, keys, args)} with Lettuce.
 *
 * <p>The max of key {@code K} lives in the Redis key {@code seqd_fence:K} (the prefix is an
 * option) as 20 zero-padded digits: Lua's numbers are doubles, exact only to 2^53, so the script
 * compares tokens as strings of equal length, which compares the 64-bit numbers exactly. The Go,
 * Python and JavaScript helpers use the same script and keys. The max survives a crash only with
 * AOF on and {@code appendfsync always}; {@link #open} refuses a Redis that reports no AOF.
 */
public final class RedisFence {
    /** Evaluates a Lua script (EVAL): the one thing the fence needs of a Redis client. */
    @FunctionalInterface
    public interface ScriptRunner {
        /**
         * The script's reply: an array as a {@code List}, integers as {@code Long}, strings as
         * {@code String} or {@code byte[]}, nil as {@code null}.
         */
        Object eval(String script, List<String> keys, List<String> args) throws Exception;
    }

    /** Redis reports no AOF: a restart would forget every max. */
    public static final class PersistenceException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        public PersistenceException(String message) {
            super(message);
        }
    }

    /** The fence script: KEYS[1] the fence key, ARGV[1] the token padded to 20 digits, ARGV[2..] the command. */
    public static final String SCRIPT = """
            local tok = ARGV[1]
            if #tok ~= 20 or not tok:match('^%d+$') then
              return redis.error_reply('seqd fence: the token must be 20 zero-padded digits')
            end
            local max = redis.call('GET', KEYS[1])
            if max and max > tok then
              return {0, max}
            end
            local res = false
            if #ARGV > 1 then
              res = redis.call(unpack(ARGV, 2))
            end
            if max ~= tok then
              redis.call('SET', KEYS[1], tok)
            end
            return {1, tok, res}
            """;

    private static final String INFO = "return redis.call('INFO', 'persistence')";

    private final ScriptRunner redis;
    private final String prefix;

    private RedisFence(ScriptRunner redis, String prefix) {
        this.redis = redis;
        this.prefix = prefix;
    }

    /**
     * A fence on {@code redis} with keys {@code seqd_fence:<key>}, after checking that Redis
     * reports AOF on: {@link PersistenceException} if not.
     */
    public static RedisFence open(ScriptRunner redis) throws Exception {
        return open(redis, "seqd_fence:", true);
    }

    /** A fence with another key prefix; with {@code requireAof} false, no AOF is a warning on stderr. */
    public static RedisFence open(ScriptRunner redis, String prefix, boolean requireAof) throws Exception {
        String info = text(redis.eval(INFO, List.of(), List.of()));
        if (!info.lines().anyMatch(l -> l.strip().equals("aof_enabled:1"))) {
            String msg = "Redis reports no AOF (aof_enabled:0): a restart forgets every fence's max; set appendonly yes and appendfsync always";
            if (requireAof) {
                throw new PersistenceException(msg);
            }
            System.Logger log = System.getLogger("dev.seqd.fence");
            log.log(System.Logger.Level.WARNING, msg);
        }
        return new RedisFence(redis, prefix);
    }

    /**
     * Runs {@code command} (e.g. {@code "SET", "k", "v"}) if {@code token} (unsigned) is not below
     * {@code key}'s max, and raises the max to it; returns the command's reply. Throws {@link
     * StaleTokenException}, running nothing, if a higher token was used. With no command only the
     * max moves. {@code keys} declares the keys the command touches (for a cluster).
     */
    public Object call(String key, long token, List<String> keys, String... command) throws Exception {
        if (token == 0) {
            throw new IllegalArgumentException("a fencing token is in 1..2^64-1, not 0");
        }
        List<String> ks = new ArrayList<>(1 + keys.size());
        ks.add(prefix + key);
        ks.addAll(keys);
        String padded = "0".repeat(20 - Long.toUnsignedString(token).length()) + Long.toUnsignedString(token);
        List<String> args = new ArrayList<>(1 + command.length);
        args.add(padded);
        args.addAll(Arrays.asList(command));
        Object reply = redis.eval(SCRIPT, ks, args);
        if (!(reply instanceof List<?> r) || r.size() < 2) {
            throw new IllegalStateException("the fence script answered " + reply + ", not a list");
        }
        if (((Number) r.get(0)).longValue() != 1) {
            throw new StaleTokenException(key, token, Long.parseUnsignedLong(text(r.get(1))));
        }
        return r.size() > 2 ? r.get(2) : null;
    }

    /** Runs {@code command} fenced, on a key that no other declared key goes with. */
    public Object call(String key, long token, String... command) throws Exception {
        return call(key, token, List.of(), command);
    }

    /** Raises {@code key}'s max to {@code token}, or throws StaleTokenException. */
    public void admit(String key, long token) throws Exception {
        call(key, token, List.of());
    }

    private static String text(Object v) {
        return v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(v);
    }
}

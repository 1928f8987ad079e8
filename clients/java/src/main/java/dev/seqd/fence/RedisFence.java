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
 * <p>The max lives in a Redis key of its own (the fence key, which the caller names) as 20
 * zero-padded digits: Lua's numbers are doubles, exact only to 2^53, so the script compares tokens
 * as strings of equal length, which compares the 64-bit numbers exactly. The Go, Python and
 * JavaScript helpers run the same script. The max survives a crash only with the append-only file
 * on and {@code appendfsync always}; {@link #open} refuses a Redis that reports no append-only
 * file.
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

    /**
     * The fence script, the same text as the Go, Python and JavaScript helpers'. KEYS[1] is the
     * fence key, ARGV[1] the token as 20 zero-padded digits; ARGV[2], if given, a command, with
     * KEYS[2..] its keys (first) and ARGV[3..] its other arguments. It answers {1, the command's
     * reply} when admitted and {0, the max} when refused.
     */
    public static final String SCRIPT = """

            local max = redis.call('GET', KEYS[1])
            if max then
              if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
                return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
              end
              if max > ARGV[1] then
                return {0, max}
              end
            end
            if max ~= ARGV[1] then
              redis.call('SET', KEYS[1], ARGV[1])
            end
            if #ARGV < 2 then
              return {1}
            end
            local args = {ARGV[2]}
            for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
            for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
            return {1, redis.call(unpack(args))}
            """;

    private static final String INFO = "return redis.call('INFO', 'persistence')";

    private final ScriptRunner redis;

    private RedisFence(ScriptRunner redis) {
        this.redis = redis;
    }

    /**
     * A fence on {@code redis}, after checking that Redis reports the append-only file on: {@link
     * PersistenceException} if not.
     */
    public static RedisFence open(ScriptRunner redis) throws Exception {
        return open(redis, true);
    }

    /** A fence on {@code redis}; with {@code requireAof} false, no append-only file is a warning (System.Logger "dev.seqd.fence"). */
    public static RedisFence open(ScriptRunner redis, boolean requireAof) throws Exception {
        String info = persistenceInfo(redis);
        if (!info.lines().anyMatch(l -> l.strip().equals("aof_enabled:1"))) {
            String msg = "Redis runs without the append-only file (aof_enabled:0): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always";
            if (requireAof) {
                throw new PersistenceException(msg);
            }
            System.getLogger("dev.seqd.fence").log(System.Logger.Level.WARNING, msg);
        }
        return new RedisFence(redis);
    }

    /**
     * Runs {@code command} with its {@code keys} (first) and {@code args} if {@code token}
     * (unsigned) is not below the max kept in the Redis key {@code fenceKey}, and raises that max
     * to it, atomically; returns the command's reply: {@code fence.call("fence:orders", token,
     * "HSET", List.of("orders"), "42", "shipped")}. Throws {@link StaleTokenException}, running
     * nothing, if a higher token was used. Only commands whose keys come first fit.
     */
    public Object call(String fenceKey, long token, String command, List<String> keys, String... args) throws Exception {
        if (token == 0) {
            throw new IllegalArgumentException("a fencing token is in 1..2^64-1, not 0");
        }
        if ((command == null || command.isEmpty()) && (!keys.isEmpty() || args.length > 0)) {
            throw new IllegalArgumentException("a command with keys or arguments and no name");
        }
        List<String> ks = new ArrayList<>(1 + keys.size());
        ks.add(fenceKey);
        ks.addAll(keys);
        String t = Long.toUnsignedString(token);
        List<String> argv = new ArrayList<>(2 + args.length);
        argv.add("0".repeat(20 - t.length()) + t);
        if (command != null && !command.isEmpty()) {
            argv.add(command);
            argv.addAll(Arrays.asList(args));
        }
        Object reply = redis.eval(SCRIPT, ks, argv);
        if (!(reply instanceof List<?> r) || r.isEmpty()) {
            throw new IllegalStateException("the fence script answered " + reply + ", not a list");
        }
        if (((Number) r.get(0)).longValue() != 1) {
            throw new StaleTokenException(fenceKey, token, r.size() > 1 ? Long.parseUnsignedLong(text(r.get(1))) : 0);
        }
        return r.size() > 1 ? r.get(1) : null;
    }

    /** Raises the max in {@code fenceKey} to {@code token}, or throws StaleTokenException. */
    public void admit(String fenceKey, long token) throws Exception {
        call(fenceKey, token, "", List.of());
    }

    /**
     * INFO persistence, once Redis has loaded its data: while it loads it refuses scripts
     * (LOADING) and reports AOF off (it turns AOF off while replaying the file). Waits 30s at most.
     */
    private static String persistenceInfo(ScriptRunner redis) throws Exception {
        long end = System.nanoTime() + 30_000_000_000L;
        while (true) {
            try {
                String info = text(redis.eval(INFO, List.of(), List.of()));
                if (!info.lines().anyMatch(l -> l.strip().equals("loading:1")) || System.nanoTime() > end) {
                    return info;
                }
            } catch (Exception e) {
                if (!String.valueOf(e.getMessage()).startsWith("LOADING") || System.nanoTime() > end) {
                    throw e;
                }
            }
            Thread.sleep(50);
        }
    }

    private static String text(Object v) {
        return v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(v);
    }
}

package dev.seqd.fence;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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
 * <p>The script is the file the Go, Python and JavaScript helpers run too ({@code
 * fence/redisfence/fence.lua} in seqd's repository, a resource of this jar, {@code
 * dev/seqd/fence/fence.lua}, that the build copies in). The max lives in a Redis key of its own,
 * {@link #PREFIX} followed by the fence key the caller names, as 20 zero-padded digits: Lua's
 * numbers are doubles, exact only to 2^53, so the script compares tokens as strings of equal
 * length, which compares the 64-bit numbers exactly. It refuses ({@link RefusedCommandException})
 * a command that names a key under {@link #PREFIX} (as {@code COMMAND GETKEYS} reads it), a write
 * that names no key (FLUSHDB, FLUSHALL, SWAPDB) and a script, and clears any TTL a fence key was
 * given.
 *
 * <p>The max survives a crash only with the append-only file on and {@code appendfsync always},
 * and an eviction policy of {@code allkeys-*} lets Redis evict it. {@link #open} refuses a Redis
 * that reports no append-only file or such a policy, and a fence reads both again every {@link
 * #RECHECK} (on its clock) before it admits, refusing ({@link PersistenceException}) while either
 * is unsafe.
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

    /** Redis reports no AOF, or an eviction policy that can evict a fence key. */
    public static final class PersistenceException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        public PersistenceException(String message) {
            super(message);
        }
    }

    /** The script refused the fenced command, which could have reset a max. */
    public static final class RefusedCommandException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        public RefusedCommandException(String message) {
            super(message);
        }
    }

    /**
     * The fence script, {@code fence.lua}. KEYS[1] is the fence key (under {@link #PREFIX}), ARGV[1]
     * the token as 20 zero-padded digits; ARGV[2], if given, a command, with KEYS[2..] its keys
     * (first) and ARGV[3..] its other arguments. It answers {1, the command's reply} when admitted,
     * {0, the max} when refused as stale and {2, a sentence} when the command is refused.
     */
    public static final String SCRIPT = loadScript();

    /** The prefix of every fence key; the script refuses commands that name a key under it. */
    public static final String PREFIX = "seqd:fence:";

    /** How often a fence reads Redis's persistence and eviction settings again. */
    public static final Duration RECHECK = Duration.ofSeconds(10);

    private static final String INFO = "return redis.call('INFO', 'persistence') .. redis.call('INFO', 'memory')";
    private static final String GET = "return redis.call('GET', KEYS[1])";

    private final ScriptRunner redis;
    private final boolean requireAof;
    private final Clock clock;
    private Instant checkedAt;
    private String unsafe;

    private RedisFence(ScriptRunner redis, boolean requireAof, Clock clock) {
        this.redis = redis;
        this.requireAof = requireAof;
        this.clock = clock;
    }

    private static String loadScript() {
        try (InputStream in = RedisFence.class.getResourceAsStream("fence.lua")) {
            if (in == null) {
                throw new IllegalStateException("dev/seqd/fence/fence.lua, the fence script, is missing from the classpath: build with build.sh, which copies it in");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A fence on {@code redis}, after checking that Redis reports the append-only file on and no
     * eviction policy that can evict a fence key: {@link PersistenceException} if not.
     */
    public static RedisFence open(ScriptRunner redis) throws Exception {
        return open(redis, true, Clock.systemUTC());
    }

    /** A fence on {@code redis}; with {@code requireAof} false, no append-only file is a warning (System.Logger "dev.seqd.fence"). */
    public static RedisFence open(ScriptRunner redis, boolean requireAof) throws Exception {
        return open(redis, requireAof, Clock.systemUTC());
    }

    /** A fence on {@code redis} whose rereads of Redis's settings ({@link #RECHECK}) run on {@code clock}. */
    public static RedisFence open(ScriptRunner redis, boolean requireAof, Clock clock) throws Exception {
        RedisFence f = new RedisFence(redis, requireAof, clock);
        f.unsafe = f.check(true);
        if (f.unsafe != null) {
            throw new PersistenceException(f.unsafe);
        }
        return f;
    }

    /** Reads Redis's settings again now; throws {@link PersistenceException} while they are unsafe. */
    public synchronized void recheck() throws Exception {
        unsafe = check(false);
        if (unsafe != null) {
            throw new PersistenceException(unsafe);
        }
    }

    private synchronized void safe() throws Exception {
        if (unsafe == null && Duration.between(checkedAt, clock.instant()).compareTo(RECHECK) < 0) {
            return;
        }
        recheck();
    }

    private String check(boolean warn) throws Exception {
        String info = settingsInfo(redis);
        checkedAt = clock.instant();
        String policy = info.lines().map(String::strip).filter(l -> l.startsWith("maxmemory_policy:")).map(l -> l.substring(17)).findFirst().orElse("");
        if (policy.startsWith("allkeys-")) {
            return "Redis's maxmemory-policy is " + policy + ", which can evict keys without a TTL: an evicted fence key forgets its max and lets stale holders in; set maxmemory-policy noeviction or a volatile-* policy";
        }
        if (!info.lines().anyMatch(l -> l.strip().equals("aof_enabled:1"))) {
            String msg = "Redis runs without the append-only file (aof_enabled:0): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always";
            if (requireAof) {
                return msg;
            }
            if (warn) {
                System.getLogger("dev.seqd.fence").log(System.Logger.Level.WARNING, msg);
            }
        }
        return null;
    }

    /**
     * Runs {@code command} with its {@code keys} (first) and {@code args} if {@code token}
     * (unsigned) is not below the max kept for {@code fenceKey} (in the Redis key {@link #PREFIX}
     * + fenceKey), and raises that max to it, atomically; returns the command's reply: {@code
     * fence.call("orders", token, "HSET", List.of("orders"), "42", "shipped")}. Throws {@link
     * StaleTokenException}, running nothing, if a higher token was used; {@link
     * RefusedCommandException} if the command could reset a max; {@link PersistenceException} if
     * Redis's settings became unsafe. Only commands whose keys come first fit.
     */
    public Object call(String fenceKey, long token, String command, List<String> keys, String... args) throws Exception {
        if (token == 0) {
            throw new IllegalArgumentException("a fencing token is in 1..2^64-1, not 0");
        }
        if ((command == null || command.isEmpty()) && (!keys.isEmpty() || args.length > 0)) {
            throw new IllegalArgumentException("a command with keys or arguments and no name");
        }
        safe();
        List<String> ks = new ArrayList<>(1 + keys.size());
        ks.add(PREFIX + fenceKey);
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
        long code = ((Number) r.get(0)).longValue();
        if (code == 1) {
            return r.size() > 1 ? r.get(1) : null;
        }
        if (code == 2) {
            throw new RefusedCommandException(text(r.get(1)));
        }
        throw new StaleTokenException(fenceKey, token, r.size() > 1 ? Long.parseUnsignedLong(text(r.get(1))) : 0);
    }

    /** Raises the max of {@code fenceKey} to {@code token}, or throws StaleTokenException. */
    public void admit(String fenceKey, long token) throws Exception {
        call(fenceKey, token, "", List.of());
    }

    /** The max of {@code fenceKey} (unsigned), 0 if no token was used yet. */
    public long max(String fenceKey) throws Exception {
        Object v = redis.eval(GET, List.of(PREFIX + fenceKey), List.of());
        return v == null ? 0 : Long.parseUnsignedLong(text(v));
    }

    /**
     * INFO persistence and memory, once Redis has loaded its data: while it loads it refuses
     * scripts (LOADING) and reports AOF off (it turns AOF off while replaying the file). Waits 30s
     * at most.
     */
    private static String settingsInfo(ScriptRunner redis) throws Exception {
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

package dev.seqd.fence;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.seqd.client.TestJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The Redis cases (fence/testdata/rediscases.json), one at a time on the harness's Redis of their
 * own: the fence on a fake clock, and the unguarded control (the script before its guards, no
 * check of Redis's settings), which must fail every case that names it.
 */
class RedisCasesIT {
    static final String FENCE_KEY = RedisFence.PREFIX + "k";
    static final String VALUE_KEY = "value:k";

    /** A clock that moves only when told. */
    static final class FakeClock extends Clock {
        Instant now = Instant.ofEpochSecond(1_700_000_000L);

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    static List<String> names(List<Object> argv) {
        List<String> out = new ArrayList<>();
        for (Object a : argv) {
            out.add(((String) a).replace("$fence", FENCE_KEY).replace("$value", VALUE_KEY));
        }
        return out;
    }

    static final class Run {
        final Resp redis;
        final String unguarded;
        final FakeClock clock = new FakeClock();
        RedisFence fence;

        Run(Resp redis, String unguarded) {
            this.redis = redis;
            this.unguarded = unguarded;
        }

        String open() throws Exception {
            if (unguarded != null) {
                return "ok";
            }
            try {
                fence = RedisFence.open(redis, true, clock);
            } catch (RedisFence.PersistenceException e) {
                return "unsafe";
            }
            return "ok";
        }

        String run(String token, List<String> argv, int keys) throws Exception {
            long t;
            try {
                t = Sequencer.parseToken(token);
            } catch (SequencerException e) {
                return "invalid";
            }
            String name = argv.get(0);
            List<String> ks = argv.subList(1, 1 + keys);
            List<String> rest = argv.subList(1 + keys, argv.size());
            try {
                if (unguarded != null) {
                    String tok = Long.toUnsignedString(t);
                    List<String> allKeys = new ArrayList<>(List.of(FENCE_KEY));
                    allKeys.addAll(ks);
                    List<String> args = new ArrayList<>(List.of("0".repeat(20 - tok.length()) + tok, name));
                    args.addAll(rest);
                    Object reply = redis.eval(unguarded, allKeys, args);
                    return ((Number) ((List<?>) reply).get(0)).longValue() == 1 ? "ok" : "stale";
                }
                if (fence == null) {
                    return "no fence: the last open was refused";
                }
                fence.call("k", t, name, ks, rest.toArray(new String[0]));
                return "ok";
            } catch (StaleTokenException e) {
                return "stale";
            } catch (RedisFence.RefusedCommandException e) {
                return "refused";
            } catch (RedisFence.PersistenceException e) {
                return "unsafe";
            } catch (Resp.RedisError e) {
                return "error " + e.getMessage();
            }
        }
    }

    static String evict(Resp redis) throws Exception {
        String blob = "x".repeat(64 << 10);
        for (int i = 0; i < 4096; i++) {
            try {
                redis.command("SET", "filler:" + i, blob);
            } catch (Resp.RedisError e) { // an OOM refusal is an answer too
            }
            if (i % 8 == 7 && ((Number) redis.command("EXISTS", FENCE_KEY)).longValue() == 0) {
                return null;
            }
        }
        return "256 MiB written and the fence key is still there";
    }

    @SuppressWarnings("unchecked")
    static String runCase(Resp redis, Map<String, Object> c, String unguarded) throws Exception {
        redis.command("FLUSHALL");
        Map<String, String> restore = new HashMap<>();
        Run r = new Run(redis, unguarded);
        try {
            if (!r.open().equals("ok")) {
                return "open refused";
            }
            List<Map<String, Object>> steps = (List<Map<String, Object>>) c.get("steps");
            for (int i = 0; i < steps.size(); i++) {
                Map<String, Object> st = steps.get(i);
                String op = (String) st.get("op");
                switch (op) {
                    case "write", "command" -> {
                        List<String> argv = op.equals("write") ? List.of("SET", VALUE_KEY, (String) st.get("value")) : names((List<Object>) st.get("argv"));
                        int keys = op.equals("write") ? 1 : ((Number) st.get("keys")).intValue();
                        String got = r.run((String) st.get("token"), argv, keys);
                        if (!got.equals(st.get("expect"))) {
                            return "step " + i + ": " + op + " " + argv + " with token " + st.get("token") + ": " + got + ", want " + st.get("expect");
                        }
                    }
                    case "value" -> {
                        Object v = redis.command("GET", VALUE_KEY);
                        if (!java.util.Objects.equals(v, st.get("value"))) {
                            return "step " + i + ": k holds " + v + ", want " + st.get("value");
                        }
                    }
                    case "max" -> {
                        if (unguarded == null && r.fence.max("k") != Long.parseUnsignedLong((String) st.get("token"))) {
                            return "step " + i + ": max " + Long.toUnsignedString(r.fence.max("k")) + ", want " + st.get("token");
                        }
                    }
                    case "raw" -> redis.command(names((List<Object>) st.get("argv")).toArray(new String[0]));
                    case "config" -> {
                        for (Map.Entry<String, Object> e : ((Map<String, Object>) st.get("set")).entrySet()) {
                            if (!restore.containsKey(e.getKey())) {
                                restore.put(e.getKey(), (String) ((List<Object>) redis.command("CONFIG", "GET", e.getKey())).get(1));
                            }
                            redis.command("CONFIG", "SET", e.getKey(), (String) e.getValue());
                        }
                    }
                    case "evict" -> {
                        String err = evict(redis);
                        if (err != null) {
                            return "step " + i + ": " + err;
                        }
                    }
                    case "recheck" -> r.clock.now = r.clock.now.plus(RedisFence.RECHECK);
                    case "open" -> {
                        String got = r.open();
                        if (!got.equals(st.get("expect"))) {
                            return "step " + i + ": open: " + got + ", want " + st.get("expect");
                        }
                    }
                    case "ttl" -> {
                        boolean has = ((Number) redis.command("PTTL", FENCE_KEY)).longValue() > 0;
                        if (has != (Boolean) st.get("has")) {
                            return "step " + i + ": the fence key has a TTL: " + has + ", want " + st.get("has");
                        }
                    }
                    default -> {
                        return "step " + i + ": unknown op " + op;
                    }
                }
            }
            return null;
        } finally {
            for (Map.Entry<String, String> e : restore.entrySet()) {
                redis.command("CONFIG", "SET", e.getKey(), e.getValue());
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void redisCases() throws Exception {
        Map<String, Object> file = (Map<String, Object>) TestJson.parse(Files.readString(Path.of(FenceCasesIT.env("SEQD_TEST_FENCE_REDIS_CASES"))));
        String unguarded = Files.readString(Path.of(FenceCasesIT.env("SEQD_TEST_FENCE_UNGUARDED")));
        String p = "SEQD_TEST_REDIS_CASES";
        List<String> failures = new ArrayList<>();
        try (Resp redis = new Resp(FenceCasesIT.env(p + "_HOST"), Integer.parseInt(FenceCasesIT.env(p + "_PORT")), Integer.parseInt(FenceCasesIT.envOr(p + "_DATABASE", "0")))) {
            for (Map<String, Object> c : (List<Map<String, Object>>) file.get("cases")) {
                String name = (String) c.get("name");
                for (String mode : List.of("fence", "unguarded")) {
                    String err = runCase(redis, c, mode.equals("fence") ? null : unguarded);
                    System.err.println("\nFENCECASE java redis-cases " + name + " " + mode + " " + (err == null ? "pass" : "fail") + " " + (err == null ? "" : err));
                    if (mode.equals("fence") && err != null) {
                        failures.add("case " + name + ": " + err);
                    }
                    if (mode.equals("unguarded") && err == null && ((List<Object>) c.get("fails_under")).contains("unguarded")) {
                        failures.add("the unguarded script passes case " + name + ", which it must fail");
                    }
                }
            }
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }
}

package dev.seqd.client;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * The conformance runner of the Java client: plays every vector of
 * clients/conformance/vectors.json against the hostile daemon that clients/conformance_test.go
 * starts (go test ./clients/ -run TestJavaConformance; build.sh conformance runs this class),
 * prints a table (vector, expected, observed) and writes one JSON result per vector to
 * $SEQD_CONFORMANCE_RESULTS. Exits 1 if any vector failed.
 */
public final class Conformance {
    private static final Map<String, String> ENV = System.getenv();
    private static final String ADDR = ENV.getOrDefault("SEQD_CONFORMANCE_ADDR", "");
    private static final String TLS_ADDR = ENV.getOrDefault("SEQD_CONFORMANCE_TLS_ADDR", "");
    private static final String TOKEN_FILE = ENV.getOrDefault("SEQD_CONFORMANCE_TOKEN_FILE", "");
    private static final String SECRET = ENV.getOrDefault("SEQD_CONFORMANCE_SECRET", "");
    private static final double MARGIN = 5.0; // seconds a call may take beyond its wait
    private static final long GUARD_SECONDS = 20; // a vector still running then is failed as hung
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final List<String> LOG_LINES = java.util.Collections.synchronizedList(new ArrayList<>());

    private record Outcome(boolean pass, String observed) {}

    private Conformance() {}

    public static void main(String[] args) throws Exception {
        if (ADDR.isEmpty() || TOKEN_FILE.isEmpty() || SECRET.isEmpty()) {
            System.err.println("needs the hostile daemon of clients/conformance_test.go (go test ./clients/ -run TestJavaConformance)");
            System.exit(2);
        }
        captureLogs();
        Map<String, Object> file = Json.parseObject(Files.readString(Path.of(ENV.get("SEQD_CONFORMANCE_VECTORS"))));
        @SuppressWarnings("unchecked")
        List<Object> vectors = (List<Object>) file.get("vectors");
        Set<String> only = Set.of(ENV.getOrDefault("SEQD_CONFORMANCE_ONLY", "").split(","));
        boolean all = only.equals(Set.of(""));
        Path results = Path.of(ENV.get("SEQD_CONFORMANCE_RESULTS"));
        Files.writeString(results, "");
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "conformance-vector");
            t.setDaemon(true);
            return t;
        });
        int failed = 0;
        int n = 0;
        for (Object o : vectors) {
            @SuppressWarnings("unchecked")
            Map<String, Object> v = (Map<String, Object>) o;
            String id = Json.str(v, "id");
            if (!all && !only.contains(id)) {
                continue;
            }
            Outcome out;
            Future<Outcome> f = pool.submit(() -> play(v));
            try {
                out = f.get(GUARD_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                out = new Outcome(false, "no return after " + GUARD_SECONDS + "s");
            } catch (java.util.concurrent.ExecutionException e) {
                out = new Outcome(false, "runner error " + e.getCause());
            }
            n++;
            if (!out.pass) {
                failed++;
            }
            String expected = expectedText(v);
            Json.Obj row = new Json.Obj().str("id", id).str("expected", expected).str("observed", out.observed);
            Files.writeString(results, row.toString().replaceFirst("}$", ",\"pass\":" + out.pass + "}") + "\n",
                    StandardOpenOption.APPEND);
            System.out.printf("%s  %-26s want %-40s got %s%n", out.pass ? "PASS" : "FAIL", id, expected, out.observed);
        }
        System.out.printf("java client: %d/%d vectors pass%n", n - failed, n);

        // The vectors that apply to SeqdLock (the grants and the holds; it is built on the same
        // client), played through it, all at once: each has a lock name of its own.
        List<Map<String, Object>> forLock = new ArrayList<>();
        for (Object o : vectors) {
            @SuppressWarnings("unchecked")
            Map<String, Object> v = (Map<String, Object>) o;
            String op = Json.str(v, "op");
            if ((all || only.contains(Json.str(v, "id"))) && (op.equals("acquire") || op.equals("hold"))) {
                forLock.add(v);
            }
        }
        List<Future<Outcome>> outs = new ArrayList<>();
        for (Map<String, Object> v : forLock) {
            outs.add(pool.submit(() -> playThroughLock(v)));
        }
        int lockFailed = 0;
        for (int i = 0; i < forLock.size(); i++) {
            Map<String, Object> v = forLock.get(i);
            String id = LOCK_PREFIX + Json.str(v, "id");
            Outcome out;
            try {
                out = outs.get(i).get(GUARD_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                out = new Outcome(false, "no return after " + GUARD_SECONDS + "s");
            } catch (java.util.concurrent.ExecutionException e) {
                out = new Outcome(false, "runner error " + e.getCause());
            }
            if (!out.pass) {
                lockFailed++;
            }
            String expected = expectedText(v);
            Json.Obj row = new Json.Obj().str("id", id).str("expected", expected).str("observed", out.observed);
            Files.writeString(results, row.toString().replaceFirst("}$", ",\"pass\":" + out.pass + "}") + "\n",
                    StandardOpenOption.APPEND);
            System.out.printf("%s  %-35s want %-40s got %s%n", out.pass ? "PASS" : "FAIL", id, expected, out.observed);
        }
        System.out.printf("java SeqdLock: %d/%d vectors pass%n", forLock.size() - lockFailed, forLock.size());
        failed += lockFailed;
        System.exit(failed > 0 ? 1 : 0);
    }

    private static void captureLogs() {
        Handler h = new Handler() {
            private final SimpleFormatter fmt = new SimpleFormatter();

            @Override
            public void publish(LogRecord r) {
                LOG_LINES.add(fmt.format(r));
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        h.setLevel(Level.ALL);
        Logger root = Logger.getLogger("");
        root.setLevel(Level.ALL);
        root.addHandler(h);
        Logger.getLogger("jdk.internal.httpclient").setLevel(Level.INFO);
    }

    private static Outcome play(Map<String, Object> v) throws Exception {
        switch (Json.str(v, "op")) {
            case "acquire":
                return runAcquire(v);
            case "hold":
                return runHold(v);
            case "keepalive":
                return runKeepalive(v);
            case "print":
                return runPrint(v);
            case "logs":
                return runLogs();
            default:
                return new Outcome(false, "unknown op " + Json.str(v, "op"));
        }
    }

    private static Client client(boolean tls) {
        return Client.builder(Map.of()).addr(tls ? TLS_ADDR : ADDR).apiTokenFile(Path.of(TOKEN_FILE)).owner("conformance").build();
    }

    private static String leaseId() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private static boolean shown(String... texts) {
        for (String t : texts) {
            if (t != null && t.contains(SECRET)) {
                return true;
            }
        }
        return false;
    }

    private static String stack(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static String clip(String s, int n) {
        return s == null ? "null" : s.length() <= n ? s : s.substring(0, n);
    }

    private static double seconds(String d) {
        return Json.parseDuration(d).toNanos() / 1e9;
    }

    private static double num(Map<String, Object> m, String k) {
        Object o = m.get(k);
        return o instanceof Json.Num x ? Double.parseDouble(x.text()) : Double.NaN;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> expect(Map<String, Object> v) {
        return (Map<String, Object>) v.get("expect");
    }

    private static String expectedText(Map<String, Object> v) {
        Map<String, Object> e = expect(v);
        StringBuilder b = new StringBuilder(Json.str(e, "result"));
        if (e.containsKey("token")) {
            b.append(" token=").append(Json.str(e, "token"));
        }
        if (e.containsKey("reason")) {
            b.append(" reason='").append(Json.str(e, "reason")).append("'");
        }
        if (e.containsKey("quotes")) {
            b.append(" quotes='").append(Json.str(e, "quotes")).append("'");
        }
        if (e.containsKey("within")) {
            b.append(" within ").append(((Json.Num) e.get("within")).text()).append("s");
        }
        if (e.containsKey("for")) {
            b.append(" for ").append(((Json.Num) e.get("for")).text()).append("s");
        }
        return b.toString();
    }

    private static Map<String, Object> stats(String name) throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(ADDR + "/conformance/stats?name=" + Client.escape(name))).build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        return Json.parseObject(r.body());
    }

    /** Whether a failed call failed as the vector wants. */
    private static Outcome checkError(Map<String, Object> v, Client c, RuntimeException err, double took) {
        Map<String, Object> e = expect(v);
        String result = Json.str(e, "result");
        String msg = String.valueOf(err.getMessage());
        String observed = err.getClass().getSimpleName() + String.format(" after %.2fs: ", took) + clip(msg, 150);
        if (!result.equals("protocol_error") && !result.equals("error")) {
            return new Outcome(false, observed);
        }
        String wait = v.containsKey("wait") ? Json.str(v, "wait") : "0s";
        double within = e.containsKey("within") ? num(e, "within") : seconds(wait) + MARGIN;
        boolean ok = took <= within && !shown(msg, err.toString(), stack(err));
        if (result.equals("protocol_error")) {
            String host = URI.create(c.addr()).getAuthority();
            ok = ok && err.getClass().getSimpleName().equals("ProtocolException") && msg.contains(host);
            if (e.containsKey("quotes")) {
                ok = ok && msg.contains(Json.str(e, "quotes"));
            }
        }
        if (e.containsKey("reason")) {
            ok = ok && msg.toLowerCase().contains(Json.str(e, "reason").toLowerCase());
        }
        if (shown(msg, err.toString(), stack(err))) {
            observed += " [shows the API token]";
        }
        return new Outcome(ok, observed);
    }

    private static Outcome runAcquire(Map<String, Object> v) {
        Map<String, Object> e = expect(v);
        String wait = v.containsKey("wait") ? Json.str(v, "wait") : "0s";
        boolean tls = Boolean.TRUE.equals(v.get("tls"));
        try (Client c = client(tls)) {
            long start = System.nanoTime();
            LeaseInfo info;
            try {
                info = c.acquire("conformance/" + Json.str(v, "id"), Duration.ofSeconds(15), Json.parseDuration(wait),
                        LockOptions.defaults().leaseId(leaseId()));
            } catch (RuntimeException err) {
                return checkError(v, c, err, (System.nanoTime() - start) / 1e9);
            }
            double took = (System.nanoTime() - start) / 1e9;
            String token = Long.toUnsignedString(info.token());
            return new Outcome(Json.str(e, "result").equals("grant") && token.equals(Json.str(e, "token")),
                    "grant token=" + token + String.format(" after %.2fs", took));
        }
    }

    private static Outcome runHold(Map<String, Object> v) throws Exception {
        Map<String, Object> e = expect(v);
        String name = "conformance/" + Json.str(v, "id");
        Duration ttl = Json.parseDuration(v.containsKey("ttl") ? Json.str(v, "ttl") : "1s");
        try (Client c = client(false)) {
            Lease lease;
            long start = System.nanoTime();
            try {
                lease = c.lock(name, ttl, Duration.ZERO);
            } catch (RuntimeException err) {
                double took = (System.nanoTime() - start) / 1e9;
                if (Json.str(e, "result").equals("lost")) {
                    // A slow grant makes the helper renew at once, before handing the lease out:
                    // refusing it then is as good as losing it.
                    String msg = String.valueOf(err.getMessage());
                    String reason = e.containsKey("reason") ? Json.str(e, "reason").toLowerCase() : "";
                    boolean ok = took <= num(e, "within") + ttl.toNanos() / 1e9 && msg.toLowerCase().contains(reason) && !shown(msg);
                    return new Outcome(ok, String.format("lock() refused it at its first renewal, after %.2fs: ", took) + clip(msg, 150));
                }
                Outcome o = checkError(v, c, err, took);
                return new Outcome(o.pass, "lock(): " + o.observed);
            }
            String result = Json.str(e, "result");
            if (result.equals("protocol_error") || result.equals("error")) {
                String token = Long.toUnsignedString(lease.token());
                lease.close();
                return new Outcome(false, "lock() held it, token=" + token);
            }
            long t0 = System.nanoTime();
            try {
                if (Json.str(e, "result").equals("held")) {
                    double hold = num(e, "for");
                    Thread.sleep((long) (hold * 1000));
                    long n = ((Json.Num) stats(name).get("renews")).unsigned();
                    boolean held = lease.isHeld();
                    return new Outcome(held && n >= 2, (held ? "held" : "lost") + " after " + hold + "s, " + n + " renewals answered");
                }
                double within = num(e, "within");
                double bound = within + ttl.toNanos() / 1e9 + 2;
                CompletableFuture<LostException> lost = lease.lost();
                LostException why;
                try {
                    why = lost.get((long) (bound * 1000), TimeUnit.MILLISECONDS);
                } catch (TimeoutException te) {
                    return new Outcome(false, String.format("lost().get() did not complete within %.2fs (held=%s)",
                            (System.nanoTime() - t0) / 1e9, lease.isHeld()));
                }
                double took = (System.nanoTime() - t0) / 1e9;
                Thread.sleep(50); // the loss is final: a late answer must not bring the lease back
                String reason = String.valueOf(why.getMessage());
                String observed = String.format("lost after %.2fs: ", took) + clip(reason, 150);
                boolean ok = took <= within && !lease.isHeld();
                if (e.containsKey("reason")) {
                    ok = ok && (reason + " " + why.code()).toLowerCase().contains(Json.str(e, "reason").toLowerCase());
                }
                if (shown(reason, why.toString())) {
                    observed += " [shows the API token]";
                    ok = false;
                }
                return new Outcome(ok, observed);
            } finally {
                lease.close();
            }
        }
    }

    /** The id of a vector's row when it is played through SeqdLock. */
    private static final String LOCK_PREFIX = "SeqdLock/";

    /**
     * A grant or hold vector played through {@link SeqdLock}: a grant through {@code
     * tryLockAndGetFence(wait)}, a hold through {@code lockAndGetFence()}, its loss seen by {@code
     * isLockedByCurrentThread()} turning false and {@code getFence()} and {@code unlock()}
     * throwing LockOwnershipLostException with the reason.
     */
    private static Outcome playThroughLock(Map<String, Object> v) throws Exception {
        Map<String, Object> e = expect(v);
        String result = Json.str(e, "result");
        String name = "conformance/" + Json.str(v, "id");
        boolean hold = Json.str(v, "op").equals("hold");
        Duration ttl = hold ? Json.parseDuration(v.containsKey("ttl") ? Json.str(v, "ttl") : "1s") : Duration.ofSeconds(15);
        try (Client c = client(Boolean.TRUE.equals(v.get("tls")))) {
            SeqdLock lock = SeqdLock.builder(c, name).ttl(ttl).build();
            long start = System.nanoTime();
            long fence;
            try {
                if (hold) {
                    fence = lock.lockAndGetFence();
                } else {
                    long wait = Json.parseDuration(v.containsKey("wait") ? Json.str(v, "wait") : "0s").toMillis();
                    fence = lock.tryLockAndGetFence(wait, TimeUnit.MILLISECONDS);
                }
            } catch (RuntimeException err) {
                double took = (System.nanoTime() - start) / 1e9;
                if (result.equals("lost")) {
                    // As for the holding helper: a slow grant is renewed before lock() returns,
                    // and refusing it then is as good as losing it.
                    String msg = String.valueOf(err.getMessage());
                    String reason = e.containsKey("reason") ? Json.str(e, "reason").toLowerCase() : "";
                    boolean ok = took <= num(e, "within") + ttl.toNanos() / 1e9 && msg.toLowerCase().contains(reason) && !shown(msg);
                    return new Outcome(ok, String.format("lock() refused it at its first renewal, after %.2fs: ", took) + clip(msg, 150));
                }
                Outcome o = checkError(v, c, err, took);
                return new Outcome(o.pass, (hold ? "lockAndGetFence(): " : "tryLockAndGetFence(): ") + o.observed);
            }
            if (fence == SeqdLock.INVALID_FENCE) {
                return new Outcome(false, "tryLockAndGetFence() answered INVALID_FENCE (not granted)");
            }
            try {
                switch (result) {
                    case "grant": {
                        String token = Long.toUnsignedString(fence);
                        return new Outcome(token.equals(Json.str(e, "token")), "fence=" + token);
                    }
                    case "held": {
                        Thread.sleep((long) (num(e, "for") * 1000));
                        boolean held = lock.isLockedByCurrentThread() && lock.getFence() == fence;
                        return new Outcome(held, (held ? "held" : "lost") + " after " + num(e, "for") + "s");
                    }
                    case "lost":
                        break;
                    default:
                        return new Outcome(false, "locked it, fence=" + Long.toUnsignedString(fence));
                }
                long t0 = System.nanoTime();
                long bound = t0 + (long) ((num(e, "within") + ttl.toNanos() / 1e9 + 2) * 1e9);
                while (lock.isLockedByCurrentThread()) {
                    if (System.nanoTime() - bound > 0) {
                        return new Outcome(false, String.format("still held after %.2fs", (System.nanoTime() - t0) / 1e9));
                    }
                    Thread.sleep(10);
                }
                double took = (System.nanoTime() - t0) / 1e9;
                String msg;
                try {
                    lock.getFence();
                    return new Outcome(false, "getFence() answered after the loss");
                } catch (LockOwnershipLostException lost) {
                    msg = String.valueOf(lost.getMessage());
                }
                boolean unlockSaysSo;
                try {
                    lock.unlock();
                    unlockSaysSo = false;
                } catch (LockOwnershipLostException lost) {
                    unlockSaysSo = true;
                }
                boolean ok = took <= num(e, "within") && unlockSaysSo && !shown(msg);
                if (e.containsKey("reason")) {
                    ok = ok && msg.toLowerCase().contains(Json.str(e, "reason").toLowerCase());
                }
                return new Outcome(ok, String.format("lost after %.2fs%s: ", took, unlockSaysSo ? "" : " (unlock() did not say so)")
                        + clip(msg, 150) + (shown(msg) ? " [shows the API token]" : ""));
            } finally {
                while (lock.getHoldCount() > 0) {
                    try {
                        lock.unlock();
                    } catch (IllegalMonitorStateException done) {
                        // lost: the hold ends all the same
                    }
                }
            }
        }
    }

    private static Outcome runKeepalive(Map<String, Object> v) throws Exception {
        String name = "conformance/" + Json.str(v, "id");
        try (Client c = client(false); Lease lease = c.lock(name, Json.parseDuration(Json.str(v, "ttl")), Duration.ZERO)) {
            Thread.sleep((long) (num(expect(v), "for") * 1000));
        }
        Map<String, Object> s = stats(name);
        long posts = ((Json.Num) s.get("posts")).unsigned();
        long conns = ((Json.Num) s.get("connections")).unsigned();
        return new Outcome(posts >= 4 && conns == 1, posts + " requests on " + conns + " connection(s)");
    }

    private static Outcome runPrint(Map<String, Object> v) {
        List<String> texts = new ArrayList<>();
        try (Client c = client(false)) {
            texts.add(c.toString());
            try (Lease lease = c.lock("conformance/" + Json.str(v, "id"), Duration.ofSeconds(15), Duration.ZERO)) {
                texts.add(lease.toString());
                texts.add(lease.info().toString());
            }
            for (String n : List.of("grant-echo-token", "grant-401-echo-token")) {
                try {
                    c.acquire("conformance/" + n, Duration.ofSeconds(15), Duration.ZERO, LockOptions.defaults().leaseId(leaseId()));
                } catch (RuntimeException err) {
                    texts.add(err.toString());
                    texts.add(stack(err));
                }
            }
        }
        List<String> bad = texts.stream().filter(t -> t.contains(SECRET)).map(t -> clip(t, 80)).toList();
        return new Outcome(bad.isEmpty(), texts.size() + " printouts, " + bad.size() + " show the API token"
                + (bad.isEmpty() ? "" : ": " + bad.get(0)));
    }

    private static Outcome runLogs() {
        List<String> lines = List.copyOf(LOG_LINES);
        List<String> bad = lines.stream().filter(t -> t.contains(SECRET)).map(t -> clip(t, 80)).toList();
        return new Outcome(bad.isEmpty(), lines.size() + " log lines, " + bad.size() + " show the API token"
                + (bad.isEmpty() ? "" : ": " + bad.get(0)));
    }
}

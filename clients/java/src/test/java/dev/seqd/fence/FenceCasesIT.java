package dev.seqd.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.seqd.client.TestJson;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * The shared fence cases (fence/testdata/dbcases.json), over JDBC (Debian's PostgreSQL and
 * MariaDB drivers) and over a test-only RESP connection, against the databases of
 * clients/fences_test.go. Each case runs with the fence and under the "none" control (no fence),
 * which must fail the cases that name it.
 */
class FenceCasesIT {
    /** What a case does to a database: with the fence, or under a control without it. */
    interface Store extends AutoCloseable {
        /** ok, stale or invalid. */
        String write(String key, String token, String value) throws Exception;

        /** {outcome, value}. */
        String[] read(String key, String token) throws Exception;

        String value(String key) throws Exception;

        /** ok, or kept when the fence refused to delete a row that holds the key's max. */
        String delete(String key, String token) throws Exception;

        long max(String key) throws Exception;

        Store writer() throws Exception;

        void reconnect() throws Exception;

        @Override
        void close() throws Exception;
    }

    @FunctionalInterface
    interface Fenced {
        String run(long token) throws Exception;
    }

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            fail(name + " is not set: run these tests with go test ./clients/ -run TestJavaFences");
        }
        return v;
    }

    static String envOr(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    /** {outcome, value}: ok with fn's result, stale, or invalid. */
    static String[] fenced(Fenced fn, String token, boolean control) throws Exception {
        if (control) {
            return new String[] {"ok", fn.run(0)};
        }
        long t;
        try {
            t = Sequencer.parseToken(token);
        } catch (SequencerException e) {
            return new String[] {"invalid", null};
        }
        try {
            return new String[] {"ok", fn.run(t)};
        } catch (StaleTokenException e) {
            return new String[] {"stale", null};
        }
    }

    static void restart(String db) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(env("SEQD_TEST_FENCE_CONTROL") + "/restart?db=" + db))
                        .timeout(Duration.ofMinutes(2)).POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("restart " + db + ": " + r.statusCode() + " " + r.body());
        }
    }

    static String runId() {
        return "java-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> cases() throws Exception {
        Map<String, Object> c = (Map<String, Object>) TestJson.parse(Files.readString(Path.of(env("SEQD_TEST_FENCE_CASES"))));
        assertEquals(1L, c.get("schema"), "cases schema");
        return c;
    }

    static String show(String v) {
        return v == null ? "null" : "\"" + v + "\"";
    }

    /** The first expectation of c not met, or null. */
    @SuppressWarnings("unchecked")
    static String runCase(Map<String, Object> c, Store store, boolean control, String db, String prefix) throws Exception {
        List<Map<String, Object>> steps = (List<Map<String, Object>>) c.get("steps");
        for (int i = 0; i < steps.size(); i++) {
            Map<String, Object> st = steps.get(i);
            String key = prefix + Objects.toString(st.get("key"), "k");
            String token = (String) st.get("token");
            String want = (String) st.get("value");
            switch ((String) st.get("op")) {
                case "write" -> {
                    String got = store.write(key, token, want);
                    if (!got.equals(st.get("expect"))) {
                        return "step " + i + ": write " + key + " with token \"" + token + "\": " + got + ", want " + st.get("expect");
                    }
                }
                case "read" -> {
                    String[] got = store.read(key, token);
                    if (!got[0].equals(st.get("expect"))) {
                        return "step " + i + ": read " + key + " with token \"" + token + "\": " + got[0] + ", want " + st.get("expect");
                    }
                    if (got[0].equals("ok") && !Objects.equals(got[1], want)) {
                        return "step " + i + ": read " + key + ": " + show(got[1]) + ", want " + show(want);
                    }
                }
                case "value" -> {
                    String got = store.value(key);
                    if (!Objects.equals(got, want)) {
                        return "step " + i + ": " + key + " holds " + show(got) + ", want " + show(want);
                    }
                }
                case "max" -> {
                    if (!control && store.max(key) != Long.parseUnsignedLong(token)) {
                        return "step " + i + ": max of " + key + " is " + Long.toUnsignedString(store.max(key)) + ", want " + token;
                    }
                }
                case "delete" -> {
                    String got = store.delete(key, token);
                    if (!got.equals("ok") && !got.equals("kept")) {
                        return "step " + i + ": delete " + key + " with token \"" + token + "\": " + got;
                    }
                }
                case "restart" -> {
                    restart(db);
                    store.reconnect();
                }
                case "race" -> {
                    String err = race(store, key, st);
                    if (err != null) {
                        return "step " + i + ": " + err;
                    }
                }
                default -> {
                    return "step " + i + ": unknown op " + st.get("op");
                }
            }
        }
        return null;
    }

    static String race(Store store, String key, Map<String, Object> st) throws Exception {
        int writers = ((Long) st.get("writers")).intValue(), rounds = ((Long) st.get("rounds")).intValue();
        long first = Long.parseUnsignedLong((String) st.get("first_token"));
        List<Store> conns = new ArrayList<>();
        try {
            for (int i = 0; i < writers; i++) {
                conns.add(store.writer());
            }
            for (int r = 0; r < rounds; r++) {
                String[] results = new String[writers];
                List<Thread> threads = new ArrayList<>();
                for (int i = writers - 1; i >= 0; i--) {
                    int w = i;
                    long tok = first + (long) r * writers + i;
                    Thread th = new Thread(() -> {
                        try {
                            results[w] = conns.get(w).write(key, Long.toUnsignedString(tok), "race-" + Long.toUnsignedString(tok));
                        } catch (Exception e) { // a deadlock victim, a serialization failure: it did not land
                            results[w] = "error " + e.getMessage();
                        }
                    });
                    th.start();
                    threads.add(th);
                }
                for (Thread th : threads) {
                    th.join();
                }
                long top = first + (long) r * writers + writers - 1;
                if (!"ok".equals(results[writers - 1])) {
                    return "race round " + r + ": the writer of the highest token " + top + " got " + results[writers - 1];
                }
                String v = store.value(key);
                if (!("race-" + top).equals(v)) {
                    return "race round " + r + ": " + key + " holds " + show(v) + ", want \"race-" + top + "\" (results " + String.join(", ", results) + ")";
                }
            }
        } finally {
            for (Store s : conns) {
                s.close();
            }
        }
        return null;
    }

    @FunctionalInterface
    interface StoreFactory {
        /** A store for a mode: a recipe (fence, column) or the control none. */
        Store open(String mode) throws Exception;
    }

    /**
     * Runs every case with each recipe (fence: the fence table; column: the token in the data's
     * own row) and under the control "none"; fails listing what went wrong.
     */
    @SuppressWarnings("unchecked")
    static void runAll(StoreFactory factory, String db, List<String> recipes) throws Exception {
        Map<String, Object> cases = cases();
        String rid = runId();
        List<String> failures = new ArrayList<>();
        List<String> modes = new ArrayList<>(recipes);
        modes.add("none");
        for (String mode : modes) {
            boolean control = !recipes.contains(mode);
            try (Store store = factory.open(mode)) {
                for (Map<String, Object> c : (List<Map<String, Object>>) cases.get("cases")) {
                    String name = (String) c.get("name");
                    String err;
                    try {
                        err = runCase(c, store, control, db, rid + "/" + mode + "/" + name + "/");
                    } catch (Exception e) {
                        err = "threw " + e;
                        store.reconnect();
                    }
                    System.err.println("\nFENCECASE java " + db + " " + name + " " + mode + " " + (err == null ? "pass" : "fail") + " " + (err == null ? "" : err));
                    if (!control && err != null) {
                        failures.add(db + ": case " + name + " (" + mode + "): " + err);
                    }
                    if (control && err == null && ((List<Object>) c.get("fails_under")).contains(mode)) {
                        failures.add(db + ": control " + mode + " passes case " + name + ", which it must fail");
                    }
                }
            }
        }
        if (!failures.isEmpty()) {
            fail(String.join("\n", failures));
        }
    }

    // JDBC stores: PostgreSQL and MariaDB differ in their SQL only.

    record Dialect(String name, String url, JdbcFence fence, String values, String rows, String upsert, String select, String max) {}

    static Dialect postgres() {
        String p = "SEQD_TEST_PG";
        return new Dialect("postgres",
                "jdbc:postgresql://" + env(p + "_HOST") + ":" + env(p + "_PORT") + "/" + env(p + "_DATABASE"),
                JdbcFence.postgres(),
                "CREATE TABLE IF NOT EXISTS fence_case_values (k text PRIMARY KEY, v text NOT NULL)",
                "CREATE TABLE IF NOT EXISTS fence_case_rows (k text PRIMARY KEY, v text NULL, fence_token numeric(20,0) NULL)",
                "INSERT INTO fence_case_values (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
                "SELECT v FROM fence_case_values WHERE k = ?",
                "SELECT max_token::text FROM seqd_fence WHERE fence_key = ?");
    }

    static Dialect mariadb() {
        String p = "SEQD_TEST_MARIADB";
        return new Dialect("mariadb",
                "jdbc:mariadb://" + env(p + "_HOST") + ":" + env(p + "_PORT") + "/" + env(p + "_DATABASE"),
                JdbcFence.mariadb(),
                "CREATE TABLE IF NOT EXISTS fence_case_values (k varbinary(1024) PRIMARY KEY, v text NOT NULL) ENGINE=InnoDB",
                "CREATE TABLE IF NOT EXISTS fence_case_rows (k varbinary(1024) NOT NULL PRIMARY KEY, v text NULL, fence_token bigint unsigned NULL) ENGINE=InnoDB",
                "INSERT INTO fence_case_values (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)",
                "SELECT v FROM fence_case_values WHERE k = ?",
                "SELECT CAST(max_token AS CHAR) FROM seqd_fence WHERE fence_key = ?");
    }

    static Connection connect(Dialect d) throws SQLException {
        String prefix = d.name().equals("postgres") ? "SEQD_TEST_PG" : "SEQD_TEST_MARIADB";
        return DriverManager.getConnection(d.url(), env(prefix + "_USER"), envOr(prefix + "_PASSWORD", ""));
    }

    static final class JdbcStore implements Store {
        final Dialect d;
        final String mode;
        final boolean control;
        final boolean column;
        final JdbcFence fence;
        Connection conn;

        JdbcStore(Dialect d, String mode) throws SQLException {
            this.d = d;
            this.mode = mode;
            this.control = mode.equals("none");
            this.column = mode.equals("column");
            // The column recipe: the max in the data's own row (fence_token), which a fenced
            // write or read creates if it is missing.
            this.fence = column ? d.fence().on("fence_case_rows", "k", "fence_token") : d.fence();
            reconnect();
        }

        @Override
        public void reconnect() throws SQLException {
            if (conn != null) {
                try {
                    conn.close();
                } catch (SQLException ignored) { // a killed server's connection
                }
            }
            conn = connect(d);
        }

        @Override
        public void close() throws SQLException {
            conn.close();
        }

        @Override
        public Store writer() throws SQLException {
            return new JdbcStore(d, mode);
        }

        private String upsert(Connection c, String key, String value) throws SQLException {
            if (column) { // the fence made the row: fill it in
                try (PreparedStatement st = c.prepareStatement("UPDATE fence_case_rows SET v = ? WHERE k = ?")) {
                    st.setString(1, value);
                    st.setString(2, key);
                    st.executeUpdate();
                }
                return null;
            }
            try (PreparedStatement st = c.prepareStatement(d.upsert())) {
                st.setString(1, key);
                st.setString(2, value);
                st.executeUpdate();
            }
            return null;
        }

        private String select(Connection c, String key) throws SQLException {
            try (PreparedStatement st = c.prepareStatement(column ? "SELECT v FROM fence_case_rows WHERE k = ?" : d.select())) {
                st.setString(1, key);
                try (ResultSet rs = st.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        }

        @Override
        public String write(String key, String token, String value) throws Exception {
            return fenced(t -> control ? upsert(conn, key, value) : fence.inTransaction(conn, key, t, c -> upsert(c, key, value)), token, control)[0];
        }

        @Override
        public String[] read(String key, String token) throws Exception {
            return fenced(t -> control ? select(conn, key) : fence.inTransaction(conn, key, t, c -> select(c, key)), token, control);
        }

        @Override
        public String value(String key) throws SQLException {
            return select(conn, key);
        }

        private String remove(Connection c, String key) throws SQLException {
            try (PreparedStatement st = c.prepareStatement("DELETE FROM " + (column ? "fence_case_rows" : "fence_case_values") + " WHERE k = ?")) {
                st.setString(1, key);
                st.executeUpdate();
            }
            return null;
        }

        @Override
        public String delete(String key, String token) throws Exception {
            try {
                return fenced(t -> control ? remove(conn, key) : fence.inTransaction(conn, key, t, c -> remove(c, key)), token, control)[0];
            } catch (SQLException e) {
                if (String.valueOf(e.getMessage()).contains(JdbcFence.KEEP_ROW_MESSAGE)) {
                    return "kept";
                }
                throw e;
            }
        }

        @Override
        public long max(String key) throws SQLException {
            String q = column ? (d.name().equals("postgres") ? "SELECT fence_token::text FROM fence_case_rows WHERE k = ?"
                    : "SELECT CAST(fence_token AS CHAR) FROM fence_case_rows WHERE k = ?") : d.max();
            try (PreparedStatement st = conn.prepareStatement(q)) {
                st.setString(1, key);
                try (ResultSet rs = st.executeQuery()) {
                    String v = rs.next() ? rs.getString(1) : null;
                    return v == null ? 0 : Long.parseUnsignedLong(v);
                }
            }
        }
    }

    static void createTables(Dialect d) throws SQLException {
        try (Connection c = connect(d); Statement st = c.createStatement()) {
            d.fence().createTable(c);
            st.execute(d.values());
            st.execute(d.rows());
            d.fence().on("fence_case_rows", "k", "fence_token").createTable(c);
        }
    }

    @Test
    void postgresCases() throws Exception {
        Dialect d = postgres();
        createTables(d);
        runAll(mode -> new JdbcStore(d, mode), "postgres", List.of("fence", "column"));
    }

    @Test
    void mariadbCases() throws Exception {
        Dialect d = mariadb();
        createTables(d);
        runAll(mode -> new JdbcStore(d, mode), "mariadb", List.of("fence", "column"));
    }

    @Test
    void refusalRollsBackAndRestoresAutoCommit() throws Exception {
        for (Dialect d : List.of(postgres(), mariadb())) {
            createTables(d);
            String key = runId() + "/rollback";
            try (Connection c = connect(d)) {
                d.fence().inTransaction(c, key, -1L, x -> null); // 2^64-1, the largest token
                StaleTokenException e = assertThrows(StaleTokenException.class,
                        () -> d.fence().inTransaction(c, key, -2L, x -> fail("ran after a refusal")));
                assertEquals("18446744073709551614", Long.toUnsignedString(e.token()), d.name());
                assertEquals("18446744073709551615", Long.toUnsignedString(e.max()), d.name());
                assertTrue(c.getAutoCommit(), d.name() + ": auto-commit restored");
                assertThrows(ArithmeticException.class, () -> d.fence().inTransaction(c, key + "/err", 7, x -> {
                    try (PreparedStatement st = x.prepareStatement(d.upsert())) {
                        st.setString(1, key + "/err");
                        st.setString(2, "lost");
                        st.executeUpdate();
                    }
                    return 1 / (x.isClosed() ? 1 : 0);
                }));
                // The caller's error rolled back its write and the max: 6 is not stale.
                try (JdbcStore s = new JdbcStore(d, "fence")) {
                    assertNull(d.fence().inTransaction(c, key + "/err", 6, x -> s.select(x, key + "/err")), d.name());
                }
            }
        }
    }

    // Redis, through the one-method interface.

    static Resp redis() throws Exception {
        String p = "SEQD_TEST_REDIS";
        return new Resp(env(p + "_HOST"), Integer.parseInt(env(p + "_PORT")), Integer.parseInt(envOr(p + "_DATABASE", "0")));
    }

    static final class RedisStore implements Store {
        final boolean control;
        Resp conn;
        RedisFence fence;

        RedisStore(boolean control) throws Exception {
            this.control = control;
            reconnect();
        }

        @Override
        public void reconnect() throws Exception {
            if (conn != null) {
                conn.close();
            }
            conn = redis();
            fence = RedisFence.open(conn);
        }

        @Override
        public void close() throws Exception {
            conn.close();
        }

        @Override
        public Store writer() throws Exception {
            return new RedisStore(control);
        }

        @Override
        public String write(String key, String token, String value) throws Exception {
            return fenced(t -> {
                if (control) {
                    conn.command("SET", "v:" + key, value);
                } else {
                    fence.call(key, t, "SET", List.of("v:" + key), value);
                }
                return null;
            }, token, control)[0];
        }

        @Override
        public String[] read(String key, String token) throws Exception {
            return fenced(t -> (String) (control ? conn.command("GET", "v:" + key) : fence.call(key, t, "GET", List.of("v:" + key))), token, control);
        }

        @Override
        public String delete(String key, String token) throws Exception {
            return fenced(t -> {
                if (control) {
                    conn.command("DEL", "v:" + key);
                } else {
                    fence.call(key, t, "DEL", List.of("v:" + key));
                }
                return null;
            }, token, control)[0];
        }

        @Override
        public String value(String key) throws Exception {
            return (String) conn.command("GET", "v:" + key);
        }

        @Override
        public long max(String key) throws Exception {
            return fence.max(key);
        }
    }

    @Test
    void redisCases() throws Exception {
        runAll(mode -> new RedisStore(mode.equals("none")), "redis", List.of("fence"));
    }

    @Test
    void admitRefusesAutoCommit() throws Exception {
        for (Dialect d : new Dialect[] {postgres(), mariadb()}) {
            createTables(d);
            try (Connection c = connect(d)) {
                c.setAutoCommit(true);
                assertThrows(JdbcFence.NoTransactionException.class, () -> d.fence().admit(c, "java-autocommit", 5));
            }
        }
    }

    @Test
    void foldingFenceTableIsRefusedWithItsMigration() throws Exception {
        Dialect d = mariadb();
        String table = "fence_case_folding_java";
        try (Connection c = connect(d); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS " + table);
            st.execute("CREATE TABLE " + table + " (fence_key varchar(255) NOT NULL PRIMARY KEY, max_token bigint unsigned NOT NULL) ENGINE=InnoDB");
            JdbcFence f = d.fence().on(table, "fence_key", "max_token");
            JdbcFence.KeyCollationException e = assertThrows(JdbcFence.KeyCollationException.class, () -> f.createTable(c));
            String alter = e.getMessage().substring(e.getMessage().indexOf("migrate it with: ") + "migrate it with: ".length());
            assertTrue(alter.startsWith("ALTER TABLE " + table + " "), e.getMessage());
            st.execute(alter);
            f.createTable(c);
        }
    }

    @Test
    void redisWithoutAofIsRefused() throws Exception {
        try (Resp r = redis()) {
            r.command("CONFIG", "SET", "appendonly", "no");
            try {
                assertThrows(RedisFence.PersistenceException.class, () -> RedisFence.open(r));
                RedisFence.open(r, false); // a warning only
            } finally {
                r.command("CONFIG", "SET", "appendonly", "yes");
            }
            RedisFence.open(r);
        }
    }
}

package dev.seqd.fence;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Fenced transactions over JDBC, for PostgreSQL ({@link #postgres()}) and MariaDB/MySQL ({@link
 * #mariadb()}). The key's highest token lives in the table {@code seqd_fence (key, max_token)},
 * the same table the Go, Python and JavaScript helpers use. A fenced transaction first raises the
 * key's max, refusing a lower token, then runs the caller's statements in the same transaction,
 * which holds the fence row locked until it commits: another holder's transaction on the key
 * waits, then is refused.
 *
 * <p>PostgreSQL raises the max in one statement, {@code INSERT … ON CONFLICT (key) DO UPDATE …
 * WHERE seqd_fence.max_token <= EXCLUDED.max_token}: no row means refused. At REPEATABLE READ and
 * SERIALIZABLE a transaction whose snapshot predates a newer holder's commit on the key fails with
 * SQLSTATE 40001 instead: retry it. MariaDB has no {@code ON CONFLICT … WHERE}: {@code INSERT …
 * ON DUPLICATE KEY UPDATE max_token = GREATEST(…)} raises the max and locks the row, and a locking
 * read ({@code SELECT … FOR UPDATE}, which sees the newest committed row at any isolation level)
 * says what it became; InnoDB may pick a deadlock victim under contention (error 1213): retry.
 *
 * <p>Reads go through a fenced transaction too: a read raises the max, so that an old holder's
 * delayed write cannot land between a new holder's read and its write.
 */
public final class JdbcFence {
    /** What a fenced transaction runs, on the connection of the transaction. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection conn) throws SQLException;
    }

    private final String createTable;
    private final String raise;
    private final String max;
    private final boolean upsertRefuses; // PostgreSQL: the upsert's count says; MariaDB: the read does

    private JdbcFence(String createTable, String raise, String max, boolean upsertRefuses) {
        this.createTable = createTable;
        this.raise = raise;
        this.max = max;
        this.upsertRefuses = upsertRefuses;
    }

    /** The fence for PostgreSQL. */
    public static JdbcFence postgres() {
        return new JdbcFence(
                "CREATE TABLE IF NOT EXISTS seqd_fence (key text PRIMARY KEY, "
                        + "max_token numeric(20) NOT NULL CHECK (max_token BETWEEN 1 AND 18446744073709551615))",
                "INSERT INTO seqd_fence (key, max_token) VALUES (?, ?) "
                        + "ON CONFLICT (key) DO UPDATE SET max_token = EXCLUDED.max_token "
                        + "WHERE seqd_fence.max_token <= EXCLUDED.max_token",
                "SELECT max_token::text FROM seqd_fence WHERE key = ?",
                true);
    }

    /** The fence for MariaDB and MySQL (InnoDB). */
    public static JdbcFence mariadb() {
        return new JdbcFence(
                "CREATE TABLE IF NOT EXISTS seqd_fence ("
                        + "`key` varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, "
                        + "max_token decimal(20) NOT NULL) ENGINE=InnoDB",
                "INSERT INTO seqd_fence (`key`, max_token) VALUES (?, ?) "
                        + "ON DUPLICATE KEY UPDATE max_token = GREATEST(max_token, VALUES(max_token))",
                "SELECT CAST(max_token AS CHAR) FROM seqd_fence WHERE `key` = ? FOR UPDATE",
                false);
    }

    /** Creates {@code seqd_fence} if it does not exist. */
    public void createTable(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute(createTable);
        }
        if (!conn.getAutoCommit()) {
            conn.commit();
        }
    }

    /**
     * Raises {@code key}'s max to {@code token} (unsigned) in the connection's open transaction, or
     * throws {@link StaleTokenException} if a higher token was used. The row stays locked until
     * that transaction ends: run the statements it guards in it, and roll back after a refusal.
     */
    public void admit(Connection conn, String key, long token) throws SQLException, StaleTokenException {
        if (token == 0) {
            throw new IllegalArgumentException("a fencing token is in 1..2^64-1, not 0");
        }
        int n;
        try (PreparedStatement st = conn.prepareStatement(raise)) {
            st.setString(1, key);
            st.setBigDecimal(2, new BigDecimal(Long.toUnsignedString(token)));
            n = st.executeUpdate();
        }
        if (upsertRefuses && n == 1) {
            return;
        }
        long got = 0;
        try (PreparedStatement st = conn.prepareStatement(max)) {
            st.setString(1, key);
            try (ResultSet rs = st.executeQuery()) {
                if (rs.next()) {
                    got = Long.parseUnsignedLong(rs.getString(1));
                }
            }
        }
        if (upsertRefuses || got != token) {
            throw new StaleTokenException(key, token, got);
        }
    }

    /**
     * Runs {@code work} in a transaction fenced by {@code token} on {@code key}: admit, work,
     * commit; rollback if anything throws (a refusal included, thrown before work runs). The
     * connection's auto-commit setting is restored afterwards.
     */
    public <T> T inTransaction(Connection conn, String key, long token, Work<T> work) throws SQLException, StaleTokenException {
        boolean auto = conn.getAutoCommit();
        conn.setAutoCommit(false);
        try {
            admit(conn, key, token);
            T out = work.run(conn);
            conn.commit();
            return out;
        } catch (SQLException | StaleTokenException | RuntimeException | Error e) {
            try {
                conn.rollback();
            } catch (SQLException r) {
                e.addSuppressed(r);
            }
            throw e;
        } finally {
            conn.setAutoCommit(auto);
        }
    }
}

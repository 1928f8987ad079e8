package dev.seqd.fence;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Fenced transactions over JDBC, for PostgreSQL ({@link #postgres()}) and MariaDB/MySQL ({@link
 * #mariadb()}). The key's highest token lives in the table {@code seqd_fence (fence_key, max_token)},
 * the same table and SQL as the Go, Python and JavaScript helpers; {@link #on} puts it in a
 * column of the caller's own rows instead. A fenced transaction first raises the
 * key's max, refusing a lower token, then runs the caller's statements in the same transaction,
 * which holds the fence row locked until it commits: another holder's transaction on the key
 * waits, then is refused.
 *
 * <p>PostgreSQL raises the max in one statement, {@code INSERT … ON CONFLICT (fence_key) DO UPDATE …
 * WHERE seqd_fence.max_token <= EXCLUDED.max_token}: no row means refused. At REPEATABLE READ and
 * SERIALIZABLE a transaction whose snapshot predates a newer holder's commit on the key fails with
 * SQLSTATE 40001 instead: retry it. MariaDB has no {@code ON CONFLICT … WHERE}: {@code INSERT …
 * ON DUPLICATE KEY UPDATE max_token = IF(max_token <= …)} raises the max and locks the row, and a locking
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

    private static final java.util.regex.Pattern IDENT = java.util.regex.Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final String MAX_TOKEN_SQL = "18446744073709551615";

    private final boolean postgres;
    private final String createTable;
    private final String raise;
    private final String max;

    private JdbcFence(boolean postgres, String table, String k, String tok) {
        for (String[] w : new String[][] {{"table name", table}, {"key column", k}, {"token column", tok}}) {
            if (w[1] == null || !IDENT.matcher(w[1]).matches()) {
                throw new IllegalArgumentException(w[0] + " \"" + w[1] + "\" is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)");
            }
        }
        this.postgres = postgres;
        if (postgres) {
            createTable = "CREATE TABLE IF NOT EXISTS " + table + " (\n  " + k + " text PRIMARY KEY,\n  " + tok
                    + " numeric(20,0) NOT NULL CHECK (" + tok + " >= 1 AND " + tok + " <= " + MAX_TOKEN_SQL + ")\n)";
            // The WHERE of DO UPDATE is evaluated on the row's latest version once its lock is
            // had: a max raised by a transaction that committed while this one waited is seen.
            raise = "INSERT INTO " + table + " (" + k + ", " + tok + ") VALUES (?, ?::numeric)\n"
                    + "ON CONFLICT (" + k + ") DO UPDATE SET " + tok + " = EXCLUDED." + tok + "\n"
                    + "WHERE " + table + "." + tok + " IS NULL OR " + table + "." + tok + " <= EXCLUDED." + tok + "\n"
                    + "RETURNING " + tok + "::text";
            max = "SELECT " + tok + "::text FROM " + table + " WHERE " + k + " = ?";
        } else {
            createTable = "CREATE TABLE IF NOT EXISTS " + table + " (\n  " + k + " varchar(255) NOT NULL PRIMARY KEY,\n  " + tok
                    + " bigint unsigned NOT NULL CHECK (" + tok + " >= 1)\n) ENGINE=InnoDB";
            // ON DUPLICATE KEY UPDATE locks the row whether it changes it or not; the locking read
            // after it sees the latest version (not the transaction's snapshot) and tells raised
            // from refused.
            raise = "INSERT INTO " + table + " (" + k + ", " + tok + ") VALUES (?, CAST(? AS UNSIGNED))\n"
                    + "ON DUPLICATE KEY UPDATE " + tok + " = IF(" + tok + " IS NULL OR " + tok + " <= VALUES(" + tok + "), VALUES(" + tok + "), " + tok + ")";
            max = "SELECT CAST(" + tok + " AS CHAR) FROM " + table + " WHERE " + k + " = ?";
        }
    }

    /** The fence for PostgreSQL, on the fence table {@code seqd_fence (fence_key, max_token)}. */
    public static JdbcFence postgres() {
        return new JdbcFence(true, "seqd_fence", "fence_key", "max_token");
    }

    /** The fence for MariaDB and MySQL (InnoDB), on the fence table {@code seqd_fence (fence_key, max_token)}. */
    public static JdbcFence mariadb() {
        return new JdbcFence(false, "seqd_fence", "fence_key", "max_token");
    }

    /**
     * The same fence on another table: the column recipe, with the max in a token column of the
     * caller's own rows ({@code numeric(20,0)} on PostgreSQL, {@code bigint unsigned} on MariaDB,
     * NULL for a row never fenced). A missing row is created with only its key and token, so the
     * table's other columns need defaults, or the row must exist.
     */
    public JdbcFence on(String table, String keyColumn, String tokenColumn) {
        return new JdbcFence(postgres, table, keyColumn, tokenColumn);
    }

    /** Creates the fence table ({@code seqd_fence}) if it does not exist. */
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
        String tok = Long.toUnsignedString(token);
        if (postgres) {
            try (PreparedStatement st = conn.prepareStatement(raise)) {
                st.setString(1, key);
                st.setString(2, tok);
                try (ResultSet rs = st.executeQuery()) {
                    if (rs.next()) {
                        return;
                    }
                }
            }
            throw new StaleTokenException(key, token, readMax(conn, key, ""));
        }
        try (PreparedStatement st = conn.prepareStatement(raise)) {
            st.setString(1, key);
            st.setString(2, tok);
            st.executeUpdate();
        }
        long got = readMax(conn, key, " FOR UPDATE");
        if (Long.compareUnsigned(got, token) > 0) {
            throw new StaleTokenException(key, token, got);
        }
    }

    private long readMax(Connection conn, String key, String lock) throws SQLException {
        try (PreparedStatement st = conn.prepareStatement(max + lock)) {
            st.setString(1, key);
            try (ResultSet rs = st.executeQuery()) {
                String v = rs.next() ? rs.getString(1) : null;
                return v == null ? 0 : Long.parseUnsignedLong(v);
            }
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

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
 *
 * <p>With the column recipe a deleted row would take its max with it, and the old holder's next
 * write would recreate it with a stale token: {@link #createTable} on such a fence puts a trigger
 * on the caller's table that refuses to delete (on PostgreSQL, to truncate) a row whose token is
 * set. On MariaDB the fence table's key column is {@code varbinary}, so {@code orders/A} and
 * {@code orders/a} are two keys; {@link #createTable} refuses a fence table made earlier whose key
 * column folds them ({@link KeyCollationException}, with the ALTER TABLE that migrates it). {@link
 * #admit} refuses ({@link NoTransactionException}) on an auto-commit connection, where its check
 * and the caller's writes would commit apart.
 */
public final class JdbcFence {
    /** What a fenced transaction runs, on the connection of the transaction. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection conn) throws SQLException;
    }

    /** {@link #admit} on an auto-commit connection: the check and the writes would commit apart. */
    public static final class NoTransactionException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        public NoTransactionException() {
            super("admit outside an open transaction: the fence's check and the writes it guards would commit apart; "
                    + "turn auto-commit off (or use inTransaction) and run the writes in the same transaction");
        }
    }

    /** A MariaDB fence table whose key column folds distinct keys into one max; the message gives the migration. */
    public static final class KeyCollationException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        public KeyCollationException(String message) {
            super(message);
        }
    }

    /** The start of the error of the trigger that refuses to delete a row holding its fence max. */
    public static final String KEEP_ROW_MESSAGE = "seqd fence: this row keeps its fence max";

    private static final java.util.regex.Pattern IDENT = java.util.regex.Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final String MAX_TOKEN_SQL = "18446744073709551615";

    private final boolean postgres;
    private final String table;
    private final String keyColumn;
    private final boolean column;
    private final String createTable;
    private final String raise;
    private final String max;
    private final java.util.List<String> keepRows;

    private JdbcFence(boolean postgres, String table, String k, String tok) {
        for (String[] w : new String[][] {{"table name", table}, {"key column", k}, {"token column", tok}}) {
            if (w[1] == null || !IDENT.matcher(w[1]).matches()) {
                throw new IllegalArgumentException(w[0] + " \"" + w[1] + "\" is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)");
            }
        }
        this.postgres = postgres;
        this.table = table;
        this.keyColumn = k;
        this.column = !k.equals("fence_key") || !tok.equals("max_token");
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
            keepRows = java.util.List.of(
                    "CREATE OR REPLACE FUNCTION seqd_fence_keep_row() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
                            + "BEGIN\n"
                            + "  IF TG_LEVEL = 'STATEMENT' OR to_jsonb(OLD) ->> TG_ARGV[0] IS NOT NULL THEN\n"
                            + "    RAISE EXCEPTION '" + KEEP_ROW_MESSAGE + ": deleting it would let a stale holder recreate it; keep the row or use the fence table (%.%)', "
                            + "TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'restrict_violation';\n"
                            + "  END IF;\n"
                            + "  RETURN OLD;\n"
                            + "END $f$",
                    "CREATE OR REPLACE TRIGGER seqd_fence_keep_row BEFORE DELETE ON " + table + " FOR EACH ROW EXECUTE FUNCTION seqd_fence_keep_row('" + tok + "')",
                    "CREATE OR REPLACE TRIGGER seqd_fence_keep_rows BEFORE TRUNCATE ON " + table + " FOR EACH STATEMENT EXECUTE FUNCTION seqd_fence_keep_row('" + tok + "')");
        } else {
            createTable = "CREATE TABLE IF NOT EXISTS " + table + " (\n  " + k + " varbinary(1024) NOT NULL PRIMARY KEY,\n  " + tok
                    + " bigint unsigned NOT NULL CHECK (" + tok + " >= 1)\n) ENGINE=InnoDB";
            // ON DUPLICATE KEY UPDATE locks the row whether it changes it or not; the locking read
            // after it sees the latest version (not the transaction's snapshot) and tells raised
            // from refused.
            raise = "INSERT INTO " + table + " (" + k + ", " + tok + ") VALUES (?, CAST(? AS UNSIGNED))\n"
                    + "ON DUPLICATE KEY UPDATE " + tok + " = IF(" + tok + " IS NULL OR " + tok + " <= VALUES(" + tok + "), VALUES(" + tok + "), " + tok + ")";
            max = "SELECT CAST(" + tok + " AS CHAR) FROM " + table + " WHERE " + k + " = ?";
            String trigger = "seqd_keep_" + table;
            // MariaDB's MESSAGE_TEXT holds 128 characters at most.
            keepRows = java.util.List.of("CREATE TRIGGER IF NOT EXISTS " + trigger.substring(0, Math.min(64, trigger.length())) + " BEFORE DELETE ON " + table + " FOR EACH ROW\n"
                    + "IF OLD." + tok + " IS NOT NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '" + KEEP_ROW_MESSAGE + "; keep the row or use the fence table'; END IF");
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

    /**
     * Creates the fence table ({@code seqd_fence}) if it does not exist and, on MariaDB, checks that
     * it compares keys byte for byte ({@link KeyCollationException}); for the column recipe ({@link
     * #on}), puts on the caller's table the trigger that keeps rows whose token is set.
     */
    public void createTable(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            for (String q : column ? keepRows : java.util.List.of(createTable)) {
                st.execute(q);
            }
        }
        if (!column && !postgres) {
            checkKeyColumn(conn);
        }
        if (!conn.getAutoCommit()) {
            conn.commit();
        }
    }

    private void checkKeyColumn(Connection conn) throws SQLException {
        try (PreparedStatement st = conn.prepareStatement("SELECT DATA_TYPE, COLLATION_NAME FROM information_schema.COLUMNS "
                + "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?")) {
            st.setString(1, table);
            st.setString(2, keyColumn);
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    throw new KeyCollationException("the fence table " + table + " has no column " + keyColumn);
                }
                String type = rs.getString(1);
                String coll = rs.getString(2);
                String c = coll == null ? "" : coll.toLowerCase(java.util.Locale.ROOT);
                if (type.equals("varbinary") || type.equals("binary") || c.endsWith("_nopad_bin") || c.endsWith("_0900_bin")) {
                    return;
                }
                throw new KeyCollationException(table + "." + keyColumn + " is " + type + " with collation " + coll
                        + ", so keys that differ in case, trailing spaces or accents share one max; migrate it with: ALTER TABLE "
                        + table + " MODIFY " + keyColumn + " varbinary(1024) NOT NULL");
            }
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
        if (conn.getAutoCommit()) {
            throw new NoTransactionException();
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

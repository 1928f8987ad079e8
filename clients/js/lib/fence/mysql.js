// seqd/fence/mysql: fenced transactions on MariaDB and MySQL with mysql2.
//
// The key's highest token lives in the table seqd_fence (fence_key
// varbinary(1024) PRIMARY KEY, max_token bigint unsigned), the same table and
// SQL as the Go, Python and Java helpers. MariaDB has no ON CONFLICT …
// WHERE: in the transaction, INSERT … ON DUPLICATE KEY UPDATE raises the
// max if it is not above the token and locks the row either way, and a
// locking read (FOR UPDATE, which sees the newest committed row, not the
// transaction's snapshot) says what it became: above the token, a newer
// holder has used the key and the transaction is rolled back. Your
// statements then run with the fence row locked until COMMIT. Under
// contention InnoDB may pick a deadlock victim (errno 1213): run the
// transaction again. The column recipe keeps the max in your own row: pass
// {table, keyColumn, tokenColumn}; then createTable puts on your table a
// trigger that refuses to delete a row whose token is set. The key is a
// binary string, so orders/A, orders/a and "orders/a " are three keys;
// createTable refuses (KeyCollationError) a fence table made earlier whose
// key column folds them, and says which ALTER TABLE migrates it. admit
// refuses (NoTransactionError) outside an open transaction (the server's
// in-transaction flag in the answer to its upsert).
// This module imports no driver: it works on the mysql2 connection you pass.

import { StaleTokenError, checkToken } from './index.js';
import { KEEP_ROW_MESSAGE, KeyCollationError, NoTransactionError, checkKeyColumn, columnRecipe, statements } from './sql.js';

export { KEEP_ROW_MESSAGE, KeyCollationError, NoTransactionError };

/** The CREATE TABLE of the fence table. */
export const CREATE_TABLE = statements('mysql').create;

// promised is the promise API of a mysql2 connection or pool, whichever was passed.
const promised = (db) => (typeof db.promise === 'function' ? db.promise() : db);

/**
 * Creates the fence table (seqd_fence, or where's table) if it does not
 * exist and checks that it compares keys byte for byte; for the column
 * recipe (where names a key or token column), puts on where's table the
 * trigger that keeps rows whose token is set.
 */
export async function createTable(db, where) {
  const sql = statements('mysql', where);
  const c = promised(db);
  if (columnRecipe(where)) {
    for (const q of sql.keepRows) await c.query(q);
    return;
  }
  await c.query(sql.create);
  const table = where?.table ?? 'seqd_fence';
  const k = where?.keyColumn ?? 'fence_key';
  const [rows] = await c.query(
    'SELECT DATA_TYPE AS type, COLLATION_NAME AS coll FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?',
    [table, k],
  );
  if (!rows.length) throw new KeyCollationError(`the fence table ${table} has no column ${k}`);
  checkKeyColumn(table, k, String(rows[0].type), rows[0].coll);
}

/**
 * Raises key's max to token inside the connection's open transaction, or
 * throws StaleTokenError if a higher token was used. The row stays locked
 * until that transaction ends.
 */
export async function admit(conn, key, token, where) {
  const t = checkToken(token);
  const sql = statements('mysql', where);
  const c = promised(conn);
  const [res] = await c.query(sql.upsert, [key, t.toString()]);
  // SERVER_STATUS_IN_TRANS (1) of the server's OK packet.
  if (typeof res?.serverStatus === 'number' && (res.serverStatus & 1) === 0) throw new NoTransactionError();
  const [rows] = await c.query(`${sql.max} FOR UPDATE`, [key]);
  const max = BigInt(rows[0].max);
  if (max > t) throw new StaleTokenError(key, t, max);
}

/**
 * Runs fn(conn) in a transaction fenced by token on key: BEGIN, admit, fn,
 * COMMIT; ROLLBACK if anything throws (a refusal included, thrown before fn
 * runs). db is a mysql2 connection or pool (promise API or not; a
 * connection is taken from a pool). fn gets the promise API of the
 * connection. Resolves with fn's result.
 */
export async function transaction(db, key, token, fn, where) {
  const p = promised(db);
  const pooled = typeof p.getConnection === 'function';
  const conn = pooled ? await p.getConnection() : p;
  try {
    await conn.query('BEGIN');
    try {
      await admit(conn, key, token, where);
      const out = await fn(conn);
      await conn.query('COMMIT');
      return out;
    } catch (e) {
      await conn.query('ROLLBACK').catch(() => {});
      throw e;
    }
  } finally {
    if (pooled) conn.release();
  }
}

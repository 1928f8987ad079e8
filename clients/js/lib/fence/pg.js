// seqd/fence/pg: fenced transactions on PostgreSQL with node-postgres (pg).
//
// The key's highest token lives in the table seqd_fence (fence_key text
// PRIMARY KEY, max_token numeric(20,0)), the same table and SQL as the Go,
// Python and Java helpers. A fenced transaction first raises the key's max
// in one statement that refuses a lower token (INSERT … ON CONFLICT … DO
// UPDATE … WHERE max_token <= token RETURNING: no row back, refused), then
// runs your statements; the fence row stays locked until COMMIT, so another
// holder's transaction on the key waits and is then refused. Reads go
// through transaction() too: a read raises the max. The column recipe keeps
// the max in your own row: pass {table, keyColumn, tokenColumn}; then
// createTable puts on your table a trigger that refuses to delete (or
// truncate) a row whose token is set, since the old holder's next write
// would recreate it with a stale token: keep such rows, or use the fence
// table. admit refuses (NoTransactionError) on a client outside a
// transaction, where its check and your writes would commit apart.
// At REPEATABLE READ or SERIALIZABLE a transaction whose snapshot predates
// a newer holder's commit on the key fails with SQLSTATE 40001: run it
// again. This module imports no driver: it works on the pg client you pass.

import { StaleTokenError, checkToken } from './index.js';
import { KEEP_ROW_MESSAGE, NoTransactionError, columnRecipe, statements } from './sql.js';

export { KEEP_ROW_MESSAGE, NoTransactionError };

/** The CREATE TABLE of the fence table. */
export const CREATE_TABLE = statements('postgres').create;

/**
 * Creates the fence table (seqd_fence, or where's table) if it does not
 * exist; for the column recipe (where names a key or token column), puts on
 * where's table the trigger that keeps rows whose token is set.
 */
export async function createTable(db, where) {
  const sql = statements('postgres', where);
  for (const q of columnRecipe(where) ? sql.keepRows : [sql.create]) await db.query(q);
}

/**
 * Raises key's max to token inside the client's open transaction, or throws
 * StaleTokenError if a higher token was used. The row stays locked until
 * that transaction ends: run the statements it guards in it, and roll back
 * after a refusal. where ({table, keyColumn, tokenColumn}) chooses the
 * column recipe.
 */
export async function admit(client, key, token, where) {
  const t = checkToken(token);
  const sql = statements('postgres', where);
  const res = await client.query(sql.upsert, [key, t.toString()]);
  // 'I': idle, the statement committed on its own (no BEGIN before it).
  const status = typeof client.getTransactionStatus === 'function' ? client.getTransactionStatus() : client._txStatus;
  if (status === 'I') throw new NoTransactionError();
  if (res.rows.length === 1) return;
  const cur = await client.query(sql.max, [key]);
  throw new StaleTokenError(key, t, cur.rows.length && cur.rows[0].max !== null ? BigInt(cur.rows[0].max) : 0n);
}

/**
 * Runs fn(client) in a transaction fenced by token on key: BEGIN, admit,
 * fn, COMMIT; ROLLBACK if anything throws (a refusal included, thrown
 * before fn runs). db is a pg.Client or a pg.Pool (a client is taken from
 * it for the transaction). Resolves with fn's result.
 */
export async function transaction(db, key, token, fn, where) {
  const pooled = typeof db.totalCount === 'number' && typeof db.connect === 'function';
  const client = pooled ? await db.connect() : db;
  try {
    await client.query('BEGIN');
    try {
      await admit(client, key, token, where);
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw e;
    }
  } finally {
    if (pooled) client.release();
  }
}

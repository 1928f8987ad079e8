// seqd/fence/mysql: fenced transactions on MariaDB and MySQL with mysql2.
//
// The key's highest token lives in the table seqd_fence, the same table the
// Go, Python and Java helpers use (`key` is a reserved word here, hence the
// quotes; the binary collation keeps "A" and "a" apart). MariaDB has no
// ON CONFLICT … WHERE: in the transaction, one statement raises the max
// (GREATEST) and locks the row, and a locking read (FOR UPDATE, which sees
// the newest committed row whatever the isolation level) says what it
// became: if not the token, a newer holder has used the key and the
// transaction is rolled back. Your statements then run with the fence row
// locked until COMMIT. Under contention InnoDB may pick a deadlock victim
// (errno 1213): retry the transaction.
// This module imports no driver: it works on the mysql2 connection you pass.

import { StaleTokenError, checkToken } from './index.js';

export const CREATE_TABLE =
  'CREATE TABLE IF NOT EXISTS seqd_fence (' +
  '`key` varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, ' +
  'max_token decimal(20) NOT NULL) ENGINE=InnoDB';

const RAISE =
  'INSERT INTO seqd_fence (`key`, max_token) VALUES (?, ?) ' +
  'ON DUPLICATE KEY UPDATE max_token = GREATEST(max_token, VALUES(max_token))';
const MAX = 'SELECT CAST(max_token AS CHAR) AS max FROM seqd_fence WHERE `key` = ? FOR UPDATE';

// promised is the promise API of a mysql2 connection or pool, whichever was passed.
const promised = (db) => (typeof db.promise === 'function' ? db.promise() : db);

/** Creates seqd_fence if it does not exist. */
export async function createTable(db) {
  await promised(db).query(CREATE_TABLE);
}

/**
 * Raises key's max to token inside the connection's open transaction, or
 * throws StaleTokenError if a higher token was used. The row stays locked
 * until that transaction ends.
 */
export async function admit(conn, key, token) {
  const t = checkToken(token);
  const c = promised(conn);
  await c.query(RAISE, [key, t.toString()]);
  const [rows] = await c.query(MAX, [key]);
  const max = BigInt(rows[0].max);
  if (max !== t) throw new StaleTokenError(key, t, max);
}

/**
 * Runs fn(conn) in a transaction fenced by token on key: BEGIN, admit, fn,
 * COMMIT; ROLLBACK if anything throws (a refusal included, thrown before fn
 * runs). db is a mysql2 connection or pool (promise API or not; a
 * connection is taken from a pool). fn gets the promise API of the
 * connection. Resolves with fn's result.
 */
export async function transaction(db, key, token, fn) {
  const p = promised(db);
  const pooled = typeof p.getConnection === 'function';
  const conn = pooled ? await p.getConnection() : p;
  try {
    await conn.query('BEGIN');
    try {
      await admit(conn, key, token);
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

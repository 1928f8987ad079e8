// seqd/fence/pg: fenced transactions on PostgreSQL with node-postgres (pg).
//
// The key's highest token lives in the table seqd_fence, the same table the
// Go, Python and Java helpers use:
//
//   CREATE TABLE seqd_fence (key text PRIMARY KEY, max_token numeric(20) NOT NULL)
//
// A fenced transaction first raises the key's max in one statement that
// refuses a lower token (INSERT … ON CONFLICT … DO UPDATE … WHERE
// max_token <= token), then runs your statements; the fence row stays
// locked until COMMIT, so another holder's transaction on the key waits and
// is then refused. Reads go through transaction() too: a read raises the max.
// At REPEATABLE READ or SERIALIZABLE a transaction whose snapshot predates a
// newer holder's commit on the key fails with SQLSTATE 40001: retry it.
// This module imports no driver: it works on the pg client you pass.

import { StaleTokenError, checkToken } from './index.js';

export const CREATE_TABLE =
  'CREATE TABLE IF NOT EXISTS seqd_fence (' +
  'key text PRIMARY KEY, ' +
  'max_token numeric(20) NOT NULL CHECK (max_token BETWEEN 1 AND 18446744073709551615))';

const RAISE =
  'INSERT INTO seqd_fence (key, max_token) VALUES ($1, $2::numeric) ' +
  'ON CONFLICT (key) DO UPDATE SET max_token = EXCLUDED.max_token ' +
  'WHERE seqd_fence.max_token <= EXCLUDED.max_token';
const MAX = 'SELECT max_token::text AS max FROM seqd_fence WHERE key = $1';

/** Creates seqd_fence if it does not exist. */
export async function createTable(db) {
  await db.query(CREATE_TABLE);
}

/**
 * Raises key's max to token inside the client's open transaction, or throws
 * StaleTokenError if a higher token was used. The row stays locked until
 * that transaction ends: run the statements it guards in it, and roll back
 * after a refusal.
 */
export async function admit(client, key, token) {
  const t = checkToken(token);
  const res = await client.query(RAISE, [key, t.toString()]);
  if (res.rowCount === 1) return;
  const cur = await client.query(MAX, [key]);
  throw new StaleTokenError(key, t, cur.rows.length ? BigInt(cur.rows[0].max) : 0n);
}

/**
 * Runs fn(client) in a transaction fenced by token on key: BEGIN, admit,
 * fn, COMMIT; ROLLBACK if anything throws (a refusal included, thrown
 * before fn runs). db is a pg.Client or a pg.Pool (a client is taken from
 * it for the transaction). Resolves with fn's result.
 */
export async function transaction(db, key, token, fn) {
  const pooled = typeof db.totalCount === 'number' && typeof db.connect === 'function';
  const client = pooled ? await db.connect() : db;
  try {
    await client.query('BEGIN');
    try {
      await admit(client, key, token);
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

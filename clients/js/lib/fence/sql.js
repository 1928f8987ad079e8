// The SQL of the fences, shared with the Go (fence/sqlfence), Python and
// Java helpers: one schema, so that a fence table written from one language
// is read by the others. Internal to seqd/fence/pg and seqd/fence/mysql.

export const MAX_TOKEN_SQL = '18446744073709551615';
export const DEFAULT_WHERE = { table: 'seqd_fence', keyColumn: 'fence_key', tokenColumn: 'max_token' };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const cache = new Map();

function check(what, s) {
  if (typeof s !== 'string' || !IDENT.test(s)) {
    throw new TypeError(`${what} ${JSON.stringify(s)} is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)`);
  }
}

/** {create, upsert, max} of a dialect ("postgres" or "mysql") for a table, key column and token column. */
export function statements(dialect, { table = DEFAULT_WHERE.table, keyColumn: k = DEFAULT_WHERE.keyColumn, tokenColumn: tok = DEFAULT_WHERE.tokenColumn } = {}) {
  const id = `${dialect} ${table} ${k} ${tok}`;
  let s = cache.get(id);
  if (s) return s;
  check('table name', table);
  check('key column', k);
  check('token column', tok);
  if (dialect === 'postgres') {
    s = {
      create: `CREATE TABLE IF NOT EXISTS ${table} (\n  ${k} text PRIMARY KEY,\n  ${tok} numeric(20,0) NOT NULL CHECK (${tok} >= 1 AND ${tok} <= ${MAX_TOKEN_SQL})\n)`,
      // The WHERE of DO UPDATE is evaluated on the row's latest version once
      // its lock is had: a max raised by a transaction that committed while
      // this one waited is seen.
      upsert:
        `INSERT INTO ${table} (${k}, ${tok}) VALUES ($1, $2::numeric)\n` +
        `ON CONFLICT (${k}) DO UPDATE SET ${tok} = EXCLUDED.${tok}\n` +
        `WHERE ${table}.${tok} IS NULL OR ${table}.${tok} <= EXCLUDED.${tok}\n` +
        `RETURNING ${tok}::text`,
      max: `SELECT ${tok}::text AS max FROM ${table} WHERE ${k} = $1`,
    };
  } else {
    s = {
      create: `CREATE TABLE IF NOT EXISTS ${table} (\n  ${k} varchar(255) NOT NULL PRIMARY KEY,\n  ${tok} bigint unsigned NOT NULL CHECK (${tok} >= 1)\n) ENGINE=InnoDB`,
      // ON DUPLICATE KEY UPDATE locks the row whether it changes it or not;
      // the locking read after it sees the latest version (not the
      // transaction's snapshot) and tells raised from refused.
      upsert:
        `INSERT INTO ${table} (${k}, ${tok}) VALUES (?, CAST(? AS UNSIGNED))\n` +
        `ON DUPLICATE KEY UPDATE ${tok} = IF(${tok} IS NULL OR ${tok} <= VALUES(${tok}), VALUES(${tok}), ${tok})`,
      max: `SELECT CAST(${tok} AS CHAR) AS max FROM ${table} WHERE ${k} = ?`,
    };
  }
  cache.set(id, s);
  return s;
}

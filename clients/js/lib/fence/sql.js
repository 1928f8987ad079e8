// The SQL of the fences, shared with the Go (fence/sqlfence), Python and
// Java helpers: one schema, so that a fence table written from one language
// is read by the others. Internal to seqd/fence/pg and seqd/fence/mysql.

export const MAX_TOKEN_SQL = '18446744073709551615';

/** The start of the error of the trigger that refuses to delete a row that holds its fence max (the column recipe). */
export const KEEP_ROW_MESSAGE = 'seqd fence: this row keeps its fence max';

/** admit ran outside an open transaction: the fence's check and the writes it guards would commit apart. */
export class NoTransactionError extends Error {
  constructor() {
    super("admit outside an open transaction: the fence's check and the writes it guards would commit apart; begin a transaction first and run the writes in it");
    this.name = 'NoTransactionError';
  }
}

/** A MariaDB fence table whose key column folds distinct keys (case, trailing spaces, accents) into one max; the message gives the migration. */
export class KeyCollationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'KeyCollationError';
  }
}

/** Naming a key or token column other than the fence table's chooses the column recipe. */
export function columnRecipe({ keyColumn = DEFAULT_WHERE.keyColumn, tokenColumn = DEFAULT_WHERE.tokenColumn } = {}) {
  return keyColumn !== DEFAULT_WHERE.keyColumn || tokenColumn !== DEFAULT_WHERE.tokenColumn;
}

/** Throws KeyCollationError unless MariaDB's column (DATA_TYPE, COLLATION_NAME) compares keys byte for byte. */
export function checkKeyColumn(table, k, type, collation) {
  const c = String(collation ?? '').toLowerCase();
  if (type === 'varbinary' || type === 'binary' || c.endsWith('_nopad_bin') || c.endsWith('_0900_bin')) return;
  throw new KeyCollationError(
    `${table}.${k} is ${type} with collation ${collation}, so keys that differ in case, trailing spaces or accents share one max; ` +
      `migrate it with: ALTER TABLE ${table} MODIFY ${k} varbinary(1024) NOT NULL`,
  );
}
export const DEFAULT_WHERE = { table: 'seqd_fence', keyColumn: 'fence_key', tokenColumn: 'max_token' };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const cache = new Map();

function check(what, s) {
  if (typeof s !== 'string' || !IDENT.test(s)) {
    throw new TypeError(`${what} ${JSON.stringify(s)} is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)`);
  }
}

/** {create, upsert, max, keepRows} of a dialect ("postgres" or "mysql") for a table, key column and token column. */
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
      keepRows: [
        'CREATE OR REPLACE FUNCTION seqd_fence_keep_row() RETURNS trigger LANGUAGE plpgsql AS $f$\n' +
          'BEGIN\n' +
          "  IF TG_LEVEL = 'STATEMENT' OR to_jsonb(OLD) ->> TG_ARGV[0] IS NOT NULL THEN\n" +
          `    RAISE EXCEPTION '${KEEP_ROW_MESSAGE}: deleting it would let a stale holder recreate it; keep the row or use the fence table (%.%)', ` +
          "TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'restrict_violation';\n" +
          '  END IF;\n' +
          '  RETURN OLD;\n' +
          'END $f$',
        `CREATE OR REPLACE TRIGGER seqd_fence_keep_row BEFORE DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION seqd_fence_keep_row('${tok}')`,
        `CREATE OR REPLACE TRIGGER seqd_fence_keep_rows BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION seqd_fence_keep_row('${tok}')`,
      ],
    };
  } else {
    s = {
      create: `CREATE TABLE IF NOT EXISTS ${table} (\n  ${k} varbinary(1024) NOT NULL PRIMARY KEY,\n  ${tok} bigint unsigned NOT NULL CHECK (${tok} >= 1)\n) ENGINE=InnoDB`,
      // ON DUPLICATE KEY UPDATE locks the row whether it changes it or not;
      // the locking read after it sees the latest version (not the
      // transaction's snapshot) and tells raised from refused.
      upsert:
        `INSERT INTO ${table} (${k}, ${tok}) VALUES (?, CAST(? AS UNSIGNED))\n` +
        `ON DUPLICATE KEY UPDATE ${tok} = IF(${tok} IS NULL OR ${tok} <= VALUES(${tok}), VALUES(${tok}), ${tok})`,
      max: `SELECT CAST(${tok} AS CHAR) AS max FROM ${table} WHERE ${k} = ?`,
      // MariaDB's MESSAGE_TEXT holds 128 characters at most.
      keepRows: [
        `CREATE TRIGGER IF NOT EXISTS ${`seqd_keep_${table}`.slice(0, 64)} BEFORE DELETE ON ${table} FOR EACH ROW\n` +
          `IF OLD.${tok} IS NOT NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '${KEEP_ROW_MESSAGE}; keep the row or use the fence table'; END IF`,
      ],
    };
  }
  cache.set(id, s);
  return s;
}

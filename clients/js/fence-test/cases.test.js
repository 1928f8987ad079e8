// The shared fence cases, with pg, mysql2 and ioredis, against the
// harness's PostgreSQL, MariaDB and Redis (go test ./clients/ -run
// TestJSFences). Each case runs with the fence and under the "none" control.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import mysql from 'mysql2/promise';
import Redis from 'ioredis';
import { MAX_TOKEN, StaleTokenError } from '../lib/fence/index.js';
import * as pgFence from '../lib/fence/pg.js';
import * as myFence from '../lib/fence/mysql.js';
import { readFileSync } from 'node:fs';
import { PersistenceError, PREFIX, RedisFence } from '../lib/fence/redis.js';
import { database, env, fenced, runAll, runId } from './support.js';

const VALUES_PG = 'CREATE TABLE IF NOT EXISTS fence_case_values (k text PRIMARY KEY, v text NOT NULL)';
const UPSERT_PG = 'INSERT INTO fence_case_values (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v';
const SELECT_PG = 'SELECT v FROM fence_case_values WHERE k = $1';
const VALUES_MY =
  'CREATE TABLE IF NOT EXISTS fence_case_values (' +
  'k varbinary(1024) PRIMARY KEY, v text NOT NULL) ENGINE=InnoDB';
const UPSERT_MY = 'INSERT INTO fence_case_values (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)';
const SELECT_MY = 'SELECT v FROM fence_case_values WHERE k = ?';

// The column recipe: the max in the data's own row (fence_token), which a
// fenced write or read creates if it is missing.
const ROWS_PG = 'CREATE TABLE IF NOT EXISTS fence_case_rows (k text PRIMARY KEY, v text NULL, fence_token numeric(20,0) NULL)';
const ROWS_MY =
  'CREATE TABLE IF NOT EXISTS fence_case_rows (' +
  'k varbinary(1024) NOT NULL PRIMARY KEY, v text NULL, fence_token bigint unsigned NULL) ENGINE=InnoDB';
const COLUMN = { table: 'fence_case_rows', keyColumn: 'k', tokenColumn: 'fence_token' };

async function pgClient() {
  const c = new pg.Client(database('SEQD_TEST_PG'));
  c.on('error', () => {}); // a killed server: the next query says so
  await c.connect();
  return c;
}

const myConnect = () => mysql.createConnection(database('SEQD_TEST_MARIADB'));

function redisClient() {
  const d = database('SEQD_TEST_REDIS');
  return new Redis({ host: d.host, port: d.port, db: Number(d.database ?? 0), maxRetriesPerRequest: 1, lazyConnect: false });
}

class PostgresStore {
  static async open(mode) {
    const s = new PostgresStore();
    s.mode = mode;
    s.control = mode === 'fence' || mode === 'column' ? '' : mode;
    s.where = mode === 'column' ? COLUMN : undefined;
    s.values = mode === 'column' ? 'fence_case_rows' : 'fence_case_values';
    await s.reconnect();
    return s;
  }

  async reconnect() {
    this.conn = await pgClient();
  }

  async close() {
    await this.conn.end();
  }

  writer() {
    return PostgresStore.open(this.mode);
  }

  async write(key, token, value) {
    const r = await fenced(async (t) => {
      if (this.control) return this.conn.query(UPSERT_PG, [key, value]);
      return pgFence.transaction(this.conn, key, t, (c) =>
        this.where ? c.query('UPDATE fence_case_rows SET v = $1 WHERE k = $2', [value, key]) : c.query(UPSERT_PG, [key, value]), this.where);
    }, token, this.control);
    return r.outcome;
  }

  read(key, token) {
    return fenced(async (t) => {
      if (this.control) return this.value(key);
      return pgFence.transaction(this.conn, key, t, async (c) => (await c.query(`SELECT v FROM ${this.values} WHERE k = $1`, [key])).rows[0]?.v ?? null, this.where);
    }, token, this.control);
  }

  async delete(key, token) {
    try {
      const r = await fenced(async (t) => {
        if (this.control) return this.conn.query(`DELETE FROM ${this.values} WHERE k = $1`, [key]);
        return pgFence.transaction(this.conn, key, t, (c) => c.query(`DELETE FROM ${this.values} WHERE k = $1`, [key]), this.where);
      }, token, this.control);
      return r.outcome;
    } catch (e) {
      if (String(e?.message).includes(pgFence.KEEP_ROW_MESSAGE)) return 'kept';
      throw e;
    }
  }

  async value(key) {
    return (await this.conn.query(`SELECT v FROM ${this.values} WHERE k = $1`, [key])).rows[0]?.v ?? null;
  }

  async max(key) {
    const q = this.where
      ? 'SELECT fence_token::text AS m FROM fence_case_rows WHERE k = $1'
      : 'SELECT max_token::text AS m FROM seqd_fence WHERE fence_key = $1';
    const { rows } = await this.conn.query(q, [key]);
    return rows.length && rows[0].m !== null ? BigInt(rows[0].m) : 0n;
  }
}

class MariaDBStore {
  static async open(mode) {
    const s = new MariaDBStore();
    s.mode = mode;
    s.control = mode === 'fence' || mode === 'column' ? '' : mode;
    s.where = mode === 'column' ? COLUMN : undefined;
    s.values = mode === 'column' ? 'fence_case_rows' : 'fence_case_values';
    await s.reconnect();
    return s;
  }

  async reconnect() {
    this.conn = await myConnect();
    this.conn.on('error', () => {});
  }

  async close() {
    await this.conn.end().catch(() => {});
  }

  writer() {
    return MariaDBStore.open(this.mode);
  }

  async write(key, token, value) {
    const r = await fenced(async (t) => {
      if (this.control) return this.conn.query(UPSERT_MY, [key, value]);
      return myFence.transaction(this.conn, key, t, (c) =>
        this.where ? c.query('UPDATE fence_case_rows SET v = ? WHERE k = ?', [value, key]) : c.query(UPSERT_MY, [key, value]), this.where);
    }, token, this.control);
    return r.outcome;
  }

  read(key, token) {
    return fenced(async (t) => {
      if (this.control) return this.value(key);
      return myFence.transaction(this.conn, key, t, async (c) => (await c.query(`SELECT v FROM ${this.values} WHERE k = ?`, [key]))[0][0]?.v ?? null, this.where);
    }, token, this.control);
  }

  async delete(key, token) {
    try {
      const r = await fenced(async (t) => {
        if (this.control) return this.conn.query(`DELETE FROM ${this.values} WHERE k = ?`, [key]);
        return myFence.transaction(this.conn, key, t, (c) => c.query(`DELETE FROM ${this.values} WHERE k = ?`, [key]), this.where);
      }, token, this.control);
      return r.outcome;
    } catch (e) {
      if (String(e?.message).includes(myFence.KEEP_ROW_MESSAGE)) return 'kept';
      throw e;
    }
  }

  async value(key) {
    return (await this.conn.query(`SELECT v FROM ${this.values} WHERE k = ?`, [key]))[0][0]?.v ?? null;
  }

  async max(key) {
    const q = this.where
      ? 'SELECT CAST(fence_token AS CHAR) AS m FROM fence_case_rows WHERE k = ?'
      : 'SELECT CAST(max_token AS CHAR) AS m FROM seqd_fence WHERE fence_key = ?';
    const [rows] = await this.conn.query(q, [key]);
    return rows.length && rows[0].m !== null ? BigInt(rows[0].m) : 0n;
  }
}

// The "double" control: the same script with the one mistake it exists to
// avoid, tokens compared as Lua numbers (doubles, exact only to 2^53).
// The double control: the script before its guards, comparing as Lua
// numbers.
const UNGUARDED = readFileSync(env('SEQD_TEST_FENCE_UNGUARDED'), 'utf8');
const DOUBLE_SCRIPT = UNGUARDED.replace(
  "  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then\n    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')\n  end\n  if max > ARGV[1] then",
  '  if tonumber(max) > tonumber(ARGV[1]) then',
);
assert.notEqual(DOUBLE_SCRIPT, UNGUARDED);

class RedisStore {
  static async open(mode) {
    const s = new RedisStore();
    s.mode = mode;
    s.control = mode === 'fence' || mode === 'column' ? '' : mode;
    s.where = mode === 'column' ? COLUMN : undefined;
    s.values = mode === 'column' ? 'fence_case_rows' : 'fence_case_values';
    await s.reconnect();
    return s;
  }

  async reconnect() {
    this.client?.disconnect();
    this.client = redisClient();
    this.fence = await RedisFence.create(this.client);
  }

  async close() {
    this.client.disconnect();
  }

  writer() {
    return RedisStore.open(this.mode);
  }

  async double(key, token, command, keys, args) {
    if (!/^-?[0-9]+$/.test(token)) throw new StaleTokenError(key, 0n, 0n); // not a number: refused
    const reply = await this.client.eval(DOUBLE_SCRIPT, 1 + keys.length, PREFIX + key, ...keys, token, command, ...args);
    if (Number(reply[0]) !== 1) throw new StaleTokenError(key, 0n, 0n);
    return reply[1];
  }

  async write(key, token, value) {
    const r = await fenced(async (t) => {
      if (this.control === 'double') return this.double(key, t, 'SET', [`v:${key}`], [value]);
      if (this.control) return this.client.set(`v:${key}`, value);
      return this.fence.call(key, t, 'SET', { keys: [`v:${key}`], args: [value] });
    }, token, this.control);
    return r.outcome;
  }

  read(key, token) {
    return fenced(async (t) => {
      if (this.control === 'double') return this.double(key, t, 'GET', [`v:${key}`], []);
      if (this.control) return this.client.get(`v:${key}`);
      return this.fence.call(key, t, 'GET', { keys: [`v:${key}`] });
    }, token, this.control);
  }

  async delete(key, token) {
    const r = await fenced(async (t) => {
      if (this.control === 'double') return this.double(key, t, 'DEL', [`v:${key}`], []);
      if (this.control) return this.client.del(`v:${key}`);
      return this.fence.call(key, t, 'DEL', { keys: [`v:${key}`] });
    }, token, this.control);
    return r.outcome;
  }

  value(key) {
    return this.client.get(`v:${key}`);
  }

  max(key) {
    return this.fence.max(key);
  }
}

test('postgres', async (t) => {
  const c = await pgClient();
  try {
    await pgFence.createTable(c);
    await c.query(VALUES_PG);
    await c.query(ROWS_PG);
    await pgFence.createTable(c, COLUMN);
  } finally {
    await c.end();
  }
  await runAll(t, PostgresStore.open, 'postgres', { recipes: ['fence', 'column'] });

  await t.test('a pool: a refusal rolls back and gives the client back', async () => {
    const pool = new pg.Pool({ ...database('SEQD_TEST_PG'), max: 1 });
    const key = `${runId()}/pool`;
    try {
      await pgFence.transaction(pool, key, MAX_TOKEN, (cl) => cl.query(UPSERT_PG, [key, 'top']));
      await assert.rejects(
        pgFence.transaction(pool, key, MAX_TOKEN - 1n, () => assert.fail('ran after a refusal')),
        (e) => e instanceof StaleTokenError && e.token === MAX_TOKEN - 1n && e.max === MAX_TOKEN,
      );
      assert.equal(pool.idleCount, 1); // released: the one client of the pool is free again
      assert.equal(await pgFence.transaction(pool, key, MAX_TOKEN, async (cl) => (await cl.query(SELECT_PG, [key])).rows[0].v), 'top');
    } finally {
      await pool.end();
    }
  });
});

test('postgres: admit refuses a client outside a transaction', async () => {
  const c = await pgClient();
  try {
    await assert.rejects(pgFence.admit(c, `${runId()}/autocommit`, 5n), pgFence.NoTransactionError);
  } finally {
    await c.end();
  }
});

test('mariadb: admit outside a transaction, and a folding fence table, are refused', async () => {
  const c = await myConnect();
  try {
    await assert.rejects(myFence.admit(c, `${runId()}/autocommit`, 5n), myFence.NoTransactionError);
    const table = 'fence_case_folding_js';
    await c.query(`DROP TABLE IF EXISTS ${table}`);
    await c.query(`CREATE TABLE ${table} (fence_key varchar(255) NOT NULL PRIMARY KEY, max_token bigint unsigned NOT NULL) ENGINE=InnoDB`);
    let alter = '';
    await assert.rejects(myFence.createTable(c, { table }), (e) => {
      alter = e.message.split('migrate it with: ')[1] ?? '';
      return e instanceof myFence.KeyCollationError && alter.startsWith(`ALTER TABLE ${table} `);
    });
    await c.query(alter);
    await myFence.createTable(c, { table });
  } finally {
    await c.end();
  }
});

test('mariadb', async (t) => {
  const c = await myConnect();
  try {
    await myFence.createTable(c);
    await c.query(VALUES_MY);
    await c.query(ROWS_MY);
    await myFence.createTable(c, COLUMN);
  } finally {
    await c.end();
  }
  await runAll(t, MariaDBStore.open, 'mariadb', { recipes: ['fence', 'column'] });

  await t.test("the caller's error rolls back its write and the max", async () => {
    const pool = mysql.createPool({ ...database('SEQD_TEST_MARIADB'), connectionLimit: 1 });
    const key = `${runId()}/callers-error`;
    try {
      await assert.rejects(
        myFence.transaction(pool, key, 20n, async (cl) => {
          await cl.query(UPSERT_MY, [key, 'lost']);
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await myFence.transaction(pool, key, 19n, async (cl) => (await cl.query(SELECT_MY, [key]))[0].length), 0);
    } finally {
      await pool.end();
    }
  });
});

test('redis', async (t) => {
  await runAll(t, RedisStore.open, 'redis', { controls: ['none', 'double'] });

  await t.test('refuses a Redis without AOF, or warns', async () => {
    const client = redisClient();
    const warnings = [];
    const onWarning = (w) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      await client.config('SET', 'appendonly', 'no');
      try {
        await assert.rejects(RedisFence.create(client), PersistenceError);
        await RedisFence.create(client, { requireAOF: false });
      } finally {
        await client.config('SET', 'appendonly', 'yes');
      }
      await client.config('SET', 'appendfsync', 'everysec');
      try {
        await RedisFence.create(client);
      } finally {
        await client.config('SET', 'appendfsync', 'always');
      }
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      assert.ok(warnings.some((m) => m.includes('without the append-only file')), warnings.join('; '));
      assert.ok(warnings.some((m) => m.includes('appendfsync everysec')), warnings.join('; '));
    } finally {
      process.off('warning', onWarning);
      client.disconnect();
    }
  });
});

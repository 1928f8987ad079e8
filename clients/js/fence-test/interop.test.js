// The fence table and the script are the Go fences': a max the Go fences
// wrote (1000 on the key SEQD_TEST_FENCE_INTEROP_KEY, in each database) is
// read here, and the harness reads back what this suite wrote (1001).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import mysql from 'mysql2/promise';
import Redis from 'ioredis';
import { StaleTokenError } from '../lib/fence/index.js';
import * as pgFence from '../lib/fence/pg.js';
import * as myFence from '../lib/fence/mysql.js';
import { RedisFence } from '../lib/fence/redis.js';
import { statements } from '../lib/fence/sql.js';
import { database, env } from './support.js';

test('the same SQL as Go', () => {
  assert.equal(statements('postgres').create, env('SEQD_TEST_FENCE_GO_CREATE_POSTGRES'));
  assert.equal(statements('mysql').create, env('SEQD_TEST_FENCE_GO_CREATE_MARIADB'));
});

async function steps(admit) {
  const key = env('SEQD_TEST_FENCE_INTEROP_KEY');
  await assert.rejects(admit(key, 999n), (e) => e instanceof StaleTokenError && e.max === 1000n);
  await admit(key, 1000n);
  await admit(key, 1001n);
}

test('postgres: a max written by Go', async () => {
  const pool = new pg.Pool(database('SEQD_TEST_PG'));
  try {
    await steps((key, t) => pgFence.transaction(pool, key, t, () => {}));
  } finally {
    await pool.end();
  }
});

test('mariadb: a max written by Go', async () => {
  const pool = mysql.createPool(database('SEQD_TEST_MARIADB'));
  try {
    await steps((key, t) => myFence.transaction(pool, key, t, () => {}));
  } finally {
    await pool.end();
  }
});

test('redis: a max written by Go', async () => {
  const d = database('SEQD_TEST_REDIS');
  const client = new Redis({ host: d.host, port: d.port });
  try {
    const fence = await RedisFence.create(client);
    await steps((key, t) => fence.admit(key, t));
  } finally {
    client.disconnect();
  }
});

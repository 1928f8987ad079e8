// The Redis cases (fence/testdata/rediscases.json) with ioredis, one at a
// time on the harness's Redis of their own: the fence on a fake clock, and
// the unguarded control (the script before its guards, no check of Redis's
// settings), which must fail every case that names it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { StaleTokenError, parseToken } from '../lib/fence/index.js';
import { PREFIX, PersistenceError, RECHECK_MS, RedisFence, RefusedCommandError } from '../lib/fence/redis.js';
import { database, env, report } from './support.js';

const FENCE_KEY = `${PREFIX}k`;
const VALUE_KEY = 'value:k';
const names = (argv) => argv.map((a) => a.replaceAll('$fence', FENCE_KEY).replaceAll('$value', VALUE_KEY));

class Run {
  constructor(client, unguarded) {
    this.client = client;
    this.unguarded = unguarded;
    this.clock = 1_000_000;
    this.fence = null;
  }

  async open() {
    if (this.unguarded) return 'ok';
    try {
      this.fence = await RedisFence.create(this.client, { now: () => this.clock });
    } catch (e) {
      if (e instanceof PersistenceError) return 'unsafe';
      throw e;
    }
    return 'ok';
  }

  async do(token, argv, keys) {
    let t;
    try {
      t = parseToken(token);
    } catch {
      return 'invalid';
    }
    const [name, ...rest] = argv;
    const ks = rest.slice(0, keys);
    const args = rest.slice(keys);
    try {
      if (this.unguarded) {
        const reply = await this.client.eval(this.unguarded, 1 + ks.length, FENCE_KEY, ...ks, t.toString().padStart(20, '0'), name, ...args);
        return Number(reply[0]) === 1 ? 'ok' : 'stale';
      }
      if (!this.fence) return 'no fence: the last open was refused';
      await this.fence.call('k', t, name, { keys: ks, args });
      return 'ok';
    } catch (e) {
      if (e instanceof StaleTokenError) return 'stale';
      if (e instanceof RefusedCommandError) return 'refused';
      if (e instanceof PersistenceError) return 'unsafe';
      return `error ${e.message}`;
    }
  }
}

async function evict(client) {
  const blob = 'x'.repeat(64 << 10);
  for (let i = 0; i < 4096; i++) {
    await client.set(`filler:${i}`, blob).catch(() => {}); // an OOM refusal is an answer too
    if (i % 8 === 7 && !(await client.exists(FENCE_KEY))) return null;
  }
  return '256 MiB written and the fence key is still there';
}

async function runCase(client, c, unguarded) {
  await client.flushall();
  const restore = new Map();
  const r = new Run(client, unguarded);
  try {
    if ((await r.open()) !== 'ok') return 'open refused';
    for (const [i, st] of c.steps.entries()) {
      switch (st.op) {
        case 'write':
        case 'command': {
          const argv = st.op === 'write' ? ['SET', VALUE_KEY, st.value] : names(st.argv);
          const got = await r.do(st.token, argv, st.op === 'write' ? 1 : st.keys);
          if (got !== st.expect) return `step ${i}: ${st.op} ${JSON.stringify(argv)} with token ${st.token}: ${got}, want ${st.expect}`;
          break;
        }
        case 'value': {
          const v = await client.get(VALUE_KEY);
          if (v !== st.value) return `step ${i}: k holds ${JSON.stringify(v)}, want ${JSON.stringify(st.value)}`;
          break;
        }
        case 'max': {
          if (unguarded) break;
          const m = await r.fence.max('k');
          if (m !== BigInt(st.token)) return `step ${i}: max ${m}, want ${st.token}`;
          break;
        }
        case 'raw':
          await client.call(...names(st.argv));
          break;
        case 'config':
          for (const [k, v] of Object.entries(st.set)) {
            if (!restore.has(k)) restore.set(k, (await client.config('GET', k))[1]);
            await client.config('SET', k, v);
          }
          break;
        case 'evict': {
          const err = await evict(client);
          if (err) return `step ${i}: ${err}`;
          break;
        }
        case 'recheck':
          r.clock += RECHECK_MS;
          break;
        case 'open': {
          const got = await r.open();
          if (got !== st.expect) return `step ${i}: open: ${got}, want ${st.expect}`;
          break;
        }
        case 'ttl': {
          const has = (await client.pttl(FENCE_KEY)) > 0;
          if (has !== st.has) return `step ${i}: the fence key has a TTL: ${has}, want ${st.has}`;
          break;
        }
        default:
          return `step ${i}: unknown op ${st.op}`;
      }
    }
    return null;
  } finally {
    for (const [k, v] of restore) await client.config('SET', k, v);
  }
}

test('redis cases', async (t) => {
  const cases = JSON.parse(readFileSync(env('SEQD_TEST_FENCE_REDIS_CASES'), 'utf8'));
  const unguarded = readFileSync(env('SEQD_TEST_FENCE_UNGUARDED'), 'utf8');
  const d = database('SEQD_TEST_REDIS_CASES');
  const client = new Redis({ host: d.host, port: d.port, db: Number(d.database ?? 0), maxRetriesPerRequest: 1 });
  try {
    for (const c of cases.cases) {
      for (const [mode, script] of [['fence', null], ['unguarded', unguarded]]) {
        await t.test(`${c.name} ${mode}`, async () => {
          const err = await runCase(client, c, script);
          report(`FENCECASE js redis-cases ${c.name} ${mode} ${err === null ? 'pass' : 'fail'} ${err ?? ''}`);
          if (mode === 'fence') assert.equal(err, null, `case ${c.name}`);
          else if ((c.fails_under ?? []).includes('unguarded')) assert.notEqual(err, null, `the unguarded script passes ${c.name}, which it must fail`);
        });
      }
    }
  } finally {
    client.disconnect();
  }
});

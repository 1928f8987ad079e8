// What the fence suites share: the databases and the control server of
// clients/fences_test.go, the shared cases (fence/testdata/dbcases.json)
// and the loop that runs them against one database, with the fence and
// under the "none" control (no fence).

import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { StaleTokenError, SequencerError, parseToken } from '../lib/fence/index.js';

/** A variable the Go harness sets; a suite run without it fails. */
export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests with go test ./clients/ -run TestJSFences`);
  return v;
}

/** host, port, user, password, database of one of the harness's servers. */
export function database(prefix) {
  return {
    host: env(`${prefix}_HOST`),
    port: Number(env(`${prefix}_PORT`)),
    user: process.env[`${prefix}_USER`] || undefined,
    password: process.env[`${prefix}_PASSWORD`] || undefined,
    database: process.env[`${prefix}_DATABASE`] || undefined,
  };
}

/** Kill the database server with SIGKILL and start it again (the harness does). */
export async function restart(db) {
  const res = await fetch(`${env('SEQD_TEST_FENCE_CONTROL')}/restart?db=${db}`, { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new Error(`restart ${db}: ${res.status} ${text}`);
}

export function loadCases() {
  const cases = JSON.parse(readFileSync(env('SEQD_TEST_FENCE_CASES'), 'utf8'));
  if (cases.schema !== 1) throw new Error(`cases schema ${cases.schema}, want 1`);
  return cases;
}

export const runId = () => `js-${randomBytes(5).toString('hex')}`;

/** A line the Go harness reads (FENCECASE …, MEASURED …). */
export function report(line) {
  process.stderr.write(`\n${line}\n`);
}

/** Runs fn(token) and says how it went: {outcome: ok|stale|invalid, value}. */
export async function fenced(fn, token, control) {
  if (control === 'none') return { outcome: 'ok', value: await fn(0n) };
  if (control === 'double') {
    // The fence of a resource that turns tokens into doubles (a Lua
    // number, a JavaScript number): the token goes as it is.
    try {
      return { outcome: 'ok', value: await fn(token) };
    } catch (e) {
      if (e instanceof StaleTokenError) return { outcome: 'stale' };
      throw e;
    }
  }
  let t;
  try {
    t = parseToken(token);
  } catch (e) {
    if (e instanceof SequencerError) return { outcome: 'invalid' };
    throw e;
  }
  try {
    return { outcome: 'ok', value: await fn(t) };
  } catch (e) {
    if (e instanceof StaleTokenError) return { outcome: 'stale' };
    throw e;
  }
}

const show = (v) => (v === null || v === undefined ? 'null' : JSON.stringify(v));

/**
 * Runs one case on a store ({write, read, value, max, writer, reconnect,
 * close, control}); resolves with the first expectation not met, or null.
 */
export async function runCase(c, store, db, prefix) {
  for (const [i, st] of c.steps.entries()) {
    const key = prefix + (st.key ?? 'k');
    switch (st.op) {
      case 'write': {
        const got = await store.write(key, st.token, st.value);
        if (got !== st.expect) return `step ${i}: write ${key} with token ${JSON.stringify(st.token)}: ${got}, want ${st.expect}`;
        break;
      }
      case 'read': {
        const { outcome, value } = await store.read(key, st.token);
        if (outcome !== st.expect) return `step ${i}: read ${key} with token ${JSON.stringify(st.token)}: ${outcome}, want ${st.expect}`;
        if (outcome === 'ok' && show(value) !== show(st.value)) return `step ${i}: read ${key}: ${show(value)}, want ${show(st.value)}`;
        break;
      }
      case 'value': {
        const v = await store.value(key);
        if (show(v) !== show(st.value)) return `step ${i}: ${key} holds ${show(v)}, want ${show(st.value)}`;
        break;
      }
      case 'max': {
        if (store.control) break;
        const m = await store.max(key);
        if (m !== BigInt(st.token)) return `step ${i}: max of ${key} is ${m}, want ${st.token}`;
        break;
      }
      case 'delete': {
        const got = await store.delete(key, st.token);
        if (got !== 'ok' && got !== 'kept') return `step ${i}: delete ${key} with token ${JSON.stringify(st.token)}: ${got}`;
        break;
      }
      case 'restart':
        await restart(db);
        await store.reconnect();
        break;
      case 'race': {
        const err = await race(store, key, st);
        if (err) return `step ${i}: ${err}`;
        break;
      }
      default:
        return `step ${i}: unknown op ${st.op}`;
    }
  }
  return null;
}

async function race(store, key, st) {
  const { writers, rounds } = st;
  const first = BigInt(st.first_token);
  const conns = [];
  for (let i = 0; i < writers; i++) conns.push(await store.writer());
  try {
    for (let r = 0; r < rounds; r++) {
      const results = new Array(writers).fill('');
      const pending = [];
      for (let i = writers - 1; i >= 0; i--) {
        const tok = first + BigInt(r * writers + i);
        pending.push(
          conns[i].write(key, tok.toString(), `race-${tok}`).then(
            (o) => { results[i] = o; },
            (e) => { results[i] = `error ${e.message}`; }, // a deadlock victim: it did not land
          ),
        );
      }
      await Promise.all(pending);
      const top = first + BigInt(r * writers + writers - 1);
      if (results[writers - 1] !== 'ok') return `race round ${r}: the writer of the highest token ${top} got ${results[writers - 1]}`;
      const v = await store.value(key);
      if (v !== `race-${top}`) return `race round ${r}: ${key} holds ${show(v)}, want "race-${top}" (results ${results.join(', ')})`;
    }
  } finally {
    for (const c of conns) await c.close();
  }
  return null;
}

/**
 * Runs every case with each recipe ("fence": the fence table; "column": the
 * token in the data's own row), then under each control ("none": no fence),
 * as subtests of t, and reports each result for the harness's table. A
 * recipe failing a case, or a control passing a case it must fail, fails
 * the test.
 */
export async function runAll(t, makeStore, db, { recipes = ['fence'], controls = ['none'] } = {}) {
  const cases = loadCases();
  const rid = runId();
  for (const mode of [...recipes, ...controls]) {
    const store = await makeStore(mode);
    try {
      for (const c of cases.cases) {
        await t.test(`${c.name} (${mode})`, async () => {
          const err = await runCase(c, store, db, `${rid}/${mode}/${c.name}/`);
          report(`FENCECASE js ${db} ${c.name} ${mode} ${err === null ? 'pass' : 'fail'} ${err ?? ''}`);
          if (recipes.includes(mode) && err !== null) throw new Error(`${db}: case ${c.name} (${mode}): ${err}`);
          if (controls.includes(mode) && err === null && (c.fails_under ?? []).includes(mode)) {
            throw new Error(`${db}: control ${mode} passes case ${c.name}, which it must fail`);
          }
        });
      }
    } finally {
      await store.close();
    }
  }
}

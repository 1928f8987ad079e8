// The conformance runner of the JavaScript client: plays every vector of
// clients/conformance/vectors.json against the hostile daemon that
// clients/conformance_test.go starts (go test ./clients/ -run TestJSConformance),
// prints a table (vector, expected, observed) and writes one JSON result
// per vector to $SEQD_CONFORMANCE_RESULTS. Exits 1 if any vector failed.

import { randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

import * as seqd from '../index.js';

const env = process.env;
const ADDR = env.SEQD_CONFORMANCE_ADDR;
const TLS_ADDR = env.SEQD_CONFORMANCE_TLS_ADDR;
const TOKEN_FILE = env.SEQD_CONFORMANCE_TOKEN_FILE;
const SECRET = env.SEQD_CONFORMANCE_SECRET;
const MARGIN = 5; // seconds a call may take beyond its wait
const GUARD_MS = 20_000; // a vector still running then is failed as hung

const now = () => performance.now() / 1000;
const leaseId = () => randomBytes(16).toString('hex');
const shown = (...texts) => texts.some((t) => String(t).includes(SECRET));

// Everything the client writes to the console, for the logs vector.
const logLines = [];
for (const m of ['log', 'info', 'warn', 'error', 'debug']) {
  const orig = console[m].bind(console);
  console[m] = (...args) => {
    logLines.push(args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' '));
    if (!capturing) orig(...args);
  };
}
let capturing = true;
process.on('warning', (w) => logLines.push(String(w)));

function client(tls = false) {
  return new seqd.Client({ addr: tls ? TLS_ADDR : ADDR, apiTokenFile: TOKEN_FILE, cacert: null, cert: null, key: null, owner: 'conformance' });
}

async function stats(name) {
  const res = await fetch(`${ADDR}/conformance/stats?name=${encodeURIComponent(name)}`);
  return res.json();
}

function seconds(d) {
  const m = /^([0-9.]+)(ms|s)$/.exec(d);
  return m[2] === 'ms' ? Number(m[1]) / 1000 : Number(m[1]);
}

function expectedText(v) {
  const e = v.expect;
  const parts = [e.result];
  if (e.token) parts.push(`token=${e.token}`);
  if (e.reason) parts.push(`reason='${e.reason}'`);
  if (e.quotes) parts.push(`quotes='${e.quotes}'`);
  if (e.within !== undefined) parts.push(`within ${e.within}s`);
  if (e.for !== undefined) parts.push(`for ${e.for}s`);
  return parts.join(' ');
}

/** Whether a failed call failed as the vector wants. */
function checkError(v, c, err, took) {
  const e = v.expect;
  const msg = String(err?.message ?? err);
  let observed = `${err?.name} after ${took.toFixed(2)}s: ${msg.slice(0, 150)}`;
  if (e.result !== 'protocol_error' && e.result !== 'error') return [false, observed];
  const within = e.within ?? seconds(v.wait ?? '0s') + MARGIN;
  let ok = took <= within && !shown(msg, inspect(err));
  if (e.result === 'protocol_error') {
    const host = new URL(c.addr).host;
    ok = ok && seqd.ProtocolError !== undefined && err instanceof seqd.ProtocolError && msg.includes(host);
    if (e.quotes) ok = ok && msg.includes(e.quotes);
  }
  if (e.reason) ok = ok && msg.toLowerCase().includes(e.reason.toLowerCase());
  if (shown(msg, inspect(err))) observed += ' [shows the API token]';
  return [ok, observed];
}

async function runAcquire(v) {
  const e = v.expect;
  const c = client(v.tls);
  const start = now();
  let lease;
  try {
    lease = await c.acquire(`conformance/${v.id}`, { ttl: '15s', wait: v.wait ?? '0s', leaseId: leaseId() });
  } catch (err) {
    return checkError(v, c, err, now() - start);
  } finally {
    c.close();
  }
  const took = now() - start;
  return [e.result === 'grant' && String(lease.token) === e.token, `grant token=${lease.token} after ${took.toFixed(2)}s`];
}

/** Resolves when the lease's signal aborts, the way an application waits on loss. */
function lossOf(lease) {
  return new Promise((resolve) => {
    if (lease.signal.aborted) resolve();
    else lease.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

async function runHold(v) {
  const e = v.expect;
  const name = `conformance/${v.id}`;
  const c = client();
  let lease;
  const start = now();
  try {
    lease = await c.lock(name, { ttl: v.ttl ?? '1s' });
  } catch (err) {
    c.close();
    const took = now() - start;
    if (e.result === 'lost') {
      // A slow grant makes the helper renew at once, before handing the
      // lease out: refusing it then is as good as losing it.
      const msg = String(err?.message ?? err);
      const ok = took <= e.within + seconds(v.ttl ?? '1s') && msg.toLowerCase().includes((e.reason ?? '').toLowerCase()) && !shown(msg);
      return [ok, `lock() refused it at its first renewal, after ${took.toFixed(2)}s: ${msg.slice(0, 150)}`];
    }
    const [ok, observed] = checkError(v, c, err, took);
    return [ok, `lock(): ${observed}`];
  }
  if (e.result === 'protocol_error' || e.result === 'error') {
    await lease.release().catch(() => {});
    c.close();
    return [false, `lock() held it, token=${lease.token}`];
  }
  const t0 = now();
  try {
    if (e.result === 'held') {
      await sleep(e.for * 1000);
      const n = (await stats(name)).renews;
      return [!lease.lost && n >= 2, `${lease.lost ? `lost (${lease.lossReason?.message})` : "held"} after ${e.for}s, ${n} renewals answered`];
    }
    const bound = e.within + seconds(v.ttl ?? '1s') + 2;
    let timer;
    const got = await Promise.race([lossOf(lease).then(() => true), new Promise((r) => { timer = setTimeout(() => r(false), bound * 1000); })]);
    clearTimeout(timer);
    const took = now() - t0;
    if (!got) return [false, `the signal did not abort within ${took.toFixed(2)}s (lost=${lease.lost})`];
    await sleep(50); // the loss is final: a late answer must not bring the lease back
    const reason = String(lease.lossReason?.message ?? lease.lossReason);
    let observed = `lost after ${took.toFixed(2)}s: ${reason.slice(0, 150)}`;
    let ok = took <= e.within && lease.lost;
    if (e.reason) ok = ok && reason.toLowerCase().includes(e.reason.toLowerCase());
    if (shown(reason)) {
      observed += ' [shows the API token]';
      ok = false;
    }
    return [ok, observed];
  } finally {
    await lease.release().catch(() => {});
    c.close();
  }
}

async function runKeepalive(v) {
  const name = `conformance/${v.id}`;
  const c = client();
  await c.withLock(name, { ttl: v.ttl ?? '1s' }, async () => sleep(v.expect.for * 1000));
  c.close();
  const s = await stats(name);
  return [s.posts >= 4 && s.connections === 1, `${s.posts} requests on ${s.connections} connection(s)`];
}

async function runPrint(v) {
  const c = client();
  const texts = [inspect(c, { showHidden: true, depth: 5 }), String(c), JSON.stringify(c)];
  await c.withLock(`conformance/${v.id}`, { ttl: '15s' }, async (lease) => {
    texts.push(inspect(lease, { showHidden: true, depth: 5 }), String(lease), JSON.stringify(lease));
  });
  for (const n of ['grant-echo-token', 'grant-401-echo-token']) {
    try {
      await c.acquire(`conformance/${n}`, { leaseId: leaseId() });
    } catch (err) {
      texts.push(inspect(err, { depth: 5 }), String(err), err.stack ?? '');
    }
  }
  c.close();
  const bad = texts.filter((t) => t.includes(SECRET)).map((t) => t.slice(0, 80));
  return [bad.length === 0, `${texts.length} printouts, ${bad.length} show the API token${bad.length ? `: ${bad[0]}` : ''}`];
}

async function runLogs() {
  const bad = logLines.filter((l) => l.includes(SECRET));
  return [bad.length === 0, `${logLines.length} log lines, ${bad.length} show the API token${bad.length ? `: ${bad[0].slice(0, 80)}` : ''}`];
}

const OPS = { acquire: runAcquire, hold: runHold, keepalive: runKeepalive, print: runPrint, logs: runLogs };

async function guarded(v) {
  let timer;
  const hung = new Promise((r) => { timer = setTimeout(() => r([false, `no return after ${GUARD_MS / 1000}s`]), GUARD_MS); });
  try {
    return await Promise.race([OPS[v.op](v).catch((err) => [false, `runner error ${err?.name}: ${err?.message}`]), hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  if (!ADDR || !TOKEN_FILE || !SECRET) {
    process.stderr.write('needs the hostile daemon of clients/conformance_test.go (go test ./clients/ -run TestJSConformance)\n');
    return 2;
  }
  const vectors = JSON.parse(readFileSync(env.SEQD_CONFORMANCE_VECTORS, 'utf8')).vectors;
  const only = new Set((env.SEQD_CONFORMANCE_ONLY ?? '').split(',').filter(Boolean));
  writeFileSync(env.SEQD_CONFORMANCE_RESULTS, '');
  let failed = 0;
  let n = 0;
  for (const v of vectors) {
    if (only.size && !only.has(v.id)) continue;
    const [ok, observed] = await guarded(v);
    n++;
    if (!ok) failed++;
    const row = { id: v.id, expected: expectedText(v), observed, pass: ok };
    appendFileSync(env.SEQD_CONFORMANCE_RESULTS, JSON.stringify(row) + '\n');
    process.stdout.write(`${ok ? 'PASS' : 'FAIL'}  ${v.id.padEnd(26)} want ${row.expected.padEnd(40)} got ${observed}\n`);
  }
  process.stdout.write(`js client: ${n - failed}/${n} vectors pass\n`);
  return failed ? 1 : 0;
}

process.exit(await main());

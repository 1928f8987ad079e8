// The client's settings from the environment against the locked-down
// daemon (HTTPS, client certificate, API token), connection reuse, and the
// process's lifetime around a held lease.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

import { Client, UnauthorizedError, UnavailableError } from '../index.js';
import { breakLease, needsDaemons, uniqueName } from './helpers.js';

const SETTINGS = ['ADDR', 'API_TOKEN_FILE', 'CACERT', 'CERT', 'KEY'];

/** Runs fn with SEQD_* taken from the SEQD_TEST_SECURE_* variables. */
async function withSecureEnv(fn) {
  const saved = Object.fromEntries(SETTINGS.map((k) => [k, process.env[`SEQD_${k}`]]));
  for (const k of SETTINGS) process.env[`SEQD_${k}`] = process.env[`SEQD_TEST_SECURE_${k}`];
  try {
    return await fn();
  } finally {
    for (const k of SETTINGS) {
      if (saved[k] === undefined) delete process.env[`SEQD_${k}`];
      else process.env[`SEQD_${k}`] = saved[k];
    }
  }
}

describe('the locked-down daemon', { skip: needsDaemons.skip || (!process.env.SEQD_TEST_SECURE_ADDR && 'needs SEQD_TEST_SECURE_ADDR') }, () => {
  test('a client built from the environment alone uses its TLS settings and API token', async () => {
    await withSecureEnv(async () => {
      const c = new Client();
      assert.match(c.addr, /^https:/);
      const name = uniqueName('secure');
      await c.withLock(name, { ttl: '2s' }, async (lease) => {
        assert.equal((await c.check(lease.sequencer)).valid, true);
        assert.equal((await c.status(name)).token, lease.token);
      });
      c.close();
    });
  });

  test('without the API token the daemon refuses: UnauthorizedError', async () => {
    await withSecureEnv(async () => {
      const c = new Client({ apiTokenFile: null });
      await assert.rejects(c.acquire(uniqueName('notoken')), (err) => {
        assert.ok(err instanceof UnauthorizedError, err.stack);
        assert.equal(err.status, 401);
        assert.equal(err.code, 'unauthorized');
        return true;
      });
      c.close();
    });
  });

  test('without the client certificate or the CA the connection is refused', async () => {
    await withSecureEnv(async () => {
      for (const opts of [{ cert: null, key: null }, { cacert: null }]) {
        const c = new Client(opts);
        await assert.rejects(c.acquire(uniqueName('nocert')), (err) => {
          assert.ok(err instanceof UnavailableError, err.stack);
          assert.equal(err.status, 0);
          assert.match(err.message, /certificate/);
          return true;
        }, JSON.stringify(opts));
        c.close();
      }
    });
  });
});

test('requests reuse one kept-alive connection and send the bearer token', async () => {
  let connections = 0;
  const auth = [];
  const server = http.createServer((req, res) => {
    auth.push(req.headers.authorization);
    res.setHeader('content-type', 'application/json');
    res.end('{"name":"x","holders":0}');
  });
  server.on('connection', () => connections++);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const c = new Client({ env: {}, addr: `http://127.0.0.1:${server.address().port}`, apiToken: 'tok' });
  for (let i = 0; i < 5; i++) await c.semaphoreStatus('x');
  assert.equal(connections, 1, 'five requests over one connection');
  assert.deepEqual(auth, Array(5).fill('Bearer tok'));
  c.close();
  server.close();
});

test('a request with no answer fails after the client timeout', async () => {
  const server = http.createServer(() => {}); // never answers
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const c = new Client({ env: {}, addr: `http://127.0.0.1:${server.address().port}`, timeout: 200 });
  await assert.rejects(c.semaphoreStatus('x'), (err) => err instanceof UnavailableError && /did not answer/.test(err.message));
  const ac = new AbortController();
  const p = c.semaphoreStatus('x', { signal: ac.signal });
  ac.abort(new Error('caller gave up'));
  await assert.rejects(p, /caller gave up/);
  c.close();
  server.closeAllConnections();
  server.close();
});

describe('the process lifetime', needsDaemons, () => {
  test('renewal keeps the process alive while a lease is held; nothing does once it ends', async () => {
    const name = uniqueName('lifetime');
    const index = fileURLToPath(new URL('../index.js', import.meta.url));
    const script = `
      import { Client } from ${JSON.stringify(index)};
      const c = new Client();
      await c.withLock(${JSON.stringify(name + '-a')}, { ttl: '1s' }, async () => {});
      const lease = await c.lock(${JSON.stringify(name)}, { ttl: '1500ms' });
      console.log('held');
      // Nothing but the lease's renewal is pending here.
      await new Promise((resolve) => lease.signal.addEventListener('abort', resolve));
      console.log('lost:' + lease.lossReason.code);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('held')) resolve();
      });
      child.on('exit', () => reject(new Error(`child exited before holding: ${out} ${err}`)));
    });
    await new Promise((resolve) => setTimeout(resolve, 1000)); // past the first renewals: the child must still be there
    assert.equal(child.exitCode, null, `the child exited while holding: ${out} ${err}`);
    await breakLease('lock', name);
    const timer = setTimeout(() => child.kill(), 15_000);
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, `the child did not exit by itself once the lease ended: ${out} ${err}`);
    assert.match(out, /lost:lost/);
  });
});

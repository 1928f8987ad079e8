// Locks against a real daemon: holding with renewals, contention, loss
// (broken from outside, daemon restarted, daemon unreachable), stale
// tokens, and the negative control with renewal switched off.

import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { BadRequestError, Client, HeldError, LostError, StaleTokenError, UnavailableError } from '../index.js';
import { abortedAt, breakLease, control, needsDaemons, sleep, uniqueName } from './helpers.js';

/**
 * Holds a lock with a 1s TTL for 3.5s and reports what the lease, the
 * daemon's check and the lock's status said at the end.
 */
async function holdPastThreeTTLs(client, name, opts) {
  let during;
  const lease = await client.withLock(name, { ttl: '1s', ...opts }, async (lease) => {
    await sleep(3500); // holding across renewals is what is tested
    during = {
      lost: lease.lost,
      aborted: lease.signal.aborted,
      check: await client.check(lease.sequencer),
      status: await client.status(name),
    };
    return lease;
  });
  return { lease, during };
}

describe('locks', needsDaemons, () => {
  const client = new Client();

  test('a lock is held past three TTLs while renewed, then released', async () => {
    const name = uniqueName('hold');
    const { lease, during } = await holdPastThreeTTLs(client, name);
    assert.equal(typeof lease.token, 'bigint');
    assert.equal(during.lost, false);
    assert.equal(during.aborted, false);
    assert.equal(during.check.valid, true, `the daemon's check after 3.5s: ${JSON.stringify(during.check.error)}`);
    assert.equal(during.status.held, true);
    assert.equal(during.status.token, lease.token);
    assert.equal(lease.released, true);
    assert.equal(lease.lost, false);
    const after = await client.status(name);
    assert.equal(after.held, false, 'released when the block ended');
    assert.equal((await client.check(lease.sequencer)).valid, false);
  });

  test('negative control: with renewal off, the same hold sees the lease expire', async () => {
    const name = uniqueName('norenew');
    const t0 = performance.now();
    const { lease, during } = await holdPastThreeTTLs(client, name, { renew: false });
    assert.equal(during.lost, true);
    assert.equal(during.aborted, true);
    assert.equal(during.check.valid, false, 'the daemon expired the lease too');
    assert.equal(lease.lossReason.code, 'expired');
    assert.ok(lease.lossReason instanceof LostError);
    assert.equal(lease.released, false, 'a lost lease is not released');
    assert.ok(performance.now() - t0 >= 3500);
  });

  test('a lease is never reported live past its expires_at', async () => {
    const lease = await client.lock(uniqueName('expiry'), { ttl: '1s', renew: false });
    const expiresAt = lease.expiresAt.getTime();
    assert.equal(lease.lost, false);
    await delay(expiresAt - Date.now() + 1); // a timer never fires early
    assert.equal(lease.lost, true, `still live ${Date.now() - expiresAt} ms after expires_at`);
    assert.equal(await lease.release(), false);
  });

  test('a held lock answers 409 held after a short wait', async () => {
    const name = uniqueName('held');
    await client.withLock(name, { ttl: '5s' }, async (lease) => {
      const other = new Client({ owner: 'other' });
      const t0 = performance.now();
      await assert.rejects(other.acquire(name, { wait: '300ms' }), (err) => {
        assert.ok(err instanceof HeldError, err.stack);
        assert.equal(err.code, 'held');
        assert.equal(err.status, 409);
        return true;
      });
      assert.ok(performance.now() - t0 >= 250, 'the daemon waited before answering held');
      let ran = false;
      await assert.rejects(other.withLock(name, async () => { ran = true; }), HeldError);
      assert.equal(ran, false, 'the block does not run without the lock');
      assert.equal(lease.lost, false);
      other.close();
    });
  });

  test('a lease broken from outside is signalled within one renew interval, and the work sees it', async (t) => {
    const ratios = [];
    for (let round = 0; round < 3; round++) {
      const name = uniqueName('broken');
      const ttlMs = 1500;
      const interval = ttlMs / 3;
      let latency;
      await assert.rejects(
        client.withLock(name, { ttl: `${ttlMs}ms` }, async (lease) => {
          const lostAt = abortedAt(lease.signal);
          await sleep(Math.random() * interval); // break at any point of the renew cycle
          const t0 = performance.now();
          assert.equal((await breakLease('lock', name)).deleted, 1);
          // The work: a long job that follows the lease's signal.
          const work = delay(60_000, null, { signal: lease.signal });
          latency = (await lostAt) - t0;
          await work;
        }),
        (err) => {
          // timers/promises rejects with an AbortError caused by the reason.
          const reason = err.name === 'AbortError' ? err.cause : err;
          assert.ok(reason instanceof LostError, err.stack);
          assert.ok(['lost', 'broken'].includes(reason.code), `loss code ${reason.code}`);
          return true;
        },
      );
      ratios.push(latency / interval);
      assert.ok(latency < interval + 750, `loss signalled ${latency.toFixed(0)} ms after the break; renew interval ${interval} ms`);
    }
    t.diagnostic(`loss after a break: ${ratios.map((r) => r.toFixed(2)).join(', ')} renew intervals`);
  });

  test('a lease lost with a daemon restart is signalled within one renew interval of its return', async (t) => {
    const name = uniqueName('restart');
    const ttlMs = 3000;
    const interval = ttlMs / 3;
    const lease = await client.lock(name, { ttl: `${ttlMs}ms` });
    const lostAt = abortedAt(lease.signal);
    await sleep(Math.random() * interval); // restart at any point of the renew cycle
    const t0 = performance.now();
    await control('/restart');
    const back = performance.now();
    const at = await lostAt;
    assert.ok(lease.lossReason instanceof LostError);
    t.diagnostic(`restart took ${(back - t0).toFixed(0)} ms; loss ${((at - back) / interval).toFixed(2)} renew intervals after the daemon was back (${lease.lossReason.code})`);
    assert.ok(at - back < interval + 750, `loss signalled ${(at - back).toFixed(0)} ms after the daemon was back; renew interval ${interval} ms`);
    assert.equal(await lease.release(), false);
  });

  test('with the daemon unreachable, calls fail at once and a lease is lost at its deadline', async (t) => {
    const proxy = await startProxy(new URL(process.env.SEQD_ADDR));
    const c = new Client({ addr: `http://127.0.0.1:${proxy.port}` });
    const ttlMs = 1500;
    const lease = await c.lock(uniqueName('down'), { ttl: `${ttlMs}ms` });
    const lostAt = abortedAt(lease.signal);
    const t0 = performance.now();
    await proxy.close();
    const at = await lostAt;
    const reason = lease.lossReason;
    assert.equal(reason.code, 'expired');
    assert.ok(reason.cause instanceof UnavailableError, `cause: ${reason.cause}`);
    assert.ok(at - t0 <= ttlMs + 250, `lost ${(at - t0).toFixed(0)} ms after the daemon went away; TTL ${ttlMs} ms`);
    t.diagnostic(`daemon unreachable: lost ${((at - t0) / ttlMs).toFixed(2)} TTLs after it went away (${reason.message})`);
    assert.equal(await lease.release(), false);

    const t1 = performance.now();
    await assert.rejects(c.acquire(uniqueName('down')), (err) => {
      assert.ok(err instanceof UnavailableError, err.stack);
      assert.equal(err.status, 0);
      return true;
    });
    t.diagnostic(`an acquire with the daemon down failed in ${(performance.now() - t1).toFixed(0)} ms`);
    c.close();
  });

  test('a stale token is refused at check and at renew, with the current token', async () => {
    const name = uniqueName('stale');
    const first = await client.acquire(name, { ttl: '5s' });
    await client.release(first);
    const second = await client.acquire(name, { ttl: '5s' });
    assert.ok(second.token > first.token);
    for (const what of [first.sequencer, { name, token: first.token }]) {
      const res = await client.check(what);
      assert.equal(res.valid, false);
      assert.equal(res.code, 'stale_token');
      assert.equal(res.currentToken, second.token);
    }
    await assert.rejects(client.renew(first), (err) => {
      assert.ok(err instanceof StaleTokenError, err.stack);
      assert.equal(err.currentToken, second.token);
      return true;
    });
    assert.equal((await client.check(second.sequencer)).valid, true);
    await client.release(second);
    assert.equal((await client.check(second.sequencer)).code, 'not_held');
  });

  test('shared leases hold together and keep an exclusive one out; lockDelay is passed on', async () => {
    const name = uniqueName('shared');
    const r1 = await client.acquire(name, { mode: 'shared', ttl: '5s' });
    const r2 = await new Client({ owner: 'reader-2' }).acquire(name, { mode: 'shared', ttl: '5s' });
    assert.equal(r1.mode, 'shared');
    assert.notEqual(r1.token, r2.token);
    await assert.rejects(client.acquire(name, { wait: 0 }), HeldError);
    await client.release(r1);
    await client.release(r2);
    const w = await client.acquire(name, { lockDelay: '1s', wait: '5s' });
    assert.ok(w.token > r2.token);
    await client.release(w);
    await assert.rejects(client.acquire(name, { lockDelay: '2m' }), BadRequestError);
  });

  test('safeFor is the daemon figure for a live lock, 0 once released', async () => {
    const lease = await client.lock(uniqueName('safe'), { ttl: '3s' });
    const safe = await lease.safeFor();
    assert.ok(safe > 0 && safe <= 3000, `safeFor ${safe}`);
    await lease.release();
    assert.equal(await lease.safeFor(), 0);
  });
});

/**
 * A TCP proxy to target; close() drops its connections and stops
 * listening, as a daemon that went away.
 */
async function startProxy(target) {
  const sockets = new Set();
  const server = net.createServer((down) => {
    const up = net.connect(Number(target.port), target.hostname);
    for (const s of [down, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    down.pipe(up).pipe(down);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => {
      server.close(resolve);
      for (const s of sockets) s.destroy();
    }),
  };
}

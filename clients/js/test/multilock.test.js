// Multi-locks against the harness's plain daemon: several locks at once,
// all or none.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client, HeldError, LostError, StaleTokenError } from '../index.js';
import { needsDaemons, uniqueName } from './helpers.js';

test('a multi-lock holds every lock until released', needsDaemons, async () => {
  const c = new Client({ owner: 'js-test' });
  const a = uniqueName('multi-a');
  const b = uniqueName('multi-b');
  const lease = await c.acquireMulti([a, b], { ttl: '5s' });
  assert.deepEqual(lease.locks.map((l) => l.name), [a, b]);
  assert.ok(lease.locks.every((l) => typeof l.token === 'bigint' && l.token > 0n));
  assert.equal(lease.sequencers, lease.locks.map((l) => l.sequencer).join(' '));
  for (const n of [a, b]) {
    await assert.rejects(c.acquire(n, { wait: '100ms' }), HeldError, `${n} is held by the multi-lock`);
  }
  assert.equal((await c.multiLockStatus(lease.leaseId)).lease_id, lease.leaseId);
  const renewed = await c.renewMulti(lease);
  assert.deepEqual(renewed.locks.map((l) => l.token), lease.locks.map((l) => l.token));
  await c.releaseMulti(lease);
  for (const n of [a, b]) {
    const l = await c.acquire(n, { ttl: '2s' });
    await c.release(l);
  }
  await assert.rejects(c.renewMulti(lease), (err) => err instanceof LostError || err instanceof StaleTokenError);
  c.close();
});

test('a set with a held lock takes none of it', needsDaemons, async () => {
  const c = new Client({ owner: 'js-test' });
  const a = uniqueName('multi-held-a');
  const b = uniqueName('multi-held-b');
  const held = await c.acquire(b, { ttl: '5s' });
  await assert.rejects(c.acquireMulti([a, b], { wait: '200ms' }), HeldError);
  const l = await c.acquire(a, { ttl: '2s' });
  await c.release(l);
  await c.release(held);
  c.close();
});

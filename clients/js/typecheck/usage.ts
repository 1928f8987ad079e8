// Type-checked, never run (tsc --noEmit): a program written against
// index.d.ts, using each export, so that a declaration that does not
// compile, or no longer fits how the client is used, fails the check.
import {
  BadRequestError, Client, HeldError, HeldLease, Leadership, LostError, ProtocolError, SeqdError,
  StaleTokenError, UnauthorizedError, UnavailableError, newLeaseId, parseJSON,
} from '../index.js';
import type { ElectionStatus, Lease, LockStatus, MultiLease } from '../index.js';
import { MAX_TOKEN, parseSequencer, parseToken, formatSequencer } from '../lib/fence/index.js';

export async function usage(): Promise<void> {
  const c = new Client({ addr: 'http://127.0.0.1:7070', owner: 'worker-1', timeout: 5000 });
  const lease: Lease = await c.acquire('jobs/nightly', { ttl: '15s', wait: '5s' });
  const token: bigint = lease.token;
  await c.renew(lease, { ttl: 30_000 });
  const st: LockStatus = await c.status('jobs/nightly');
  await c.release(lease);
  const multi: MultiLease = await c.acquireMulti(['a', 'b']);
  await c.releaseMulti(multi);
  const held: HeldLease = await c.lock('jobs/nightly');
  held.throwIfLost();
  const ms: number = await held.safeFor();
  await held.release();
  const n = await c.withLock('jobs/nightly', async (l) => l.token + 1n);
  const lead: Leadership = await c.campaign('leader', { value: 'me' });
  const term: bigint = lead.term;
  await lead.proclaim('me, still');
  for await (const e of c.observe('leader')) {
    const s: ElectionStatus = e;
    void s;
    break;
  }
  try {
    await c.acquire('x', { wait: 0 });
  } catch (err) {
    for (const E of [HeldError, StaleTokenError, LostError, UnavailableError, ProtocolError, UnauthorizedError, BadRequestError]) {
      if (err instanceof E) {
        const e: SeqdError = err;
        console.log(e.code, e.status, e.currentToken);
      }
    }
  }
  const id: string = newLeaseId();
  const v: unknown = parseJSON('{"token": 18446744073709551615}');
  const seq = parseSequencer(formatSequencer({ name: 'jobs/nightly', token: parseToken('7') }));
  console.log(token, st, ms, n, term, id, v, seq.token <= MAX_TOKEN);
  c.close();
}

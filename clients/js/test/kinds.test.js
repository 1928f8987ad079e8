// Semaphores and elections against a real daemon.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { Client, LostError } from '../index.js';
import { abortedAt, breakLease, needsDaemons, sleep, uniqueName } from './helpers.js';

describe('semaphores', needsDaemons, () => {
  test('three holders of a semaphore of 2: never more than 2 at once', async () => {
    const name = uniqueName('sem');
    let holding = 0;
    let most = 0;
    const clients = [0, 1, 2].map((i) => new Client({ owner: `sem-holder-${i}` }));
    const tokens = await Promise.all(clients.map((c) => c.withSemaphore(name, { limit: 2, ttl: '2s', wait: '30s' }, async (lease) => {
      holding++;
      most = Math.max(most, holding);
      await sleep(500); // overlap with the other holder
      holding--;
      return lease.token;
    })));
    assert.equal(most, 2, 'at most 2 held at once, and 2 did');
    assert.equal(new Set(tokens.map(String)).size, 3);
    assert.equal((await clients[0].semaphoreStatus(name)).holders, 0, 'every slot released');
    for (const c of clients) c.close();
  });

  test('a broken semaphore lease is signalled as lost', async () => {
    const c = new Client();
    const name = uniqueName('sembreak');
    const lease = await c.semaphore(name, { limit: 1, ttl: '1500ms' });
    assert.equal(lease.kind, 'semaphore');
    assert.equal(lease.limit, 1);
    const lostAt = abortedAt(lease.signal);
    await breakLease('semaphore', name);
    await lostAt;
    assert.ok(lease.lossReason instanceof LostError);
    assert.equal(await lease.release(), false);
    c.close();
  });
});

describe('elections', needsDaemons, () => {
  test('two candidates: one leads, the other takes over when it resigns', async () => {
    const name = uniqueName('elect');
    const a = new Client({ owner: 'candidate-a' });
    const b = new Client({ owner: 'candidate-b' });
    const watching = new AbortController();
    const watched = (async () => {
      const values = [];
      for await (const st of a.observe(name, { signal: watching.signal })) {
        values.push(st.leader?.value ?? null);
        if (st.leader?.value === 'b2') break;
      }
      return values;
    })();

    const la = await a.campaign(name, { value: 'a', ttl: '3s' });
    assert.equal(typeof la.term, 'bigint');
    let st = await a.leader(name); // the old name still works
    assert.equal(st.leader.value, 'a');
    assert.equal(st.leader.term, la.term);
    assert.equal(st.self, true);

    let bTerm;
    const bRan = b.withLeadership(name, { value: 'b', ttl: '3s', wait: '30s' }, async (lb) => {
      bTerm = lb.term;
      await lb.proclaim('b2');
      const now = await b.election(name);
      assert.equal(now.leader.value, 'b2');
      assert.equal(now.leader.term, lb.term, 'proclaim keeps the term');
    });
    // A blocking read sees b join as a candidate, with a still leading.
    while (st.candidates < 2) st = await a.election(name, { index: st.index, wait: '10s' });
    assert.equal(st.leader.value, 'a');

    await la.resign();
    assert.equal(la.lost, false);
    await bRan;
    assert.ok(bTerm > la.term, `b's term ${bTerm} above a's ${la.term}`);
    const values = await watched;
    // Changes come in order; one that lasted only a moment ("b" before its
    // proclaim) may be passed over by the next read.
    const seen = values.filter((v) => v !== null).filter((v, i, all) => v !== all[i - 1]);
    assert.ok(['a,b,b2', 'a,b2'].includes(seen.join(',')), `leaders seen by the watch: ${seen}`);
    const after = await a.election(name);
    assert.equal(after.leader, null, 'nobody leads once b resigned');
    watching.abort();
    a.close();
    b.close();
  });
});

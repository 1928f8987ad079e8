// Guards and the Verifier against sequencers signed by seqd's own signer
// (the vectors of clients/fences_test.go): the kind and the name are
// checked; a signature that does not check, a plain sequencer where one is
// required and anything malformed are refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Guard, SequencerError, Verifier, loadVerifyKeys, parseVerifyKeys } from '../lib/fence/index.js';
import { env, loadCases } from './support.js';

const CODES = { invalid: 'invalid_sequencer', wrong_name: 'wrong_lock', wrong_kind: 'wrong_lock' };

const data = () => JSON.parse(readFileSync(env('SEQD_TEST_FENCE_SIGNED'), 'utf8'));

test('signed vectors', async (t) => {
  const { verify_keys_file: keys, vectors } = data();
  const verifier = loadVerifyKeys(keys);
  assert.ok(vectors.length > 10);
  for (const v of vectors) {
    await t.test(v.about, () => {
      const guard = new Guard(v.name, { kind: v.kind, verifier: v.verify ? verifier : undefined });
      if (v.expect === 'ok') {
        assert.equal(guard.token(v.sequencer), BigInt(v.token));
        assert.equal(guard.token(v.sequencer), BigInt(v.token)); // from the cache
      } else {
        assert.throws(() => guard.token(v.sequencer), (e) => e instanceof SequencerError && e.code === (CODES[v.expect] ?? v.expect));
      }
    });
  }
});

// The signed sequencers of fence/testdata/dbcases.json, which every
// language's fences run.
test('shared vectors', async (t) => {
  const shared = loadCases().sequencers;
  const verifier = new Verifier(parseVerifyKeys(shared.verify_keys));
  assert.ok(shared.vectors.length > 10);
  for (const v of shared.vectors) {
    await t.test(v.about, () => {
      const guard = new Guard(v.lock, { kind: v.kind, verifier });
      if (v.expect === 'ok') assert.equal(guard.token(v.sequencer), BigInt(v.token));
      else assert.throws(() => guard.token(v.sequencer), (e) => e instanceof SequencerError && e.code === (CODES[v.expect] ?? v.expect));
    });
  }
});

test('without a verifier a forged sequencer passes (the control)', () => {
  const forged = data().vectors.filter((v) => v.expect === 'bad_signature' && v.about.startsWith('the token changed'));
  assert.equal(forged.length, 1);
  assert.equal(new Guard('jobs/orders').token(forged[0].sequencer), 4712n);
});

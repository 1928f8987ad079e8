// Unit tests: the exact JSON of tokens, durations, configuration and error
// mapping. No daemon needed.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { BadRequestError, Client, ForbiddenError, HeldError, LostError, QuotaExceededError, SeqdError, StaleTokenError, UnauthorizedError, UnavailableError } from '../index.js';
import { parseDuration, wireDuration } from '../lib/duration.js';
import { errorFor } from '../lib/errors.js';
import { encodeJSON, parseJSON, toToken } from '../lib/json.js';

describe('parseJSON', () => {
  test('reads tokens above 2^53 exactly', () => {
    const text = '{"name":"a","token":9007199254740993,"sequencer":"a@9007199254740993","ttl":"15s"}';
    const v = parseJSON(text);
    assert.equal(v.token, 9007199254740993n);
    assert.equal(JSON.parse(text).token, 9007199254740992, 'JSON.parse rounds it: the case this parser exists for');
    assert.equal(parseJSON('{"token":18446744073709551615}').token, 18446744073709551615n);
  });

  test('reads nested terms, current tokens and indexes as bigint, other numbers as numbers', () => {
    const v = parseJSON('{"leader":{"term":12345678901234567890,"value":"x"},"candidates":2,"index":9007199254740995,"current_token":7,"safe_for_ms":1500,"waiters":0}');
    assert.equal(v.leader.term, 12345678901234567890n);
    assert.equal(v.index, 9007199254740995n);
    assert.equal(v.current_token, 7n);
    assert.equal(v.candidates, 2);
    assert.equal(v.safe_for_ms, 1500);
    assert.equal(typeof v.waiters, 'number');
  });

  test('is not fooled by token-like text inside strings', () => {
    const v = parseJSON('{"error":"token \\"token\\":9007199254740993 is stale","code":"stale_token","current_token":9007199254740995}');
    assert.equal(v.error, 'token "token":9007199254740993 is stale');
    assert.equal(v.current_token, 9007199254740995n);
  });

  test('agrees with JSON.parse on everything but tokens', () => {
    for (const text of ['{}', '[]', 'null', ' {"a":[1,2.5,-3e2,true,false,null,"\\u00e9\\n"],"b":{"c":{}}} ', '"x"', '{"token":1.5}', '{"__proto__":{"x":1}}']) {
      assert.deepEqual(parseJSON(text), JSON.parse(text), text);
    }
    assert.equal(Object.getPrototypeOf(parseJSON('{"__proto__":{"x":1}}')), Object.prototype);
  });

  test('refuses malformed text', () => {
    for (const text of ['', '{', '{"a":}', '{"a" 1}', '[1,]', '{"a":1}x', '"abc', 'tru', '{"a":01}']) {
      assert.throws(() => parseJSON(text), SyntaxError, text);
    }
  });
});

describe('encodeJSON and toToken', () => {
  test('send a bigint token back exactly', () => {
    assert.equal(encodeJSON({ lease_id: 'ab', token: 18446744073709551615n, ttl: undefined }), '{"lease_id":"ab","token":18446744073709551615}');
    const t = parseJSON('{"token":9007199254740993}').token;
    assert.equal(parseJSON(encodeJSON({ token: t })).token, 9007199254740993n);
  });

  test('refuse a token that may have been rounded, or out of range', () => {
    assert.equal(toToken(5), 5n);
    assert.equal(toToken('9007199254740993'), 9007199254740993n);
    assert.throws(() => toToken(9007199254740993), /above 2\^53/);
    assert.throws(() => toToken(1.5), TypeError);
    assert.throws(() => toToken(0n), RangeError);
    assert.throws(() => toToken(1n << 64n), RangeError);
    assert.throws(() => toToken(undefined), TypeError);
  });
});

describe('durations', () => {
  test('parse Go duration strings', () => {
    assert.equal(parseDuration('15s'), 15000);
    assert.equal(parseDuration('1m30s'), 90000);
    assert.equal(parseDuration('1h0m0s'), 3600000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('0s'), 0);
    for (const bad of ['', '15', 's', '-1s', '1x', '1s ']) assert.throws(() => parseDuration(bad), RangeError, bad);
  });

  test('take milliseconds or strings as options', () => {
    assert.equal(wireDuration(1500, 'ttl'), '1500ms');
    assert.equal(wireDuration(0.5, 'ttl'), '500us');
    assert.equal(wireDuration('2s', 'ttl'), '2s');
    assert.equal(wireDuration(undefined, 'ttl'), undefined);
    assert.throws(() => wireDuration(-1, 'ttl'), RangeError);
    assert.throws(() => wireDuration('soon', 'ttl'), RangeError);
    assert.throws(() => wireDuration({}, 'ttl'), TypeError);
  });
});

describe('errors', () => {
  test('map codes to classes with code, status and current token', () => {
    const cases = [
      [409, '{"error":"held","code":"held"}', HeldError],
      [409, '{"error":"stale","code":"stale_token","current_token":9007199254740993}', StaleTokenError],
      [409, '{"error":"lost","code":"lost"}', LostError],
      [409, '{"error":"broken","code":"broken"}', LostError],
      [503, '{"error":"down","code":"unavailable"}', UnavailableError],
      [401, '{"error":"no","code":"unauthorized"}', UnauthorizedError],
      [400, '{"error":"bad","code":"bad_request"}', BadRequestError],
      [403, '{"error":"no rule","code":"forbidden"}', ForbiddenError],
      [429, '{"error":"quota","code":"quota_exceeded"}', QuotaExceededError],
      [409, '{"error":"other","code":"limit_mismatch","current_token":3}', SeqdError],
      [502, '<html>bad gateway</html>', SeqdError],
    ];
    for (const [status, text, Cls] of cases) {
      let body = null;
      try {
        body = parseJSON(text);
      } catch {}
      const err = errorFor(status, body, text);
      assert.equal(err.constructor, Cls, text);
      assert.ok(err instanceof SeqdError && err instanceof Error);
      assert.equal(err.status, status);
    }
    const stale = errorFor(409, parseJSON('{"error":"s","code":"stale_token","current_token":9007199254740993}'), '');
    assert.equal(stale.currentToken, 9007199254740993n);
    assert.equal(stale.code, 'stale_token');
    assert.equal(stale.name, 'StaleTokenError');
    assert.equal(errorFor(409, parseJSON('{"error":"h","code":"held"}'), '').currentToken, null);
    assert.equal(errorFor(502, null, 'bad gateway').code, 'http_502');
  });
});

describe('configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'seqd-js-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, '  secret-token-0123456789\n');

  test('defaults to the local daemon and owner host:pid', () => {
    const c = new Client({ env: {} });
    assert.equal(c.addr, 'http://127.0.0.1:7070');
    assert.match(c.owner, new RegExp(`:${process.pid}$`));
  });

  test('reads the environment, and options override it', () => {
    const env = { SEQD_ADDR: 'http://127.0.0.1:1/', SEQD_API_TOKEN_FILE: tokenFile };
    assert.equal(new Client({ env }).addr, 'http://127.0.0.1:1');
    assert.equal(new Client({ env, addr: 'http://[::1]:2' }).addr, 'http://[::1]:2');
    assert.doesNotThrow(() => new Client({ env, apiTokenFile: null }));
  });

  test('refuses a bad configuration with a sentence', () => {
    assert.throws(() => new Client({ env: {}, addr: 'localhost:7070' }), /must start with http:\/\/ or https:\/\//);
    assert.throws(() => new Client({ env: {}, addr: 'not a url' }), /is not a URL/);
    assert.throws(() => new Client({ env: { SEQD_API_TOKEN_FILE: join(dir, 'missing') } }), /cannot read the API token file/);
    assert.throws(() => new Client({ env: { SEQD_ADDR: 'https://127.0.0.1:1', SEQD_CERT: tokenFile } }), /needs both a certificate/);
    writeFileSync(join(dir, 'empty'), '\n');
    assert.throws(() => new Client({ env: { SEQD_API_TOKEN_FILE: join(dir, 'empty') } }), /is empty/);
  });

  test('refuses bad arguments before sending anything', async () => {
    const c = new Client({ env: {}, addr: 'http://127.0.0.1:1' });
    await assert.rejects(c.acquire(''), TypeError);
    await assert.rejects(c.acquire('a', { ttl: 'soon' }), RangeError);
    await assert.rejects(c.renew({ name: 'a', leaseId: 'x', token: 2 ** 60 }), TypeError);
    await assert.rejects(c.acquireSemaphore('a', {}), /needs a limit/);
    await assert.rejects(c.status('a', { wait: '1s' }), /wait needs an index/);
  });
});

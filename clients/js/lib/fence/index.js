// seqd/fence: the resource side of fencing. A fencing token protects
// nothing until the resource refuses the stale one; the helpers in
// seqd/fence/pg, seqd/fence/mysql and seqd/fence/redis do that inside the
// database that holds the data, with the check and the write in one atomic
// step. This module reads sequencers ("[<kind>:]<name>@<token>"), checks
// that one is of the lock that guards the data (Guard) and verifies signed
// sequencers (Verifier, Ed25519 with node:crypto). No dependency.

import { createHash, createPublicKey, verify as verifySignature } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** The highest token: tokens are unsigned 64-bit integers. */
export const MAX_TOKEN = (1n << 64n) - 1n;

const KINDS = ['lock', 'shared', 'semaphore', 'election'];

/**
 * A token below the highest one already used for `key`: its holder lost the
 * lock and a newer holder (`max`) has acted since. Nothing was written.
 */
export class StaleTokenError extends Error {
  constructor(key, token, max) {
    super(`stale token ${token} for ${JSON.stringify(key)}: a newer holder already used token ${max}`);
    this.name = 'StaleTokenError';
    this.code = 'stale_token';
    this.key = key;
    /** @type {bigint} */ this.token = token;
    /** @type {bigint} */ this.max = max;
  }
}

/**
 * A sequencer refused before anything was written or any max moved. `code`
 * is "invalid_sequencer", "unsigned", "bad_signature" or "wrong_lock".
 */
export class SequencerError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'SequencerError';
    this.code = code;
  }
}

const invalid = (msg) => new SequencerError('invalid_sequencer', msg);
const TOKEN_RE = /^[1-9][0-9]{0,19}$/;
const SEGMENT_RE = /^[A-Za-z0-9._-]+$/;
const KID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const SIG_LEN = 86; // an Ed25519 signature in unpadded base64url
const CONTEXT = 'seqd-sequencer-v2:';

/** A token (bigint) from its one spelling: base-10, no sign, no leading zero, 1..2^64-1. */
export function parseToken(s) {
  if (typeof s !== 'string' || !TOKEN_RE.test(s) || BigInt(s) > MAX_TOKEN) {
    throw invalid(`token ${JSON.stringify(String(s).slice(0, 24))} is not a base-10 integer in 1..${MAX_TOKEN} without a leading zero`);
  }
  return BigInt(s);
}

/** checkToken takes a token as a bigint or a safe integer and returns it as a bigint. */
export function checkToken(token) {
  let t = token;
  if (typeof t === 'number' && Number.isSafeInteger(t)) t = BigInt(t);
  if (typeof t !== 'bigint' || t < 1n || t > MAX_TOKEN) {
    throw new TypeError(`a fencing token is a bigint in 1..${MAX_TOKEN} (or a safe integer), not ${String(token)}`);
  }
  return t;
}

function checkName(name) {
  if (name === '' || Buffer.byteLength(name) > 256) throw invalid(`the lock name ${JSON.stringify(name.slice(0, 40))} must be 1 to 256 bytes`);
  for (const seg of name.split('/')) {
    if (seg === '.' || seg === '..' || !SEGMENT_RE.test(seg)) {
      throw invalid(`lock name ${JSON.stringify(name)} must be a relative path of [A-Za-z0-9._-] segments, without empty, '.' or '..' segments`);
    }
  }
}

function splitSigned(s) {
  const at = s.lastIndexOf('@');
  const dot = at < 0 ? -1 : s.indexOf('.', at);
  if (dot < 0) return { plain: s, kid: '', sig: '' };
  const plain = s.slice(0, dot);
  const rest = s.slice(dot + 1);
  const sep = rest.indexOf('.');
  if (sep < 0) throw invalid(`${JSON.stringify(s.slice(0, 300))}: a signed sequencer is [<kind>:]<name>@<token>.<kid>.<sig>`);
  const kid = rest.slice(0, sep);
  const sig = rest.slice(sep + 1);
  if (!KID_RE.test(kid)) throw invalid(`key id ${JSON.stringify(kid.slice(0, 40))} must be 1 to 32 of [A-Za-z0-9_-]`);
  if (sig.length !== SIG_LEN) throw invalid(`the signature is ${sig.length} characters, not ${SIG_LEN}`);
  return { plain, kid, sig };
}

function parsePlain(s) {
  const at = s.lastIndexOf('@');
  if (at < 0) throw invalid(`${JSON.stringify(s.slice(0, 300))} has no '@'; want [<kind>:]<name>@<token>`);
  let name = s.slice(0, at);
  let kind = 'lock';
  const colon = name.indexOf(':');
  if (colon >= 0) {
    kind = name.slice(0, colon);
    name = name.slice(colon + 1);
    if (!KINDS.slice(1).includes(kind)) {
      throw invalid(`unknown kind ${JSON.stringify(kind.slice(0, 40))}: want shared, semaphore or election (no prefix for an exclusive lock)`);
    }
  }
  checkName(name);
  return { kind, name, token: parseToken(s.slice(at + 1)) };
}

/**
 * Reads "[<kind>:]<name>@<token>" into {kind, name, token (bigint)}; kind is
 * "lock" for an exclusive lock. A signed sequencer parses too, its
 * signature's form checked but not the signature: that takes a Verifier.
 */
export function parseSequencer(s) {
  if (typeof s !== 'string') throw invalid(`a sequencer is a string, not ${typeof s}`);
  return parsePlain(splitSigned(s).plain);
}

/** The text form of {kind, name, token}. */
export function formatSequencer({ kind = 'lock', name, token }) {
  return `${kind === 'lock' ? '' : kind + ':'}${name}@${token}`;
}

/** The keys (kid → 32-byte Buffer) of a verify keys file written by `seqd keygen`. */
export function parseVerifyKeys(text) {
  const keys = new Map();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const f = line.split(/\s+/);
    if (f.length !== 2 || !KID_RE.test(f[0])) throw new Error(`line ${i + 1}: want "<kid> <base64 public key>"`);
    const key = /^[A-Za-z0-9+/]+={0,2}$/.test(f[1]) ? Buffer.from(f[1], 'base64') : Buffer.alloc(0);
    if (key.length !== 32) throw new Error(`line ${i + 1}: the public key of ${JSON.stringify(f[0])} is not 32 bytes of base64`);
    if (keys.has(f[0])) throw new Error(`line ${i + 1}: key id ${JSON.stringify(f[0])} appears twice`);
    keys.set(f[0], key);
  });
  if (keys.size === 0) throw new Error('no key found');
  return keys;
}

/** A Verifier for the keys of a verify keys file. */
export function loadVerifyKeys(path) {
  try {
    return new Verifier(parseVerifyKeys(readFileSync(path, 'utf8')));
  } catch (e) {
    throw new Error(`${path}: ${e.message}`);
  }
}

// An Ed25519 public key is its 32 bytes after this SubjectPublicKeyInfo header.
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const CACHE = 1 << 14;

/**
 * Checks signed sequencers ("<plain>.<kid>.<sig>", an Ed25519 signature of
 * "seqd-sequencer-v2:<plain>") with public keys only: a resource can check
 * tokens, never mint them. It remembers the sequencers it verified (a
 * bounded number), so a holder's repeated sequencer costs a map lookup.
 */
export class Verifier {
  /** @param {Map<string, Uint8Array>|Record<string, Uint8Array>} keys key id → 32-byte public key */
  constructor(keys) {
    const entries = keys instanceof Map ? [...keys] : Object.entries(keys ?? {});
    if (entries.length === 0) throw new Error('a verifier needs at least one key');
    this.keys = new Map();
    for (const [kid, raw] of entries) {
      if (!KID_RE.test(kid)) throw new Error(`key id ${JSON.stringify(kid)} must be 1 to 32 of [A-Za-z0-9_-]`);
      if (raw.length !== 32) throw new Error(`key ${JSON.stringify(kid)} is ${raw.length} bytes, not 32`);
      this.keys.set(kid, createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: 'der', type: 'spki' }));
    }
    this.cur = new Map();
    this.older = new Map();
  }

  /**
   * The {kind, name, token} of a signed sequencer whose signature checks;
   * a SequencerError "unsigned", "bad_signature" or "invalid_sequencer"
   * otherwise.
   */
  verify(s) {
    let seq = this.cur.get(s) ?? this.older.get(s);
    if (seq === undefined) {
      if (typeof s !== 'string') throw invalid(`a sequencer is a string, not ${typeof s}`);
      const { plain, kid, sig } = splitSigned(s);
      if (kid === '') throw new SequencerError('unsigned', `${JSON.stringify(s.slice(0, 300))} has no signature`);
      seq = parsePlain(plain);
      const key = this.keys.get(kid);
      if (key === undefined) throw new SequencerError('bad_signature', `unknown key id ${JSON.stringify(kid)}`);
      const raw = Buffer.from(sig, 'base64url');
      // One spelling per signature: no unused bits set in the last character.
      if (raw.length !== 64 || raw.toString('base64url') !== sig || !verifySignature(null, Buffer.from(CONTEXT + plain), key, raw)) {
        throw new SequencerError('bad_signature', `the signature of ${JSON.stringify(plain.slice(0, 300))} does not check with key ${JSON.stringify(kid)}`);
      }
    }
    if (this.cur.size >= CACHE / 2) {
      this.older = this.cur;
      this.cur = new Map();
    }
    this.cur.set(s, seq);
    return seq;
  }
}

/**
 * The lock that guards some data: token(sequencer) returns the token of a
 * sequencer of that lock and kind (and, with a verifier, signed by seqd),
 * and throws a SequencerError otherwise. kind is "lock" (an exclusive lock;
 * the default), "election" (a leader's term), "shared" or "semaphore":
 * tokens of another kind follow another count.
 */
export class Guard {
  constructor(name, { kind = 'lock', verifier } = {}) {
    if (!KINDS.includes(kind)) throw new Error(`unknown kind ${JSON.stringify(kind)}: want one of ${KINDS.join(', ')}`);
    checkName(name);
    this.name = name;
    this.kind = kind;
    this.verifier = verifier;
  }

  token(sequencer) {
    const seq = this.verifier ? this.verifier.verify(sequencer) : parseSequencer(sequencer);
    if (seq.kind !== this.kind || seq.name !== this.name) {
      const want = formatSequencer({ kind: this.kind, name: this.name, token: '' }).slice(0, -1);
      throw new SequencerError('wrong_lock', `${JSON.stringify(formatSequencer(seq).slice(0, 300))} is not a sequencer of ${JSON.stringify(want)}`);
    }
    return seq.token;
  }
}

/** The SHA-1 of a script, as EVALSHA takes it. */
export function scriptSHA(script) {
  return createHash('sha1').update(script).digest('hex');
}

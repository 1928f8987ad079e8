// seqd/fence/redis: fenced Redis commands with ioredis. One Lua script
// compares the token with the key's max and, if it is not below it, runs
// your command and raises the max, atomically (Redis runs a script with
// nothing in between).
//
// The max of key K lives in the Redis key "seqd_fence:K" (the prefix is an
// option) as 20 zero-padded digits: Lua's numbers are doubles, exact only
// to 2^53, so the script compares tokens as strings of equal length, which
// compares the 64-bit numbers exactly. The Go, Python and Java helpers use
// the same script and keys.
//
// The max survives a crash only with AOF on and appendfsync always (with
// everysec a crash can lose the last second of writes, the max's included;
// with RDB snapshots only, everything since the last snapshot).
// RedisFence.create refuses a Redis that reports no AOF (requireAOF: false
// makes it a warning) and warns when appendfsync is not always.
// This module imports no driver: it works on the ioredis client you pass.

import { StaleTokenError, checkToken, scriptSHA } from './index.js';

/** The fence script: KEYS[1] the fence key, ARGV[1] the token padded to 20 digits, ARGV[2..] the command. */
export const SCRIPT = `local tok = ARGV[1]
if #tok ~= 20 or not tok:match('^%d+$') then
  return redis.error_reply('seqd fence: the token must be 20 zero-padded digits')
end
local max = redis.call('GET', KEYS[1])
if max and max > tok then
  return {0, max}
end
local res = false
if #ARGV > 1 then
  res = redis.call(unpack(ARGV, 2))
end
if max ~= tok then
  redis.call('SET', KEYS[1], tok)
end
return {1, tok, res}
`;
const SHA = scriptSHA(SCRIPT);

/** Redis reports no AOF: a restart would forget every max. */
export class PersistenceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PersistenceError';
  }
}

const text = (v) => (Buffer.isBuffer(v) ? v.toString() : String(v));

/**
 * Fenced commands on one ioredis client. A cluster client works if each
 * command's keys share the fence key's hash slot ("{orders}" and
 * "seqd_fence:{orders}").
 */
export class RedisFence {
  /** Use RedisFence.create, which checks the server's persistence first. */
  constructor(client, { prefix = 'seqd_fence:' } = {}) {
    this.client = client;
    this.prefix = prefix;
  }

  /** A fence on client, after checkPersistence. */
  static async create(client, { prefix, requireAOF = true } = {}) {
    const f = new RedisFence(client, { prefix });
    await f.checkPersistence({ requireAOF });
    return f;
  }

  /**
   * Throws PersistenceError (or, with requireAOF false, emits a warning) if
   * Redis reports no AOF; warns if appendfsync is not always.
   */
  async checkPersistence({ requireAOF = true } = {}) {
    const info = text(await this.client.info('persistence'));
    if (!/^aof_enabled:1\s*$/m.test(info)) {
      const msg = 'Redis reports no AOF (aof_enabled:0): a restart forgets every fence\'s max; set appendonly yes and appendfsync always';
      if (requireAOF) throw new PersistenceError(msg);
      process.emitWarning(msg, 'SeqdFenceWarning');
      return;
    }
    let fsync;
    try {
      fsync = (await this.client.config('GET', 'appendfsync'))[1];
    } catch {
      return; // CONFIG may be renamed or refused: nothing to say
    }
    if (fsync !== undefined && text(fsync) !== 'always') {
      process.emitWarning(`Redis has appendfsync ${text(fsync)}: a crash can lose the last writes and the fence's max with them; set appendfsync always`, 'SeqdFenceWarning');
    }
  }

  /**
   * Runs command (e.g. ['SET', 'k', 'v']) if token is not below key's max,
   * and raises the max to it; resolves with the command's reply. Throws
   * StaleTokenError, running nothing, if a higher token was used. With no
   * command only the max moves. keys declares the keys the command
   * touches (for a cluster).
   */
  async call(key, token, command = [], { keys = [] } = {}) {
    const t = checkToken(token);
    const args = [1 + keys.length, this.prefix + key, ...keys, t.toString().padStart(20, '0'), ...command];
    let reply;
    try {
      reply = await this.client.evalsha(SHA, ...args);
    } catch (e) {
      if (!String(e?.message).startsWith('NOSCRIPT')) throw e;
      reply = await this.client.eval(SCRIPT, ...args);
    }
    if (Number(reply[0]) !== 1) throw new StaleTokenError(key, t, BigInt(text(reply[1])));
    return reply.length > 2 ? reply[2] : null;
  }

  /** Raises key's max to token, or throws StaleTokenError. */
  async admit(key, token) {
    await this.call(key, token);
  }

  /** The key's max, 0n if no token was used yet. */
  async max(key) {
    const v = await this.client.get(this.prefix + key);
    return v === null ? 0n : BigInt(text(v));
  }
}

// seqd/fence/redis: fenced Redis commands with ioredis. One Lua script
// compares the token with the key's max and, if it is not below it, runs
// your command and raises the max, atomically (Redis runs a script with
// nothing in between).
//
// The max lives in a Redis key of its own (the fence key, which you name)
// as 20 zero-padded digits: Lua's numbers are doubles, exact only to 2^53,
// so the script compares tokens as strings of equal length, which compares
// the 64-bit numbers exactly. The Go, Python and Java helpers run the same
// script.
//
// The max survives a crash only with AOF on and appendfsync always (with
// everysec a crash can lose the last second of writes, the max's included;
// with RDB snapshots only, everything since the last snapshot).
// RedisFence.create refuses a Redis that reports no AOF (requireAOF: false
// makes it a warning) and warns when appendfsync is not always.
// This module imports no driver: it works on the ioredis client you pass.

import { StaleTokenError, checkToken, scriptSHA } from './index.js';

/**
 * The fence script, the same text as the Go, Python and Java helpers'.
 * KEYS[1] is the fence key, ARGV[1] the token as 20 zero-padded digits;
 * ARGV[2], if given, a command, with KEYS[2..] its keys (first) and
 * ARGV[3..] its other arguments. It answers {1, the command's reply} when
 * admitted and {0, the max} when refused.
 */
export const SCRIPT = `
local max = redis.call('GET', KEYS[1])
if max then
  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
  end
  if max > ARGV[1] then
    return {0, max}
  end
end
if max ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
end
if #ARGV < 2 then
  return {1}
end
local args = {ARGV[2]}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(unpack(args))}
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
 * "fence:{orders}").
 */
export class RedisFence {
  /** Use RedisFence.create, which checks the server's persistence first. */
  constructor(client) {
    this.client = client;
  }

  /** A fence on client, after checkPersistence. */
  static async create(client, { requireAOF = true } = {}) {
    const f = new RedisFence(client);
    await f.checkPersistence({ requireAOF });
    return f;
  }

  /**
   * Throws PersistenceError (or, with requireAOF false, emits a warning) if
   * Redis reports no AOF; warns if appendfsync is not always.
   */
  async checkPersistence({ requireAOF = true } = {}) {
    const { aof, fsync } = await this.persistence();
    if (!aof) {
      const msg = "Redis runs without the append-only file (appendonly no): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always";
      if (requireAOF) throw new PersistenceError(msg);
      process.emitWarning(msg, 'SeqdFenceWarning');
      return;
    }
    if (fsync && fsync !== 'always') {
      process.emitWarning(`Redis has appendfsync ${fsync}: a crash can lose the last writes and the fence's max with them; set appendfsync always`, 'SeqdFenceWarning');
    }
  }

  /** {aof, fsync} from CONFIG GET, or, where CONFIG is refused, from INFO persistence. */
  async persistence() {
    let cfg = {};
    try {
      const pairs = await this.client.config('GET', 'append*');
      for (let i = 0; i + 1 < pairs.length; i += 2) cfg[text(pairs[i])] = text(pairs[i + 1]);
    } catch {
      cfg = {}; // CONFIG may be renamed or refused
    }
    if (cfg.appendonly) return { aof: cfg.appendonly === 'yes', fsync: cfg.appendfsync ?? '' };
    let info = text(await this.client.info('persistence'));
    // While Redis loads its data at start it reports AOF off (it turns AOF
    // off while replaying the file): wait for the load, 30s at most.
    for (const end = Date.now() + 30_000; /^loading:1\s*$/m.test(info) && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 50));
      info = text(await this.client.info('persistence'));
    }
    return { aof: /^aof_enabled:1\s*$/m.test(info), fsync: '' };
  }

  /**
   * Runs command with its keys (first) and args if token is not below the
   * max kept in the Redis key fenceKey, and raises that max to it,
   * atomically; resolves with the command's reply:
   *
   *   await fence.call('fence:orders', token, 'HSET', { keys: ['orders'], args: ['42', 'shipped'] });
   *
   * Throws StaleTokenError, running nothing, if a higher token was used.
   * With no command only the max moves. Only commands whose keys come
   * first fit.
   */
  async call(fenceKey, token, command = '', { keys = [], args = [] } = {}) {
    const t = checkToken(token);
    if (!command && (keys.length || args.length)) throw new TypeError('a command with keys or arguments and no name');
    const argv = [1 + keys.length, fenceKey, ...keys, t.toString().padStart(20, '0'), ...(command ? [command, ...args] : [])];
    let reply;
    try {
      reply = await this.client.evalsha(SHA, ...argv);
    } catch (e) {
      if (!String(e?.message).startsWith('NOSCRIPT')) throw e;
      reply = await this.client.eval(SCRIPT, ...argv);
    }
    if (Number(reply[0]) !== 1) throw new StaleTokenError(fenceKey, t, reply.length > 1 ? BigInt(text(reply[1])) : 0n);
    return reply.length > 1 ? reply[1] : null;
  }

  /** Raises the max in fenceKey to token, or throws StaleTokenError. */
  async admit(fenceKey, token) {
    await this.call(fenceKey, token);
  }

  /** The max in fenceKey, 0n if no token was used yet. */
  async max(fenceKey) {
    const v = await this.client.get(fenceKey);
    return v === null ? 0n : BigInt(text(v));
  }
}

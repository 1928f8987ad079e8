// seqd/fence/redis: fenced Redis commands with ioredis. One Lua script
// compares the token with the key's max and, if it is not below it, runs
// your command and raises the max, atomically (Redis runs a script with
// nothing in between).
//
// The script is the file the Go, Python and Java helpers run too
// (fence/redisfence/fence.lua in seqd's repository, shipped in this package
// as lib/fence/fence.lua). The max lives in a Redis key of its own, PREFIX
// followed by the fence key you name, as 20 zero-padded digits: Lua's
// numbers are doubles, exact only to 2^53, so the script compares tokens as
// strings of equal length, which compares the 64-bit numbers exactly. It
// refuses (RefusedCommandError) a command that names a key under PREFIX (as
// COMMAND GETKEYS reads it), a write that names no key (FLUSHDB, FLUSHALL,
// SWAPDB) and a script: any of them could reset a max. It clears any TTL a
// fence key was given.
//
// The max survives a crash only with AOF on and appendfsync always (with
// everysec a crash can lose the last second of writes, the max's included;
// with RDB snapshots only, everything since the last snapshot), and an
// eviction policy of allkeys-* lets Redis evict it. RedisFence.create
// refuses a Redis that reports no AOF (requireAOF: false makes it a
// warning) or an allkeys-* policy, and warns when appendfsync is not
// always; a fence reads both settings again every RECHECK_MS (on its now
// clock) before it admits, and refuses (PersistenceError) while either is
// unsafe. This module imports no driver: it works on the ioredis client you
// pass.

import { existsSync, readFileSync } from 'node:fs';
import { StaleTokenError, checkToken, scriptSHA } from './index.js';

const packaged = new URL('./fence.lua', import.meta.url);
const inRepo = new URL('../../../../fence/redisfence/fence.lua', import.meta.url);

/**
 * The fence script, read from the package (or, in seqd's source tree, from
 * the one file it is built from). KEYS[1] is the fence key (under PREFIX),
 * ARGV[1] the token as 20 zero-padded digits; ARGV[2], if given, a command,
 * with KEYS[2..] its keys (first) and ARGV[3..] its other arguments. It
 * answers {1, the command's reply} when admitted, {0, the max} when refused
 * as stale and {2, a sentence} when the command is refused.
 */
export const SCRIPT = readFileSync(existsSync(packaged) ? packaged : inRepo, 'utf8');
const SHA = scriptSHA(SCRIPT);

/** The prefix of every fence key; the script refuses commands that name a key under it. */
export const PREFIX = 'seqd:fence:';

/** How often a fence reads Redis's persistence and eviction settings again, in milliseconds. */
export const RECHECK_MS = 10_000;

/** The script refused the fenced command, which could have reset a max. */
export class RefusedCommandError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RefusedCommandError';
  }
}

/** Redis reports no AOF, or an eviction policy that can evict a fence key. */
export class PersistenceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PersistenceError';
  }
}

const text = (v) => (Buffer.isBuffer(v) ? v.toString() : String(v));

/**
 * Fenced commands on one ioredis client. A cluster client works if each
 * command's keys share the fence key's hash slot (the command's key
 * "{orders}" and the fence key "{orders}", kept as "seqd:fence:{orders}").
 */
export class RedisFence {
  /** Use RedisFence.create, which checks the server's settings first. */
  constructor(client, { requireAOF = true, recheckMs = RECHECK_MS, now = Date.now } = {}) {
    this.client = client;
    this.requireAOF = requireAOF;
    this.recheckMs = recheckMs;
    this.now = now;
    this.checkedAt = -Infinity;
    this.unsafe = null;
  }

  /** A fence on client, after checkPersistence; now (milliseconds) and recheckMs time the rereads. */
  static async create(client, { requireAOF = true, recheckMs = RECHECK_MS, now = Date.now } = {}) {
    const f = new RedisFence(client, { requireAOF, recheckMs, now });
    await f.checkPersistence({ requireAOF });
    return f;
  }

  /**
   * Throws PersistenceError if Redis's eviction policy can evict a fence
   * key, or if it reports no AOF (with requireAOF false, emits a warning);
   * warns if appendfsync is not always.
   */
  async checkPersistence({ requireAOF = this.requireAOF } = {}) {
    this.unsafe = await this.check(requireAOF, true);
    if (this.unsafe) throw new PersistenceError(this.unsafe);
  }

  /** Reads Redis's settings again now; throws PersistenceError while they are unsafe. */
  async recheck() {
    this.unsafe = await this.check(this.requireAOF, false);
    if (this.unsafe) throw new PersistenceError(this.unsafe);
  }

  async check(requireAOF, warn) {
    const { aof, fsync, policy } = await this.persistence();
    this.checkedAt = this.now();
    if (policy.startsWith('allkeys-')) {
      return `Redis's maxmemory-policy is ${policy}, which can evict keys without a TTL: an evicted fence key forgets its max and lets stale holders in; set maxmemory-policy noeviction or a volatile-* policy`;
    }
    if (!aof) {
      const msg = "Redis runs without the append-only file (appendonly no): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always";
      if (requireAOF) return msg;
      if (warn) process.emitWarning(msg, 'SeqdFenceWarning');
    } else if (warn && fsync && fsync !== 'always') {
      process.emitWarning(`Redis has appendfsync ${fsync}: a crash can lose the last writes and the fence's max with them; set appendfsync always`, 'SeqdFenceWarning');
    }
    return null;
  }

  /** {aof, fsync, policy} from CONFIG GET, or, where CONFIG is refused, from INFO. */
  async persistence() {
    let cfg = {};
    try {
      for (const pattern of ['append*', 'maxmemory-policy']) {
        const pairs = await this.client.config('GET', pattern);
        for (let i = 0; i + 1 < pairs.length; i += 2) cfg[text(pairs[i])] = text(pairs[i + 1]);
      }
    } catch {
      cfg = {}; // CONFIG may be renamed or refused
    }
    if (cfg.appendonly && cfg['maxmemory-policy']) return { aof: cfg.appendonly === 'yes', fsync: cfg.appendfsync ?? '', policy: cfg['maxmemory-policy'] };
    let info = text(await this.client.info('persistence'));
    // While Redis loads its data at start it reports AOF off (it turns AOF
    // off while replaying the file): wait for the load, 30s at most.
    for (const end = Date.now() + 30_000; /^loading:1\s*$/m.test(info) && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 50));
      info = text(await this.client.info('persistence'));
    }
    const policy = /^maxmemory_policy:(\S*)/m.exec(text(await this.client.info('memory')))?.[1] ?? '';
    return { aof: /^aof_enabled:1\s*$/m.test(info), fsync: '', policy };
  }

  /**
   * Runs command with its keys (first) and args if token is not below the
   * max kept for fenceKey (in the Redis key PREFIX + fenceKey), and raises
   * that max to it, atomically; resolves with the command's reply:
   *
   *   await fence.call('orders', token, 'HSET', { keys: ['orders'], args: ['42', 'shipped'] });
   *
   * Throws StaleTokenError, running nothing, if a higher token was used;
   * RefusedCommandError if the command could reset a max; PersistenceError
   * if Redis's settings became unsafe. With no command only the max moves.
   * Only commands whose keys come first fit.
   */
  async call(fenceKey, token, command = '', { keys = [], args = [] } = {}) {
    const t = checkToken(token);
    if (!command && (keys.length || args.length)) throw new TypeError('a command with keys or arguments and no name');
    if (this.unsafe !== null || this.now() - this.checkedAt >= this.recheckMs) await this.recheck();
    const argv = [1 + keys.length, PREFIX + fenceKey, ...keys, t.toString().padStart(20, '0'), ...(command ? [command, ...args] : [])];
    let reply;
    try {
      reply = await this.client.evalsha(SHA, ...argv);
    } catch (e) {
      if (!String(e?.message).startsWith('NOSCRIPT')) throw e;
      reply = await this.client.eval(SCRIPT, ...argv);
    }
    const code = Number(reply[0]);
    if (code === 1) return reply.length > 1 ? reply[1] : null;
    if (code === 2) throw new RefusedCommandError(text(reply[1]));
    throw new StaleTokenError(fenceKey, t, reply.length > 1 ? BigInt(text(reply[1])) : 0n);
  }

  /** Raises the max of fenceKey to token, or throws StaleTokenError. */
  async admit(fenceKey, token) {
    await this.call(fenceKey, token);
  }

  /** The max of fenceKey, 0n if no token was used yet. */
  async max(fenceKey) {
    const v = await this.client.get(PREFIX + fenceKey);
    return v === null ? 0n : BigInt(text(v));
  }
}

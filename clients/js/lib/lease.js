// A held lease: renewed in the background, and lost at once when the
// daemon says it ended or when its deadline passes without a successful
// renew. The deadline is kept on the monotonic clock from when the last
// successful request was sent, so it is never later than the daemon's
// expires_at, whatever the answer's delay.

import { performance } from 'node:perf_hooks';

import { parseDuration } from './duration.js';
import { LostError, ProtocolError, SeqdError } from './errors.js';

const now = () => performance.now();

/** The smallest pause between renew attempts after a failure. */
const MIN_RETRY_MS = 50;
/** A lease renews every TTL/RENEW_DIVISOR (the daemon's api.RenewDivisor). */
export const RENEW_DIVISOR = 3;
/** After a renewal that did not reach the daemon, it retries every (TTL/RENEW_DIVISOR)/RETRY_DIVISOR. */
export const RETRY_DIVISOR = 4;

export class HeldLease {
  #client;
  #data;
  #ttlMs;
  #deadline;
  #state = 'held'; // then 'lost' or 'released'
  #abort = new AbortController();
  #renewTimer = null;
  #deadlineTimer = null;
  #inflight = null; // the AbortController of the renew in flight
  #lastError = null;

  /**
   * @param {import('./client.js').Client} client
   * @param {object} data the lease as the client's acquire returned it
   * @param {number} sentAt performance.now() when its request was sent
   * @param {{renew: boolean}} opts renew: false holds without renewing
   */
  constructor(client, data, sentAt, opts) {
    this.#client = client;
    this.#extend(data, sentAt);
    if (opts.renew) this.#scheduleRenew(this.#interval());
  }

  get kind() { return this.#data.kind; }
  get name() { return this.#data.name; }
  /** The fencing token: pass it (or the sequencer) to the resource. */
  get token() { return this.#data.token; }
  get sequencer() { return this.#data.sequencer; }
  get leaseId() { return this.#data.leaseId; }
  get owner() { return this.#data.owner; }
  get ttl() { return this.#data.ttl; }
  /** The daemon's expiry after the last renew; the lease may end earlier. */
  get expiresAt() { return this.#data.expiresAt; }
  get limit() { return this.#data.limit; }
  get mode() { return this.#data.mode; }

  /** Aborted, with a LostError as its reason, when the lease is lost. */
  get signal() {
    this.#checkDeadline();
    return this.#abort.signal;
  }

  /** True once the lease is lost; exact even if the deadline timer is late. */
  get lost() {
    this.#checkDeadline();
    return this.#state === 'lost';
  }

  /** True once released. */
  get released() {
    return this.#state === 'released';
  }

  /** The LostError that ended the lease, or null. */
  get lossReason() {
    return this.lost ? this.#abort.signal.reason : null;
  }

  /** Throws the loss reason if the lease is lost (or released). */
  throwIfLost() {
    if (this.lost) throw this.#abort.signal.reason;
    if (this.#state === 'released') throw new LostError(`the lease on ${JSON.stringify(this.name)} was released`, { code: 'released' });
  }

  /**
   * How many milliseconds the lease is guaranteed to hold: 0 once lost or
   * released. For a lock, the daemon is asked (its figure also accounts
   * for its ZooKeeper session); for a semaphore or an election, it is the
   * time left until the local deadline. Check it before an action no
   * token can fence.
   * @param {{signal?: AbortSignal}} [opts]
   */
  async safeFor(opts = {}) {
    if (this.lost || this.#state !== 'held') return 0;
    if (this.kind === 'lock') {
      const st = await this.#client.status(this.name, { leaseId: this.leaseId, signal: opts.signal });
      if (!(st.safeForMs > 0)) {
        this.#lose('lost', `the daemon no longer holds the lease on ${JSON.stringify(this.name)}`);
        return 0;
      }
      if (this.lost || this.#state !== 'held') return 0;
      return Math.max(0, Math.floor(Math.min(st.safeForMs, this.#deadline - now())));
    }
    return Math.max(0, Math.floor(this.#deadline - now()));
  }

  /**
   * Ends the lease. A lease already lost is not released (that would be
   * refused): it resolves false, as it does when the daemon says the lease
   * had ended. Throws an UnavailableError if the daemon cannot be reached
   * (the lease then ends at its TTL).
   * @returns {Promise<boolean>} whether the daemon released it
   */
  async release() {
    if (this.lost || this.#state !== 'held') return false;
    this.#state = 'released';
    this.#stop();
    try {
      await this.#client.release(this.#data);
      return true;
    } catch (err) {
      if (err instanceof SeqdError && err.status === 409) return false;
      throw err;
    }
  }

  toJSON() {
    const { leaseId: _secret, ...rest } = this.#data;
    return { ...rest, token: String(this.token), lost: this.lost };
  }

  /**
   * Runs one request on the lease (fn gets the client and the lease's
   * data) and takes its answer as the lease's data. A 409 means the lease
   * has ended: it is lost, and the loss reason is thrown.
   */
  async _request(fn) {
    this.throwIfLost();
    try {
      const data = await fn(this.#client, this.#data);
      if (this.#state === 'held') this.#data = { ...data, leaseId: data.leaseId ?? this.#data.leaseId };
      return data;
    } catch (err) {
      if (err instanceof SeqdError && err.status === 409) {
        this.#lose(err.code, err.message, err);
        throw this.#abort.signal.reason;
      }
      throw err;
    }
  }

  #interval() {
    return this.#ttlMs / RENEW_DIVISOR;
  }

  /** A successful grant or renew sent at sentAt: a new deadline. */
  #extend(data, sentAt) {
    this.#data = { ...data, leaseId: data.leaseId ?? this.#data?.leaseId };
    this.#ttlMs = parseDuration(data.ttl);
    this.#deadline = sentAt + this.#ttlMs;
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(() => this.#checkDeadline(), Math.max(0, this.#deadline - now()));
    // The renew timer, or the renew in flight, keeps the process alive
    // while the lease is held; this one need not.
    this.#deadlineTimer.unref();
  }

  #checkDeadline() {
    if (this.#state === 'held' && now() >= this.#deadline) {
      const last = this.#lastError ? `; the last renew failed: ${this.#lastError.message}` : '';
      this.#lose('expired', `the lease on ${JSON.stringify(this.name)} (token ${this.token}) expired: no successful renew within its TTL of ${this.ttl}${last}`, this.#lastError ?? undefined);
    }
  }

  #scheduleRenew(delay) {
    this.#renewTimer = setTimeout(() => this.#renew(), Math.max(0, delay));
  }

  async #renew() {
    this.#renewTimer = null;
    this.#checkDeadline();
    if (this.#state !== 'held') return;
    const ac = new AbortController();
    this.#inflight = ac;
    const sentAt = now();
    const left = this.#deadline - sentAt;
    // Long enough for a slow daemon, short enough to try again on a new
    // connection before the deadline if this one hangs.
    const timeout = Math.max(1, Math.min(left, Math.max(this.#interval(), left / 2)));
    try {
      const data = await this.#client.renew(this.#data, { signal: ac.signal, timeout });
      if (this.#state !== 'held') return;
      this.#lastError = null;
      this.#extend(data, sentAt);
      this.#scheduleRenew(sentAt + this.#interval() - now());
    } catch (err) {
      if (this.#state !== 'held') return;
      if (err instanceof ProtocolError) {
        // An answer that cannot be trusted: nothing says the lease still holds.
        this.#lose('protocol', `the lease on ${JSON.stringify(this.name)} is lost: its renewal's answer broke the protocol: ${err.message}`, err);
        return;
      }
      if (err instanceof SeqdError && err.status >= 400 && err.status < 500) {
        // 409 lost, stale_token or broken; any other refusal would be
        // refused again until the deadline: lost either way.
        this.#lose(err.code, err.message, err);
        return;
      }
      this.#lastError = err;
      this.#checkDeadline();
      if (this.#state === 'held') this.#scheduleRenew(Math.max(MIN_RETRY_MS, this.#interval() / RETRY_DIVISOR));
    } finally {
      if (this.#inflight === ac) this.#inflight = null;
    }
  }

  #lose(code, message, cause) {
    if (this.#state !== 'held') return;
    this.#state = 'lost';
    this.#stop();
    const err = new LostError(message, {
      code,
      status: cause instanceof SeqdError ? cause.status : 0,
      currentToken: cause instanceof SeqdError ? cause.currentToken : null,
      cause,
    });
    this.#abort.abort(err);
  }

  #stop() {
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#deadlineTimer);
    this.#renewTimer = this.#deadlineTimer = null;
    this.#inflight?.abort();
    this.#inflight = null;
  }
}

if (Symbol.asyncDispose) {
  /** Releases, for `await using lease = await client.lock(…)`. */
  HeldLease.prototype[Symbol.asyncDispose] = async function dispose() {
    await this.release();
  };
}

/** A held leadership of an election: a lease with a term and a value. */
export class Leadership extends HeldLease {
  /** The term: the leadership's token, higher for every new leader. */
  get term() {
    return this.token;
  }

  /**
   * Publishes a new value, keeping the term. Throws the loss reason if the
   * leadership is lost.
   * @param {string} value
   */
  async proclaim(value, opts = {}) {
    await this._request((client, data) => client.proclaim(data, value, opts));
  }

  /** Ends the leadership (the same as release). */
  async resign() {
    return this.release();
  }
}

/**
 * Runs fn(lease) and releases the lease when fn settles. A release that
 * fails does not hide fn's result or error: the lease then ends at its
 * TTL.
 */
export async function runHeld(lease, fn) {
  if (typeof fn !== 'function') {
    await lease.release().catch(() => {});
    throw new TypeError('the last argument must be the function to run while holding');
  }
  try {
    return await fn(lease);
  } finally {
    await lease.release().catch(() => {});
  }
}

// The client of seqd's HTTP API: configuration, transport and one method
// per endpoint. The holding helpers (lock, semaphore, campaign) build on
// these in lease.js.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';

import { parseDuration, wireDuration } from './duration.js';
import { errorFor, ProtocolError, SeqdError, UnavailableError } from './errors.js';
import { encodeJSON, parseJSON, toToken } from './json.js';
import { HeldLease, Leadership, runHeld } from './lease.js';

const DEFAULT_ADDR = 'http://127.0.0.1:7070';
/**
 * Milliseconds a request may take beyond the wait it asks for: connecting,
 * sending, the first byte and the whole answer together.
 */
const DEFAULT_TIMEOUT_MS = 4_000;
/** How much of a bad answer an error quotes. */
const QUOTE_BYTES = 200;
const MAX_TOKEN = (1n << 64n) - 1n;
const LEASE_ID = /^[0-9a-f]{32}$/;
/** How long a blocking read waits when given an index and no wait. */
const DEFAULT_BLOCKING_WAIT_MS = 5 * 60_000;
const MAX_ANSWER_BYTES = 1 << 20;

/**
 * Each kind of lease: where its routes live and the names of its actions.
 * Everything that differs between locks, semaphores and elections is here.
 */
const KINDS = {
  lock: { root: '/v1/locks/', take: 'acquire', end: 'release' },
  semaphore: { root: '/v1/semaphores/', take: 'acquire', end: 'release' },
  election: { root: '/v1/elections/', take: 'campaign', end: 'resign' },
};

/** The errors that mean a kept-alive connection was closed under a request. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export class Client {
  #url;
  #base;
  #mod;
  #agent;
  #apiToken;

  /**
   * Reads SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT and
   * SEQD_KEY; an option given here (null included) overrides its variable.
   * @param {import('../index.js').ClientOptions} [opts]
   */
  constructor(opts = {}) {
    const env = opts.env ?? process.env;
    const pick = (opt, name) => (opt !== undefined ? opt : env[name] || undefined);
    const addr = pick(opts.addr, 'SEQD_ADDR') ?? DEFAULT_ADDR;
    let url;
    try {
      url = new URL(addr);
    } catch {
      throw new TypeError(`seqd address ${JSON.stringify(addr)} is not a URL such as ${DEFAULT_ADDR}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(`seqd address ${JSON.stringify(addr)} must start with http:// or https://`);
    }
    this.#url = url;
    this.#base = url.pathname.replace(/\/+$/, '');
    /** The daemon's base URL. */
    this.addr = url.origin + this.#base;
    /** The owner named by requests that name none: `<hostname>:<pid>` by default. */
    this.owner = opts.owner ?? `${hostname()}:${process.pid}`;
    /** Milliseconds a request may take, on top of the wait it asks for. */
    this.timeout = opts.timeout ?? DEFAULT_TIMEOUT_MS;

    if (opts.apiToken != null) {
      this.#apiToken = String(opts.apiToken).trim();
    } else {
      const file = pick(opts.apiTokenFile, 'SEQD_API_TOKEN_FILE');
      if (file) {
        this.#apiToken = readPEMOrFile(file, 'the API token file').toString('utf8').trim();
        if (!this.#apiToken) throw new TypeError(`the API token file ${file} is empty`);
      }
    }
    const cacert = pick(opts.cacert, 'SEQD_CACERT');
    const cert = pick(opts.cert, 'SEQD_CERT');
    const key = pick(opts.key, 'SEQD_KEY');
    if (Boolean(cert) !== Boolean(key)) {
      throw new TypeError('a client certificate needs both a certificate (cert, SEQD_CERT) and its key (key, SEQD_KEY)');
    }
    const agentOpts = { keepAlive: true };
    if (url.protocol === 'https:') {
      if (cacert) agentOpts.ca = readPEMOrFile(cacert, 'the CA certificate');
      if (cert) {
        agentOpts.cert = readPEMOrFile(cert, 'the client certificate');
        agentOpts.key = readPEMOrFile(key, 'the client key');
      }
      this.#mod = https;
      this.#agent = new https.Agent(agentOpts);
    } else {
      this.#mod = http;
      this.#agent = new http.Agent(agentOpts);
    }
  }

  /** Closes the kept-alive connections. Idle ones never keep the process alive anyway. */
  close() {
    this.#agent.destroy();
  }

  // ---- locks ----

  /**
   * One acquire: a lease, or a HeldError once `wait` has passed.
   * @param {string} name
   * @param {import('../index.js').AcquireOptions} [opts]
   */
  async acquire(name, opts = {}) {
    const body = {
      owner: opts.owner ?? this.owner,
      lease_id: opts.leaseId ?? newLeaseId(),
      ttl: wireDuration(opts.ttl, 'ttl'),
      wait: wireDuration(opts.wait, 'wait'),
      mode: opts.mode,
      lock_delay: wireDuration(opts.lockDelay, 'lockDelay'),
    };
    return this.#take('lock', name, body, opts);
  }

  /**
   * Renews a lease of any kind (lock, semaphore, election): the same lease
   * with its TTL extended (or replaced by `ttl`).
   * @param {import('../index.js').LeaseRef} lease
   * @param {import('../index.js').RequestOptions & {ttl?: string | number}} [opts]
   */
  async renew(lease, opts = {}) {
    const kind = kindOf(lease);
    const body = { lease_id: leaseIdOf(lease), token: toToken(lease.token), ttl: wireDuration(opts.ttl, 'ttl') };
    const accept = (raw) => leaseProblem(raw, lease.name, body.lease_id, body.token);
    const raw = await this.#call('POST', pathFor(kind, lease.name, 'renew'), body, opts, accept);
    return leaseFrom(kind, raw);
  }

  /**
   * Ends a lease of any kind (an election's is a resignation). A lease that
   * has already ended is a LostError (or StaleTokenError).
   * @param {import('../index.js').LeaseRef} lease
   * @param {import('../index.js').RequestOptions} [opts]
   */
  async release(lease, opts = {}) {
    const kind = kindOf(lease);
    const body = { lease_id: leaseIdOf(lease), token: toToken(lease.token) };
    await this.#call('POST', pathFor(kind, lease.name, KINDS[kind].end), body, opts);
  }

  /**
   * A lock's state, read from ZooKeeper. With `index`, a blocking read: it
   * answers once the state's index differs, or when `wait` has passed.
   * With `leaseId` (the caller's own lease), the answer has `safeForMs`.
   * @param {string} name
   * @param {import('../index.js').StatusOptions} [opts]
   */
  async status(name, opts = {}) {
    const raw = await this.#call('GET', pathFor('lock', name) + blockingQuery(opts), undefined, blockingTimeout(this, opts));
    return {
      name: raw.name,
      held: raw.held,
      token: tokenOrNull(raw.token),
      owner: raw.owner,
      command: raw.command,
      expiresAt: raw.expires_at ? new Date(raw.expires_at) : null,
      waiters: raw.waiters,
      safeForMs: raw.safe_for_ms,
      blockedBy: raw.blocked_by,
      ownerRewritten: raw.owner_rewritten ?? false,
      index: raw.index,
    };
  }

  /** The leases held through this daemon (without their lease ids). */
  async leases(opts = {}) {
    const raw = await this.#call('GET', '/v1/locks', undefined, opts);
    return raw.locks.map((l) => leaseFrom(l.limit ? 'semaphore' : 'lock', l));
  }

  /**
   * Is this the current holder's sequencer (or token)? A stale or
   * unknown one is an answer, not an error: `{valid: false, code}`.
   * @param {string | {name: string, token: bigint | number | string}} what
   * @param {import('../index.js').RequestOptions} [opts]
   */
  async check(what, opts = {}) {
    const body = typeof what === 'string' ? { sequencer: what } : { name: what.name, token: toToken(what.token) };
    const r = await this.#send('POST', '/v1/check', body, opts);
    const b = r.body;
    if ((r.status === 200 || r.status === 409) && b && typeof b.valid === 'boolean') {
      return { valid: b.valid, currentToken: tokenOrNull(b.current_token), code: b.code, error: b.error };
    }
    if (r.status === 403 && b?.code === 'bad_signature') {
      return { valid: false, currentToken: null, code: b.code, error: b.error };
    }
    throw errorFor(r.status, b, r.text);
  }

  // ---- semaphores ----

  /**
   * One acquire of one of `limit` slots.
   * @param {string} name
   * @param {import('../index.js').SemaphoreOptions} opts
   */
  async acquireSemaphore(name, opts) {
    if (!opts || !Number.isInteger(opts.limit) || opts.limit < 1) {
      throw new TypeError(`a semaphore needs a limit, an integer >= 1, got ${opts?.limit}`);
    }
    const body = {
      owner: opts.owner ?? this.owner,
      lease_id: opts.leaseId ?? newLeaseId(),
      ttl: wireDuration(opts.ttl, 'ttl'),
      wait: wireDuration(opts.wait, 'wait'),
      limit: opts.limit,
    };
    return this.#take('semaphore', name, body, opts);
  }

  /** How many hold the semaphore now. */
  async semaphoreStatus(name, opts = {}) {
    const raw = await this.#call('GET', pathFor('semaphore', name), undefined, opts);
    return { name: raw.name, holders: raw.holders };
  }

  // ---- elections ----

  /**
   * One campaign: a leadership lease (with `term`) once elected, or a
   * HeldError once `wait` has passed.
   * @param {string} name
   * @param {import('../index.js').CampaignOptions} [opts]
   */
  async acquireLeadership(name, opts = {}) {
    const body = {
      owner: opts.owner ?? this.owner,
      value: opts.value,
      lease_id: opts.leaseId ?? newLeaseId(),
      ttl: wireDuration(opts.ttl, 'ttl'),
      wait: wireDuration(opts.wait, 'wait'),
    };
    return this.#take('election', name, body, opts);
  }

  /** Ends a leadership lease (the same as release). */
  async resign(lease, opts = {}) {
    return this.release({ ...leaseRefOf(lease), kind: 'election' }, opts);
  }

  /**
   * The leader publishes a new value, keeping its term.
   * @param {import('../index.js').LeaseRef} lease
   * @param {string} value
   */
  async proclaim(lease, value, opts = {}) {
    if (typeof value !== 'string') throw new TypeError(`a leader's value must be a string, got ${typeof value}`);
    const body = { lease_id: leaseIdOf(lease), token: toToken(lease.token), value };
    const accept = (raw) => leaseProblem(raw, lease.name, body.lease_id, body.token);
    return leaseFrom('election', await this.#call('POST', pathFor('election', lease.name, 'proclaim'), body, opts, accept));
  }

  /**
   * An election's leader (null when nobody leads). With `index`, a blocking
   * read, as for status.
   * @param {string} name
   * @param {import('../index.js').BlockingOptions} [opts]
   */
  async election(name, opts = {}) {
    const raw = await this.#call('GET', pathFor('election', name) + blockingQuery(opts), undefined, blockingTimeout(this, opts));
    const l = raw.leader;
    return {
      name: raw.name,
      leader: l ? { owner: l.owner, value: l.value, term: l.term, since: new Date(l.since) } : null,
      candidates: raw.candidates,
      index: raw.index,
      self: raw.self,
    };
  }

  /**
   * The election's state now, then at every change, by blocking reads,
   * until `signal` aborts (the loop then ends quietly).
   * @param {string} name
   * @param {{signal?: AbortSignal, wait?: string | number}} [opts]
   */
  async *observe(name, opts = {}) {
    const { signal } = opts;
    let index;
    while (!signal?.aborted) {
      let st;
      try {
        st = await this.election(name, index === undefined ? { signal } : { signal, index, wait: opts.wait ?? '5m' });
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      if (st.index !== index) {
        index = st.index;
        yield st;
      }
    }
  }

  // ---- multi-locks ----

  /**
   * Every lock of `names` at once, all or none, under one lease; no two
   * acquirers of sets (or of single locks) can deadlock, whatever names
   * they ask for. A HeldError once `wait` has passed.
   * @param {string[]} names
   * @param {import('../index.js').AcquireOptions} [opts]
   */
  async acquireMulti(names, opts = {}) {
    if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string' && n !== '')) {
      throw new TypeError('a multi-lock needs an array of one or more lock names');
    }
    const body = {
      names,
      owner: opts.owner ?? this.owner,
      lease_id: opts.leaseId ?? newLeaseId(),
      ttl: wireDuration(opts.ttl, 'ttl'),
      wait: wireDuration(opts.wait, 'wait'),
      lock_delay: wireDuration(opts.lockDelay, 'lockDelay'),
    };
    const raw = await this.#call('POST', '/v1/multilocks/acquire', body, {
      signal: opts.signal,
      timeout: this.timeout + (body.wait ? parseDuration(body.wait) : 0),
    }, (r) => multiLeaseProblem(r, names, body.lease_id));
    return multiLeaseFrom(raw);
  }

  /** Renews a multi-lock lease: every lock at once, each token kept. */
  async renewMulti(lease, opts = {}) {
    const locks = lease.locks.map((l) => ({ name: l.name, token: toToken(l.token) }));
    const body = { lease_id: leaseIdOf(lease), locks, ttl: wireDuration(opts.ttl, 'ttl') };
    const accept = (r) => multiLeaseProblem(r, locks.map((l) => l.name), body.lease_id, locks.map((l) => l.token));
    return multiLeaseFrom(await this.#call('POST', '/v1/multilocks/renew', encodeLocks(body), opts, accept));
  }

  /** Ends a multi-lock lease: every lock at once. */
  async releaseMulti(lease, opts = {}) {
    const locks = lease.locks.map((l) => ({ name: l.name, token: toToken(l.token) }));
    await this.#call('POST', '/v1/multilocks/release', encodeLocks({ lease_id: leaseIdOf(lease), locks }), opts);
  }

  /** The live multi-lock lease leaseId and how long it is safe (the daemon's answer, as decoded). */
  async multiLockStatus(leaseId, opts = {}) {
    return this.#call('GET', `/v1/multilocks/${encodeURIComponent(leaseId)}`, undefined, opts);
  }

  // ---- old names: every seqd client names these calls alike (docs/clients.md) ----

  /** @deprecated the old name of election(). */
  async leader(name, opts = {}) {
    return this.election(name, opts);
  }

  /** @deprecated the old name of observe(). */
  watchLeader(name, opts = {}) {
    return this.observe(name, opts);
  }

  // ---- holding helpers ----

  /**
   * Acquires a lock and keeps it: renewed in the background every TTL/3
   * until released or lost. Prefer withLock, which always releases.
   * @param {string} name
   * @param {import('../index.js').HoldOptions} [opts]
   * @returns {Promise<HeldLease>}
   */
  async lock(name, opts = {}) {
    return this.#hold(HeldLease, opts, (o) => this.acquire(name, o));
  }

  /**
   * Runs fn while holding the lock; releases it when fn settles (also when
   * it throws), unless it was lost. Returns what fn returns.
   */
  async withLock(name, opts, fn) {
    [opts, fn] = typeof opts === 'function' ? [{}, opts] : [opts ?? {}, fn];
    return runHeld(await this.lock(name, opts), fn);
  }

  /**
   * Acquires one of `limit` slots and keeps it, as lock does.
   * @returns {Promise<HeldLease>}
   */
  async semaphore(name, opts) {
    return this.#hold(HeldLease, opts, (o) => this.acquireSemaphore(name, o));
  }

  /** Runs fn while holding one of `limit` slots, as withLock does. */
  async withSemaphore(name, opts, fn) {
    return runHeld(await this.semaphore(name, opts), fn);
  }

  /**
   * Campaigns until elected (or `wait` passes) and keeps the leadership,
   * as lock does.
   * @returns {Promise<Leadership>}
   */
  async campaign(name, opts = {}) {
    return this.#hold(Leadership, opts, (o) => this.acquireLeadership(name, o));
  }

  /** Runs fn while leader; resigns when fn settles, as withLock releases. */
  async withLeadership(name, opts, fn) {
    [opts, fn] = typeof opts === 'function' ? [{}, opts] : [opts ?? {}, fn];
    return runHeld(await this.campaign(name, opts), fn);
  }

  /**
   * Takes a lease and starts its renewal. The lease's deadline runs from
   * when the request was sent: if the answer took longer than a renew
   * interval (a wait), the lease is renewed at once to start from a fresh
   * deadline rather than from a mostly spent one.
   */
  async #hold(Cls, opts, take) {
    const leaseId = opts?.leaseId ?? newLeaseId();
    let sentAt = performance.now();
    let lease = await take({ ...opts, leaseId });
    if (performance.now() - sentAt > parseDuration(lease.ttl) / 3) {
      const acquiredAt = sentAt;
      sentAt = performance.now();
      try {
        // Not much past the grant's own deadline (the lease is not handed
        // out meanwhile), but long enough for a loaded daemon to answer.
        const left = acquiredAt + parseDuration(lease.ttl) - performance.now();
        lease = await this.renew(lease, { signal: opts?.signal, timeout: Math.min(this.timeout, Math.max(1000, left)) });
      } catch (err) {
        await this.release(lease).catch(() => {});
        throw err;
      }
    }
    return new Cls(this, lease, sentAt, { renew: opts?.renew ?? true });
  }

  async #take(kind, name, body, opts) {
    const raw = await this.#call('POST', pathFor(kind, name, KINDS[kind].take), body, {
      signal: opts.signal,
      timeout: this.timeout + (body.wait ? parseDuration(body.wait) : 0),
    }, (raw) => leaseProblem(raw, name, body.lease_id));
    return leaseFrom(kind, raw);
  }

  // ---- transport ----

  /**
   * A request whose 2xx answer must be a JSON object sent as
   * application/json and pass accept (which says what is wrong with it, or
   * nothing): anything else is a ProtocolError.
   */
  async #call(method, path, body, opts, accept) {
    const r = await this.#send(method, path, body, opts);
    if (r.status < 200 || r.status >= 300) throw errorFor(r.status, r.body, r.text, (s) => this.#redact(s));
    const what = `${method} ${path}`;
    const mediaType = (r.contentType ?? '').split(';')[0].trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw this.#protocolError(what, `the answer's Content-Type is ${r.contentType || 'missing'}, not application/json`, r);
    }
    if (r.body === null) throw this.#protocolError(what, `the answer is not JSON (${r.parseError})`, r);
    if (typeof r.body !== 'object' || Array.isArray(r.body)) throw this.#protocolError(what, 'the answer is JSON but not an object', r);
    const problem = accept?.(r.body);
    if (problem) throw this.#protocolError(what, problem, r);
    return r.body;
  }

  /** The API token taken out of a text that quotes what a daemon sent. */
  #redact(s) {
    return this.#apiToken ? s.split(this.#apiToken).join('[redacted]') : s;
  }

  /** The error for an answer that broke the protocol: it names the daemon and quotes the answer. */
  #protocolError(what, problem, r) {
    const quote = JSON.stringify(this.#redact(r.text).slice(0, QUOTE_BYTES));
    return new ProtocolError(
      `the daemon at ${this.addr} broke the protocol answering ${what}: ${problem}; it sent ${r.status} ${r.contentType || '(no Content-Type)'}: ${quote}`,
      { code: 'protocol', status: r.status },
    );
  }

  /**
   * Sends one request. A request that fails on a kept-alive connection the
   * daemon closed at that moment is sent once more on a new one: every
   * request of this client is safe to repeat (acquires carry their
   * lease_id, renew and release their token).
   * @returns {Promise<{status: number, body: any, text: string}>}
   */
  async #send(method, path, body, { signal, timeout = this.timeout } = {}) {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : encodeJSON(body);
    try {
      return await this.#attempt(method, path, payload, signal, timeout);
    } catch (err) {
      if (!err.staleSocket) throw err;
      return await this.#attempt(method, path, payload, signal, timeout);
    }
  }

  #attempt(method, path, payload, signal, timeout) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const headers = { accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      if (this.#apiToken) headers.authorization = `Bearer ${this.#apiToken}`;
      const req = this.#mod.request({
        protocol: this.#url.protocol,
        hostname: this.#url.hostname.replace(/^\[|\]$/g, ''),
        port: this.#url.port,
        path: this.#base + path,
        method,
        headers,
        agent: this.#agent,
      });
      let settled = false;
      const finish = (err, val) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(val);
      };
      const onAbort = () => {
        finish(signal.reason);
        req.destroy();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => {
        finish(new UnavailableError(`seqd at ${this.addr} did not answer ${method} ${path} within ${timeout} ms`, { code: 'unavailable' }));
        req.destroy();
      }, timeout);
      timer.unref(); // the request's own socket keeps the process alive while it runs
      req.on('error', (err) => {
        const e = new UnavailableError(`seqd at ${this.addr} cannot be reached: ${err.message}`, { code: 'unavailable', cause: err });
        e.staleSocket = req.reusedSocket && STALE_SOCKET.has(err.code);
        finish(e);
      });
      req.on('response', (res) => {
        const chunks = [];
        let size = 0;
        res.on('data', (c) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            finish(new SeqdError(`seqd at ${this.addr} answered ${method} ${path} with more than ${MAX_ANSWER_BYTES} bytes`, { code: 'malformed', status: res.statusCode }));
            req.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = null;
          let parseError = null;
          try {
            parsed = parseJSON(text);
          } catch (err) {
            parseError = err.message; // not JSON: a proxy's page, say
          }
          finish(null, { status: res.statusCode, contentType: res.headers['content-type'], body: parsed, parseError, text });
        });
        res.on('error', (err) => {
          const text = Buffer.concat(chunks).toString('utf8');
          finish(this.#protocolError(`${method} ${path}`, `the answer was cut short (${err.message})`, { status: res.statusCode, contentType: res.headers['content-type'], text }));
        });
      });
      req.end(payload);
    });
  }
}

/** A new lease id: 32 lowercase hex digits, chosen here so that a repeated acquire finds its lease. */
export function newLeaseId() {
  return randomBytes(16).toString('hex');
}

function readPEMOrFile(v, what) {
  if (Buffer.isBuffer(v)) return v;
  try {
    return readFileSync(v);
  } catch (err) {
    throw new TypeError(`cannot read ${what} ${v}: ${err.message}`, { cause: err });
  }
}

function pathFor(kind, name, action) {
  if (typeof name !== 'string' || name === '') throw new TypeError(`a ${kind} name must be a non-empty string, got ${JSON.stringify(name)}`);
  const p = KINDS[kind].root + name.split('/').map(encodeURIComponent).join('/');
  return action ? `${p}/${action}` : p;
}

function blockingQuery({ index, wait, leaseId }) {
  const q = [];
  if (leaseId !== undefined) q.push(`lease_id=${encodeURIComponent(leaseId)}`);
  if (index !== undefined && index !== null) {
    q.push(`index=${toIndex(index)}`);
    if (wait !== undefined) q.push(`wait=${encodeURIComponent(wireDuration(wait, 'wait'))}`);
  } else if (wait !== undefined) {
    throw new TypeError('wait needs an index: a blocking read waits for a state other than the one of that index');
  }
  return q.length ? `?${q.join('&')}` : '';
}

function blockingTimeout(client, { index, wait, signal }) {
  if (index === undefined || index === null) return { signal };
  const w = wait === undefined ? DEFAULT_BLOCKING_WAIT_MS : parseDuration(wireDuration(wait, 'wait'));
  return { signal, timeout: client.timeout + w };
}

function toIndex(v) {
  if ((typeof v === 'bigint' && v >= 0n) || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^[0-9]{1,20}$/.test(v))) {
    return String(v);
  }
  throw new TypeError(`index must be the bigint of an earlier answer, got ${typeof v} ${String(v).slice(0, 40)}`);
}

function kindOf(lease) {
  const kind = lease?.kind ?? 'lock';
  if (!KINDS[kind]) throw new TypeError(`unknown lease kind ${JSON.stringify(kind)}: want lock, semaphore or election`);
  return kind;
}

function leaseIdOf(lease) {
  if (typeof lease?.leaseId !== 'string') throw new TypeError('a lease needs its leaseId (the one its acquire answered)');
  return lease.leaseId;
}

function leaseRefOf(lease) {
  return { name: lease.name, leaseId: lease.leaseId, token: lease.token };
}

function tokenOrNull(t) {
  return typeof t === 'bigint' && t > 0n ? t : null;
}

/**
 * What is wrong with a lease the daemon answered for name, or null: the
 * rules every seqd client applies to a grant or a renewal (docs/clients.md).
 * leaseId is the one the request sent, token the lease's on a renewal (it
 * never changes). Lease ids are never quoted: they are secrets.
 */
export function leaseProblem(raw, name, leaseId, token) {
  if (typeof raw.name !== 'string') return 'the lease has no name';
  if (raw.name !== name) return `the lease is for the name ${JSON.stringify(raw.name)}, not the requested ${JSON.stringify(name)}`;
  const t = raw.token;
  if (t === undefined || t === null) return 'the lease has no token';
  if (typeof t !== 'bigint') return `the token ${JSON.stringify(typeof t === 'number' ? String(t) : t)} is not a base-10 integer`;
  if (t < 1n || t > MAX_TOKEN) return `the token ${t} is out of the range 1..2^64-1`;
  if (token !== undefined && t !== token) return `the token changed from ${token} to ${t}: a lease's token never changes`;
  if (typeof raw.lease_id !== 'string' || !LEASE_ID.test(raw.lease_id)) return 'the lease id is not 32 lowercase hex digits';
  if (leaseId !== undefined && raw.lease_id !== leaseId) return 'the lease id is not the one the request sent';
  if (typeof raw.sequencer !== 'string') return 'the lease has no sequencer';
  let ttl = 0;
  try {
    ttl = typeof raw.ttl === 'string' ? parseDuration(raw.ttl) : 0;
  } catch {
    // reported below
  }
  if (!(ttl > 0)) return `the ttl ${JSON.stringify(raw.ttl)} is not a positive duration`;
  return null;
}

/** leaseProblem for a multi-lock lease: one lock per name, in order, tokens unchanged on a renewal. */
function multiLeaseProblem(raw, names, leaseId, tokens) {
  if (typeof raw.lease_id !== 'string' || !LEASE_ID.test(raw.lease_id)) return 'the lease id is not 32 lowercase hex digits';
  if (raw.lease_id !== leaseId) return 'the lease id is not the one the request sent';
  if (!Array.isArray(raw.locks) || raw.locks.length !== names.length) return `the lease does not list the ${names.length} locks asked for`;
  for (let i = 0; i < names.length; i++) {
    const lk = raw.locks[i];
    if (!lk || lk.name !== names[i]) return `lock ${i} of the lease is ${JSON.stringify(lk?.name)}, not the requested ${JSON.stringify(names[i])}`;
    if (typeof lk.token !== 'bigint') return `the token of ${JSON.stringify(names[i])} is not a base-10 integer`;
    if (lk.token < 1n || lk.token > MAX_TOKEN) return `the token ${lk.token} of ${JSON.stringify(names[i])} is out of the range 1..2^64-1`;
    if (tokens && lk.token !== tokens[i]) return `the token of ${JSON.stringify(names[i])} changed from ${tokens[i]} to ${lk.token}: a lease's token never changes`;
    if (typeof lk.sequencer !== 'string') return `the lock ${JSON.stringify(names[i])} has no sequencer`;
  }
  return null;
}

/**
 * A multi-lock lease's renew or release body, as JSON text: encodeJSON
 * writes flat objects only, and the locks' tokens are bigints.
 */
function encodeLocks(body) {
  const locks = body.locks.map((l) => `{"name":${JSON.stringify(l.name)},"token":${l.token}}`).join(',');
  const rest = encodeJSON({ ...body, locks: undefined }); // at least the lease id
  return `{"locks":[${locks}],${rest.slice(1)}`;
}

/** The client's form of a multi-lock lease. */
function multiLeaseFrom(raw) {
  return {
    kind: 'multilock',
    locks: raw.locks.map((l) => ({ name: l.name, token: l.token, sequencer: l.sequencer })),
    leaseId: raw.lease_id,
    owner: raw.owner,
    ttl: raw.ttl,
    expiresAt: new Date(raw.expires_at),
    sequencers: raw.locks.map((l) => l.sequencer).join(' '),
  };
}

/** The client's form of the daemon's lease. */
function leaseFrom(kind, raw) {
  const l = {
    kind,
    name: raw.name,
    token: raw.token,
    sequencer: raw.sequencer,
    leaseId: raw.lease_id,
    owner: raw.owner,
    ttl: raw.ttl,
    expiresAt: new Date(raw.expires_at),
  };
  if (raw.term !== undefined) l.term = raw.term;
  if (raw.limit !== undefined) l.limit = raw.limit;
  if (raw.mode !== undefined) l.mode = raw.mode;
  return l;
}

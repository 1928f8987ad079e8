// Types of the seqd client. Tokens, terms and indexes are bigint: they are
// unsigned 64-bit integers, which a number cannot hold exactly.

/// <reference types="node" />

/** A Go duration string ("15s", "1m30s", "500ms") or a number of milliseconds. */
export type Duration = string | number;

/** A token as a caller may pass it: a bigint, a safe integer or a string of digits. */
export type TokenLike = bigint | number | string;

export type LeaseKind = 'lock' | 'semaphore' | 'election';

export interface ClientOptions {
  /** The daemon's URL; default SEQD_ADDR, else http://127.0.0.1:7070. */
  addr?: string;
  /** The bearer token itself; takes precedence over apiTokenFile. */
  apiToken?: string | null;
  /** A file holding the bearer token (trimmed); default SEQD_API_TOKEN_FILE; null for none. */
  apiTokenFile?: string | null;
  /** The CA that signed the daemon's certificate (a PEM file path or its contents); default SEQD_CACERT. */
  cacert?: string | Buffer | null;
  /** A client certificate (PEM file path or contents); default SEQD_CERT. Needs key. */
  cert?: string | Buffer | null;
  /** The client certificate's key (PEM, PKCS#8 ECDSA or RSA); default SEQD_KEY. */
  key?: string | Buffer | null;
  /** The owner named by requests that name none; default `<hostname>:<pid>`. */
  owner?: string;
  /** Milliseconds a request may take (connect, send, first byte, whole answer) on top of the wait it asks for; default 4000. */
  timeout?: number;
  /** The environment to read instead of process.env. */
  env?: Record<string, string | undefined>;
}

export interface RequestOptions {
  /** Aborts the request; it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds this request may take; default the client's timeout. */
  timeout?: number;
}

export interface TakeOptions {
  owner?: string;
  /** How long the lease lives without renewal (1s..1h); default 15s. */
  ttl?: Duration;
  /** How long to wait to be granted (0..10m); default 0: try once. */
  wait?: Duration;
  /** 32 lowercase hex digits; default a random one, so that a repeated request finds its lease. */
  leaseId?: string;
  /** Aborts the wait; the daemon withdraws the request. */
  signal?: AbortSignal;
}

export interface AcquireOptions extends TakeOptions {
  /** "exclusive" (default) or "shared" (a reader). */
  mode?: 'exclusive' | 'shared';
  /** After an unclean end of this lease, nobody gets the lock for this long (0..60s). */
  lockDelay?: Duration;
}

export interface SemaphoreOptions extends TakeOptions {
  /** How many hold the semaphore at once; every holder names the same. */
  limit: number;
}

export interface CampaignOptions extends TakeOptions {
  /** What the leader publishes (an address, a pod name); default the owner. */
  value?: string;
}

export interface HoldingOptions {
  /**
   * false holds without renewing: the lease is lost when its TTL passes.
   * For testing how code handles a loss. Default true.
   */
  renew?: boolean;
}

export type HoldOptions = AcquireOptions & HoldingOptions;
export type HoldSemaphoreOptions = SemaphoreOptions & HoldingOptions;
export type HoldCampaignOptions = CampaignOptions & HoldingOptions;

export interface BlockingOptions {
  /** The index of an earlier answer: answer once the state's index differs. */
  index?: bigint | number | string;
  /** With index: how long to wait for a change (at most 10m); default 5m. */
  wait?: Duration;
  signal?: AbortSignal;
}

export interface StatusOptions extends BlockingOptions {
  /** The caller's own lease id: the answer then carries safeForMs. */
  leaseId?: string;
}

/** What renew and release need of a lease. */
export interface LeaseRef {
  name: string;
  leaseId: string;
  token: TokenLike;
  /** Default "lock". */
  kind?: LeaseKind;
}

/** A grant, as the daemon answered it. */
export interface Lease {
  kind: LeaseKind;
  name: string;
  /** The fencing token. */
  token: bigint;
  /** What a resource checks; opaque (it may carry a kind prefix and a signature). */
  sequencer: string;
  /** Needed with the token to renew or release: keep it secret. */
  leaseId: string;
  owner: string;
  /** The TTL, a Go duration string. */
  ttl: string;
  /** The daemon's expiry after this answer; the lease may end earlier. */
  expiresAt: Date;
  /** Elections: the term (the token). */
  term?: bigint;
  /** Semaphores: the limit. */
  limit?: number;
  /** "shared" for a shared lease. */
  mode?: string;
}

export interface LockStatus {
  name: string;
  held: boolean;
  /** The lock's current token; null when none is known. */
  token: bigint | null;
  owner: string;
  command?: string;
  expiresAt: Date | null;
  waiters: number;
  /** Only with the caller's own leaseId: how long its lease is guaranteed. */
  safeForMs?: number;
  blockedBy?: string;
  ownerRewritten: boolean;
  /** Send back as index for a blocking read. */
  index: bigint;
}

export interface SemaphoreStatus {
  name: string;
  /** Lease nodes in ZooKeeper, a waiter's included while it counts. */
  holders: number;
}

export interface Leader {
  /** Known only on the daemon the leader campaigns through; "" otherwise. */
  owner: string;
  value: string;
  term: bigint;
  since: Date;
}

export interface ElectionStatus {
  name: string;
  leader: Leader | null;
  candidates: number;
  index: bigint;
  /** True while a campaign through this daemon leads. */
  self: boolean;
}

export interface CheckResult {
  valid: boolean;
  /** The lock's current token; null when none is known. */
  currentToken: bigint | null;
  /** When not valid: "stale_token", "not_held" or "bad_signature". */
  code?: string;
  error?: string;
}

/** A multi-lock lease: several locks held under one lease id. */
export interface MultiLease {
  kind: 'multilock';
  locks: { name: string; token: bigint; sequencer: string }[];
  leaseId: string;
  owner: string;
  ttl: string;
  expiresAt: Date;
  /** Every lock's sequencer, space-separated. */
  sequencers: string;
}

export class Client {
  constructor(opts?: ClientOptions);
  /** The daemon's base URL. */
  readonly addr: string;
  owner: string;
  timeout: number;
  /** Closes the kept-alive connections. */
  close(): void;

  acquire(name: string, opts?: AcquireOptions): Promise<Lease>;
  renew(lease: LeaseRef, opts?: RequestOptions & { ttl?: Duration }): Promise<Lease>;
  release(lease: LeaseRef, opts?: RequestOptions): Promise<void>;
  status(name: string, opts?: StatusOptions): Promise<LockStatus>;
  leases(opts?: RequestOptions): Promise<Lease[]>;
  check(what: string | { name: string; token: TokenLike }, opts?: RequestOptions): Promise<CheckResult>;

  acquireSemaphore(name: string, opts: SemaphoreOptions): Promise<Lease>;
  semaphoreStatus(name: string, opts?: RequestOptions): Promise<SemaphoreStatus>;

  acquireLeadership(name: string, opts?: CampaignOptions): Promise<Lease>;
  resign(lease: LeaseRef, opts?: RequestOptions): Promise<void>;
  proclaim(lease: LeaseRef, value: string, opts?: RequestOptions): Promise<Lease>;
  election(name: string, opts?: BlockingOptions): Promise<ElectionStatus>;
  observe(name: string, opts?: { signal?: AbortSignal; wait?: Duration }): AsyncGenerator<ElectionStatus, void, void>;
  /** Every lock of names at once, all or none, under one lease. */
  acquireMulti(names: string[], opts?: AcquireOptions): Promise<MultiLease>;
  /** Renews every lock of a multi-lock lease at once, keeping each token. */
  renewMulti(lease: MultiLease, opts?: RequestOptions & { ttl?: Duration }): Promise<MultiLease>;
  /** Ends a multi-lock lease: every lock at once. */
  releaseMulti(lease: MultiLease, opts?: RequestOptions): Promise<void>;
  /** The live multi-lock lease and how long it is safe, as the daemon answers it. */
  multiLockStatus(leaseId: string, opts?: RequestOptions): Promise<Record<string, unknown>>;
  /** @deprecated the old name of election(). */
  leader(name: string, opts?: BlockingOptions): Promise<ElectionStatus>;
  /** @deprecated the old name of observe(). */
  watchLeader(name: string, opts?: { signal?: AbortSignal; wait?: Duration }): AsyncGenerator<ElectionStatus, void, void>;

  lock(name: string, opts?: HoldOptions): Promise<HeldLease>;
  withLock<T>(name: string, fn: (lease: HeldLease) => Promise<T> | T): Promise<T>;
  withLock<T>(name: string, opts: HoldOptions, fn: (lease: HeldLease) => Promise<T> | T): Promise<T>;
  semaphore(name: string, opts: HoldSemaphoreOptions): Promise<HeldLease>;
  withSemaphore<T>(name: string, opts: HoldSemaphoreOptions, fn: (lease: HeldLease) => Promise<T> | T): Promise<T>;
  campaign(name: string, opts?: HoldCampaignOptions): Promise<Leadership>;
  withLeadership<T>(name: string, fn: (leadership: Leadership) => Promise<T> | T): Promise<T>;
  withLeadership<T>(name: string, opts: HoldCampaignOptions, fn: (leadership: Leadership) => Promise<T> | T): Promise<T>;
}

/** A lease renewed in the background until released or lost. */
export class HeldLease {
  protected constructor();
  readonly kind: LeaseKind;
  readonly name: string;
  readonly token: bigint;
  readonly sequencer: string;
  readonly leaseId: string;
  readonly owner: string;
  readonly ttl: string;
  readonly expiresAt: Date;
  readonly limit: number | undefined;
  readonly mode: string | undefined;
  /** Aborted, with a LostError as its reason, when the lease is lost. */
  readonly signal: AbortSignal;
  /** True once lost; exact even if the signal's timer is late. */
  readonly lost: boolean;
  readonly released: boolean;
  /** The LostError that ended the lease, or null. */
  readonly lossReason: LostError | null;
  /** Throws the loss reason if lost, a LostError if released. */
  throwIfLost(): void;
  /** Milliseconds the lease is guaranteed to hold; 0 once lost or released. */
  safeFor(opts?: { signal?: AbortSignal }): Promise<number>;
  /** Ends the lease; false if it had already ended (nothing is thrown for that). */
  release(): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;
  toJSON(): Record<string, unknown>;
}

/** A held leadership of an election. */
export class Leadership extends HeldLease {
  /** The term (the token): higher for every new leader. */
  readonly term: bigint;
  /** Publishes a new value, keeping the term. */
  proclaim(value: string, opts?: RequestOptions): Promise<void>;
  /** Ends the leadership (release). */
  resign(): Promise<boolean>;
}

export interface SeqdErrorOptions {
  code?: string;
  status?: number;
  currentToken?: bigint | null;
  cause?: unknown;
}

export class SeqdError extends Error {
  constructor(message: string, opts?: SeqdErrorOptions);
  /** The daemon's code ("held", "stale_token", "lost", …), or the client's ("expired"). */
  code: string;
  /** The HTTP status; 0 when no answer came. */
  status: number;
  /** The lock's current token when the daemon named one. */
  currentToken: bigint | null;
}
export class HeldError extends SeqdError {}
export class StaleTokenError extends SeqdError {}
export class LostError extends SeqdError {}
export class UnavailableError extends SeqdError {}
/** The daemon's answer broke the protocol (code "protocol"); a held lease that gets one is lost. */
export class ProtocolError extends SeqdError {}
export class UnauthorizedError extends SeqdError {}
/** 403 forbidden: the daemon's policy does not allow this caller the request. */
export class ForbiddenError extends UnauthorizedError {}
/** 429 quota_exceeded: beyond the caller's quota in the daemon's policy. */
export class QuotaExceededError extends SeqdError {}
export class BadRequestError extends SeqdError {}

/** A new lease id: 32 lowercase hex digits. */
export function newLeaseId(): string;

/** JSON.parse, except that integers in token, current_token, term and index fields are exact bigints. */
export function parseJSON(text: string): unknown;

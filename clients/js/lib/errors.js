// The errors of the client: one class per answer a caller acts on.

/**
 * Every error of the daemon's answers, and of a daemon that cannot be
 * reached. `code` is the daemon's word ("held", "stale_token", "lost",
 * "unavailable", …), `status` the HTTP status (0 when no answer came), and
 * `currentToken` the lock's current token when the daemon named one.
 */
export class SeqdError extends Error {
  /**
   * @param {string} message
   * @param {{code?: string, status?: number, currentToken?: bigint | null, cause?: unknown}} [o]
   */
  constructor(message, { code = 'error', status = 0, currentToken = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.currentToken = currentToken;
  }
}

/** 409 held: the lock (semaphore, election) was not granted within the wait. */
export class HeldError extends SeqdError {}
/** 409 stale_token: the token is below the lock's current one. */
export class StaleTokenError extends SeqdError {}
/**
 * The lease has ended: the daemon's 409 lost or broken, or, as a lease's
 * loss reason, any end noticed by the client (`code` "expired" when the
 * TTL passed without a successful renew).
 */
export class LostError extends SeqdError {}
/** 503 unavailable, or no answer from the daemon (status 0). Try again. */
export class UnavailableError extends SeqdError {}
/**
 * The daemon's answer broke the protocol: not JSON, not application/json,
 * of the wrong shape, cut short, for another lock or lease, or with a token
 * that is not an integer in 1..2^64-1 or that changed (`code` "protocol").
 * The message names the daemon and quotes what it sent (at most 200 bytes,
 * never the API token). Something other than seqd answered (a proxy, a
 * wrong port), or the daemon is broken: nothing of it is trusted, and a
 * held lease that gets such an answer is lost at once.
 */
export class ProtocolError extends SeqdError {}
/** 401 unauthorized: a missing or wrong API token. */
export class UnauthorizedError extends SeqdError {}
/** 403 forbidden: the daemon's policy does not allow this caller the request (the message names the rule). */
export class ForbiddenError extends UnauthorizedError {}
/** 429 quota_exceeded: beyond the caller's quota in the daemon's policy (the message names it). */
export class QuotaExceededError extends SeqdError {}
/** 400 bad_request: the daemon refused the request as malformed. */
export class BadRequestError extends SeqdError {}

const byCode = {
  held: HeldError,
  stale_token: StaleTokenError,
  lost: LostError,
  broken: LostError,
  unavailable: UnavailableError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  quota_exceeded: QuotaExceededError,
  bad_request: BadRequestError,
};

/**
 * The error for a non-2xx answer.
 * @param {number} status
 * @param {any} body the parsed body, or null if it was not JSON
 * @param {string} text the raw body
 * @param {(s: string) => string} [redact] takes the API token out of what the answer quotes
 */
export function errorFor(status, body, text, redact = (s) => s) {
  const code = body && typeof body.code === 'string' ? body.code : `http_${status}`;
  const message = body && typeof body.error === 'string' ? redact(body.error) : (redact(text).trim().slice(0, 200) || `HTTP ${status}`);
  const currentToken = body && typeof body.current_token === 'bigint' && body.current_token > 0n ? body.current_token : null;
  let Cls = byCode[code];
  if (!Cls) {
    if (status === 401) Cls = UnauthorizedError;
    else if (status === 503) Cls = UnavailableError;
    else if (status === 400) Cls = BadRequestError;
    else Cls = SeqdError;
  }
  return new Cls(message, { code, status, currentToken });
}

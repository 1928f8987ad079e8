// seqd: the JavaScript client of seqd's sidecar API (fenced locks,
// semaphores and elections over HTTP). Node >= 20, no dependency.

export { Client, newLeaseId } from './lib/client.js';
export { HeldLease, Leadership } from './lib/lease.js';
export {
  BadRequestError,
  ForbiddenError,
  HeldError,
  LostError,
  ProtocolError,
  QuotaExceededError,
  SeqdError,
  StaleTokenError,
  UnauthorizedError,
  UnavailableError,
} from './lib/errors.js';
export { parseJSON } from './lib/json.js';

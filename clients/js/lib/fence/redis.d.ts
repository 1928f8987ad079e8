/** What the fence needs of an ioredis client (Redis or Cluster). */
export interface RedisLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  info(section: string): Promise<string>;
  config(op: 'GET', pattern: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

export const SCRIPT: string;
export const PREFIX: string;
export const RECHECK_MS: number;

export class PersistenceError extends Error {}
export class RefusedCommandError extends Error {}

export interface FenceOptions {
  requireAOF?: boolean;
  /** How often the settings are read again, in milliseconds (RECHECK_MS). */
  recheckMs?: number;
  /** The clock of the rereads, in milliseconds (Date.now). */
  now?: () => number;
}

export class RedisFence {
  constructor(client: RedisLike, options?: FenceOptions);
  static create(client: RedisLike, options?: FenceOptions): Promise<RedisFence>;
  checkPersistence(options?: { requireAOF?: boolean }): Promise<void>;
  recheck(): Promise<void>;
  check(requireAOF: boolean, warn: boolean): Promise<string | null>;
  persistence(): Promise<{ aof: boolean; fsync: string; policy: string }>;
  call(fenceKey: string, token: bigint | number, command?: string, options?: { keys?: string[]; args?: (string | number)[] }): Promise<unknown>;
  admit(fenceKey: string, token: bigint | number): Promise<void>;
  max(fenceKey: string): Promise<bigint>;
}

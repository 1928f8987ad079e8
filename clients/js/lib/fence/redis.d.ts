/** What the fence needs of an ioredis client (Redis or Cluster). */
export interface RedisLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  info(section: string): Promise<string>;
  config(op: 'GET', pattern: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

export const SCRIPT: string;

export class PersistenceError extends Error {}

export class RedisFence {
  constructor(client: RedisLike);
  static create(client: RedisLike, options?: { requireAOF?: boolean }): Promise<RedisFence>;
  checkPersistence(options?: { requireAOF?: boolean }): Promise<void>;
  persistence(): Promise<{ aof: boolean; fsync: string }>;
  call(fenceKey: string, token: bigint | number, command?: string, options?: { keys?: string[]; args?: (string | number)[] }): Promise<unknown>;
  admit(fenceKey: string, token: bigint | number): Promise<void>;
  max(fenceKey: string): Promise<bigint>;
}

/** What the fence needs of an ioredis client (Redis or Cluster). */
export interface RedisLike {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  info(section: string): Promise<string>;
  config(op: 'GET', name: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

export const SCRIPT: string;

export class PersistenceError extends Error {}

export class RedisFence {
  constructor(client: RedisLike, options?: { prefix?: string });
  static create(client: RedisLike, options?: { prefix?: string; requireAOF?: boolean }): Promise<RedisFence>;
  readonly prefix: string;
  checkPersistence(options?: { requireAOF?: boolean }): Promise<void>;
  call(key: string, token: bigint | number, command?: (string | number)[], options?: { keys?: string[] }): Promise<unknown>;
  admit(key: string, token: bigint | number): Promise<void>;
  max(key: string): Promise<bigint>;
}

/** A mysql2 connection or pool, promise API or not. */
export interface Queryable {
  query(sql: string, values?: unknown[]): any;
}

/** Where the maxes live: the fence table (default seqd_fence, fence_key, max_token) or a token column of your own table. */
export interface Where {
  table?: string;
  keyColumn?: string;
  tokenColumn?: string;
}

export const KEEP_ROW_MESSAGE: string;
export class NoTransactionError extends Error {}
export class KeyCollationError extends Error {}
export const CREATE_TABLE: string;
export function createTable(db: Queryable, where?: Where): Promise<void>;
export function admit(conn: Queryable, key: string, token: bigint | number, where?: Where): Promise<void>;
export function transaction<T>(
  db: Queryable,
  key: string,
  token: bigint | number,
  fn: (conn: any) => Promise<T> | T,
  where?: Where,
): Promise<T>;

/** A pg.Client, a pg.PoolClient or a pg.Pool: anything with query(); a pool also has connect() and totalCount. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>;
}

/** Where the maxes live: the fence table (default seqd_fence, fence_key, max_token) or a token column of your own table. */
export interface Where {
  table?: string;
  keyColumn?: string;
  tokenColumn?: string;
}

export const KEEP_ROW_MESSAGE: string;
export class NoTransactionError extends Error {}
export const CREATE_TABLE: string;
export function createTable(db: Queryable, where?: Where): Promise<void>;
export function admit(client: Queryable, key: string, token: bigint | number, where?: Where): Promise<void>;
export function transaction<T, C extends Queryable = Queryable>(
  db: C,
  key: string,
  token: bigint | number,
  fn: (client: C) => Promise<T> | T,
  where?: Where,
): Promise<T>;

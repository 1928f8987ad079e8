/** A pg.Client, a pg.PoolClient or a pg.Pool: anything with query(); a pool also has connect() and totalCount. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>;
}

export const CREATE_TABLE: string;
export function createTable(db: Queryable): Promise<void>;
export function admit(client: Queryable, key: string, token: bigint | number): Promise<void>;
export function transaction<T, C extends Queryable = Queryable>(
  db: C,
  key: string,
  token: bigint | number,
  fn: (client: C) => Promise<T> | T,
): Promise<T>;

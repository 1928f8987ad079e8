/** A mysql2 connection or pool, promise API or not. */
export interface Queryable {
  query(sql: string, values?: unknown[]): any;
}

export const CREATE_TABLE: string;
export function createTable(db: Queryable): Promise<void>;
export function admit(conn: Queryable, key: string, token: bigint | number): Promise<void>;
export function transaction<T>(
  db: Queryable,
  key: string,
  token: bigint | number,
  fn: (conn: any) => Promise<T> | T,
): Promise<T>;

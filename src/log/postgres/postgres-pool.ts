/**
 * A node-postgres pool (`new pg.Pool(…)` of the `pg` package) as turnlog's public types name it:
 * what a caller does with one through turnlog (query, end). turnlog's types do not import `pg`'s
 * because those come from `@types/pg`, which a consumer of turnlog does not get (turnlog's
 * own `.d.ts` files must compile with `skipLibCheck: false` and turnlog's dependencies alone). At
 * run time it must be a `pg.Pool` of the copy of `pg` turnlog depends on: anything else is refused
 * with a `TypeError`. Cast it back (`log.pool as pg.Pool`) for the rest of node-postgres's API.
 *
 * @example
 * import pg from "pg";
 * const pool: PostgresPool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const log = await PostgresEventLog.open(pool, { schema: "agents" });
 * const { rows } = await log.pool.query<{ n: string }>("SELECT count(*) AS n FROM agents.events");
 */
export interface PostgresPool {
  /** Runs one statement (`$1`, `$2`, … take `values`) on a connection of the pool. */
  query<Row extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PostgresQueryResult<Row>>;
  /** Closes every connection of the pool. */
  end(): Promise<void>;
}

/** What {@link PostgresPool.query} resolves to: the rows, and how many the statement touched. */
export interface PostgresQueryResult<Row> {
  rows: Row[];
  rowCount: number | null;
}

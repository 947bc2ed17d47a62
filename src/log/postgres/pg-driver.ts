import type pg from "pg";

/** node-postgres, the `pg` package, as `import pg from "pg"` gives it. */
export type PgDriver = typeof pg;

let loading: Promise<PgDriver> | undefined;

/**
 * node-postgres, loaded by the first PostgreSQL operation (an open, a migration) rather than when
 * turnlog is imported: a host on LevelDB, or one that only imports turnlog's types and tools,
 * never loads it (docs/embedding.md, "How the backends load"). Every later call gets the same
 * module, so a `pg.Pool` a host made from its own `import pg from "pg"` is still an instance of
 * the `Pool` turnlog checks against.
 *
 * @example
 * const pg = await loadPg();
 * const pool = new pg.Pool({ connectionString: url });
 */
export function loadPg(): Promise<PgDriver> {
  loading ??= import("pg").then((module) => module.default);
  return loading;
}

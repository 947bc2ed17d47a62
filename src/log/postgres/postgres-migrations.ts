import type pg from "pg";
import { loadPg, type PgDriver } from "./pg-driver.js";
import { LogFormatError } from "../../errors/log-format-error.js";
import { connectionPasswords, poolAddress } from "./connection-string.js";
import type { PostgresPool } from "./postgres-pool.js";
import { logUnavailable } from "./postgres-unavailable.js";

/** One step of the schema: applied once, in order, inside the migration transaction. */
interface Migration {
  version: number;
  name: string;
  /** SQL for schema `s` (already quoted). */
  sql(s: string, lockKey: string, streamLockPrefix: string): string;
}

/**
 * The schema, as versioned steps. A step is never edited once released: a change is a new step.
 *
 * An append is two round trips, each one function call: `begin_append` (lock the stream, read its
 * head, check the expected version, reserve positions) and `write_events` (insert, move the head
 * — refused with SQLSTATE TL409 if it moved anyway — and notify), sent with its COMMIT.
 *
 * Why `reserve_positions` exists: the global order is read with the snapshot-xmin technique (a
 * reader returns only events whose writing transaction is older than every transaction still
 * running). That is sound only if transaction IDs grow with global positions, so a writer takes
 * its transaction ID and its block of positions together, under a lock held for those two steps
 * only (a session-level advisory lock released at once — not until commit, so appends to
 * different streams still commit in parallel). The block is consecutive: one `nextval` and one
 * `setval` under the same lock.
 */
const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "streams, events and the global position",
    sql: (s, lockKey, streamLockPrefix) => `
      CREATE SEQUENCE ${s}.global_position AS bigint MINVALUE 1 START 1;
      CREATE TABLE ${s}.streams (
        stream_id text PRIMARY KEY,
        version bigint NOT NULL CHECK (version >= 0),
        head_hash text NOT NULL
      );
      CREATE TABLE ${s}.events (
        global_position bigint PRIMARY KEY,
        stream_id text NOT NULL,
        stream_position bigint NOT NULL CHECK (stream_position >= 1),
        transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
        event_id text NOT NULL,
        type text NOT NULL,
        recorded_at timestamptz NOT NULL,
        event json NOT NULL,
        UNIQUE (stream_id, stream_position)
      );
      CREATE FUNCTION ${s}.reserve_positions(n integer) RETURNS bigint LANGUAGE plpgsql AS $fn$
      DECLARE
        first_position bigint;
      BEGIN
        PERFORM pg_advisory_lock(${lockKey});
        PERFORM pg_current_xact_id();
        first_position := nextval('${s}.global_position');
        IF n > 1 THEN
          PERFORM setval('${s}.global_position', first_position + n - 1);
        END IF;
        PERFORM pg_advisory_unlock(${lockKey});
        RETURN first_position;
      END
      $fn$;
      CREATE FUNCTION ${s}.begin_append(p_stream text, p_count integer, p_expected text)
      RETURNS TABLE (head_version bigint, head_hash_now text, first_position bigint) LANGUAGE plpgsql AS $fn$
      DECLARE
        v bigint;
        h text;
        holds boolean;
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(${streamLockPrefix} || p_stream, 0));
        SELECT st.version, st.head_hash INTO v, h FROM ${s}.streams st WHERE st.stream_id = p_stream;
        IF NOT FOUND THEN
          v := 0;
          h := '';
        END IF;
        holds := CASE p_expected WHEN 'any' THEN true WHEN 'exists' THEN v >= 1 WHEN 'none' THEN v = 0 ELSE v = p_expected::bigint END;
        IF holds AND p_count > 0 THEN
          RETURN QUERY SELECT v, h, ${s}.reserve_positions(p_count);
        ELSE
          RETURN QUERY SELECT v, h, NULL::bigint;
        END IF;
      END
      $fn$;
      CREATE FUNCTION ${s}.write_events(
        p_stream text, p_prev bigint, p_version bigint, p_hash text, p_positions bigint[], p_stream_positions bigint[],
        p_ids text[], p_types text[], p_recorded timestamptz[], p_events text[], p_channel text
      ) RETURNS void LANGUAGE plpgsql AS $fn$
      DECLARE
        changed integer;
      BEGIN
        INSERT INTO ${s}.events (global_position, stream_id, stream_position, event_id, type, recorded_at, event)
        SELECT g, p_stream, p, i, t, r, e::json FROM unnest(p_positions, p_stream_positions, p_ids, p_types, p_recorded, p_events) AS x(g, p, i, t, r, e);
        IF p_prev = 0 THEN
          INSERT INTO ${s}.streams (stream_id, version, head_hash) VALUES (p_stream, p_version, p_hash) ON CONFLICT (stream_id) DO NOTHING;
        ELSE
          UPDATE ${s}.streams SET version = p_version, head_hash = p_hash WHERE stream_id = p_stream AND version = p_prev;
        END IF;
        GET DIAGNOSTICS changed = ROW_COUNT;
        IF changed <> 1 THEN
          RAISE EXCEPTION 'the head of stream % moved while it was locked', p_stream USING ERRCODE = 'TL409';
        END IF;
        PERFORM pg_notify(p_channel, p_positions[array_upper(p_positions, 1)]::text);
      END
      $fn$;
    `,
  },
  {
    version: 2,
    name: "projection snapshots",
    // Snapshots are a cache beside the log (docs/design.md#5-projections): UNLOGGED, so writing
    // one costs no WAL and never waits on the appends' commits; a server crash empties these
    // tables (nothing half-written is ever read), and a standby has none — both only a slower open.
    sql: (s) => `
      CREATE UNLOGGED TABLE ${s}.snapshot_chunks (
        digest text PRIMARY KEY,
        body bytea NOT NULL
      );
      CREATE UNLOGGED TABLE ${s}.snapshots (
        stream_id text NOT NULL,
        stream_position bigint NOT NULL CHECK (stream_position >= 1),
        body bytea NOT NULL,
        PRIMARY KEY (stream_id, stream_position)
      );
    `,
  },
];

/** The schema version this turnlog writes and reads. */
export const latestSchemaVersion = migrations.length;

/** What `migrate` did: the versions it applied now (empty when the schema was current). */
export interface MigrationReport {
  schema: string;
  applied: Array<{ version: number; name: string }>;
  version: number;
}

/** Validates a schema name: an unquoted-style SQL identifier, so it needs no escaping surprises. */
export function assertSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== "string" || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new TypeError(`a PostgreSQL schema name must be lower-case letters, digits and _ (starting with a letter or _), at most 63 characters; got ${String(schema)}`);
  }
}

/** The advisory-lock key (as SQL) that serialises position reservations of one schema. */
export function reserveLockKey(driver: PgDriver, schema: string): string {
  return `hashtextextended(${driver.escapeLiteral(`turnlog.reserve:${schema}`)}, 0)`;
}

/**
 * Brings `schema` to the latest version, creating it when missing. Idempotent, and safe to run
 * from many processes at once: the whole migration holds a transaction-level advisory lock, so
 * one process applies the steps and the others find them applied. Refuses (LogFormatError) a
 * schema that a newer turnlog has already moved past this version; a server that cannot be
 * reached, a refused login or a missing privilege is a `LogUnavailableError`. `pool` is a
 * `pg.Pool` ({@link PostgresPool}).
 *
 * @example
 * const report = await migratePostgres(new pg.Pool({ connectionString: process.env.DATABASE_URL }), "turnlog");
 */
export async function migratePostgres(pool: PostgresPool, schema: string): Promise<MigrationReport> {
  assertSchemaName(schema);
  if (!(pool instanceof (await loadPg()).Pool)) throw new TypeError("migratePostgres takes a pg.Pool");
  try {
    return await migrateSchema(pool, schema);
  } catch (error) {
    throw logUnavailable(error, { location: `${poolAddress(pool.options)} (schema ${schema})`, passwords: connectionPasswords(pool.options) }, "migrate") ?? error;
  }
}

/** {@link migratePostgres} on a pool known to be node-postgres's, with the driver's errors as they are (`PostgresEventLog.open` names them itself). */
export async function migrateSchema(pool: pg.Pool, schema: string): Promise<MigrationReport> {
  assertSchemaName(schema);
  const driver = await loadPg();
  const s = driver.escapeIdentifier(schema);
  const client = await pool.connect();
  let failed = false;
  // A connection the server ends emits "error" on its client even while a query runs; with no
  // listener, node-postgres would crash the process. The query under way rejects anyway.
  const onBroken = () => {
    failed = true;
  };
  client.on("error", onBroken);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`turnlog.migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${s}.schema_migrations ORDER BY version`);
    const current = rows.reduce((highest, row) => Math.max(highest, Number(row.version)), 0);
    if (current > latestSchemaVersion) {
      throw new LogFormatError(`PostgreSQL schema ${schema}`, `schema version ${current}`, `schema version ${latestSchemaVersion} or older`);
    }
    const applied: Array<{ version: number; name: string }> = [];
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await client.query(migration.sql(s, reserveLockKey(driver, schema), driver.escapeLiteral(`turnlog.stream:${schema}:`)));
      await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      applied.push({ version: migration.version, name: migration.name });
    }
    await client.query("COMMIT");
    return { schema, applied, version: latestSchemaVersion };
  } catch (error) {
    failed = true;
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.off("error", onBroken);
    client.release(failed);
  }
}

/**
 * Refuses (LogFormatError) a schema that is missing or not at this turnlog's version, changing
 * nothing: what `migrate: false` opens with. A missing schema is `found: "no turnlog tables"`.
 */
export async function assertCurrentSchema(pool: pg.Pool, schema: string): Promise<void> {
  const driver = await loadPg();
  const { rows } = await pool.query<{ version: number | null }>(
    `SELECT (SELECT max(version) FROM ${driver.escapeIdentifier(schema)}.schema_migrations) AS version WHERE to_regclass($1) IS NOT NULL`,
    [`${schema}.schema_migrations`],
  ).catch((error: unknown) => {
    // Only a missing schema or table means "no turnlog tables"; a refused connection or a failed
    // login must reach the caller as what it is.
    const code = (error as { code?: unknown }).code;
    if (code === "42P01" || code === "3F000") return { rows: [] as Array<{ version: number | null }> };
    throw error;
  });
  const version = rows[0]?.version ?? 0;
  if (version !== latestSchemaVersion) {
    throw new LogFormatError(`PostgreSQL schema ${schema}`, version === 0 ? "no turnlog tables" : `schema version ${version}`, `schema version ${latestSchemaVersion} (run "turnlog migrate")`);
  }
}

import type { Clock, EventLog } from "./event-log.js";
import { LevelEventLog } from "./level/level-event-log.js";
import { isPostgresUrl, urlWithoutPassword } from "./postgres/connection-string.js";
import { PostgresEventLog } from "./postgres/postgres-event-log.js";

/** The schema a PostgreSQL log lives in when none is named (`--schema`, `$TURNLOG_SCHEMA`). */
export const defaultPostgresSchema = "turnlog";

/**
 * Where a log is: a LevelDB directory, or a schema of a PostgreSQL database. The URL is a plain
 * libpq URL (libpq rejects parameters it does not know, so the schema is given apart); its
 * password, if it holds one, is never printed (see {@link describeLogLocation}).
 *
 * @example
 * const here: LogLocation = { dir: ".turnlog" };
 * const shared: LogLocation = { url: "postgres://turnlog@db.internal/agents", schema: "turnlog" };
 */
export type LogLocation = { dir: string } | { url: string; schema?: string };

/** A location whose PostgreSQL schema is filled in. */
export type ResolvedLogLocation = { dir: string } | { url: string; schema: string };

/**
 * The location a `--log` value (or `$TURNLOG_LOG`) names: a `postgres://` or `postgresql://` URL
 * is a database, anything else a directory.
 *
 * @example
 * parseLogLocation("postgres://db/agents", "team_a"); // { url: "postgres://db/agents", schema: "team_a" }
 * parseLogLocation("./.turnlog");                      // { dir: "./.turnlog" }
 */
export function parseLogLocation(value: string, schema: string = defaultPostgresSchema): ResolvedLogLocation {
  return isPostgresUrl(value) ? { url: value, schema } : { dir: value };
}

/** The schema named by `$TURNLOG_SCHEMA`, else `turnlog`. */
export function schemaFromEnvironment(env: NodeJS.ProcessEnv = process.env): string {
  const schema = env.TURNLOG_SCHEMA;
  return schema !== undefined && schema !== "" ? schema : defaultPostgresSchema;
}

/**
 * The log the environment names, if any: `$TURNLOG_LOG` (a directory or a PostgreSQL URL, with
 * `$TURNLOG_SCHEMA`), else `$TURNLOG_DIR`.
 *
 * @example
 * logLocationFromEnvironment({ TURNLOG_LOG: "postgres://db/agents" }); // { url: "postgres://db/agents", schema: "turnlog" }
 */
export function logLocationFromEnvironment(env: NodeJS.ProcessEnv = process.env): ResolvedLogLocation | undefined {
  const log = env.TURNLOG_LOG;
  if (log !== undefined && log !== "") return parseLogLocation(log, schemaFromEnvironment(env));
  const dir = env.TURNLOG_DIR;
  return dir !== undefined && dir !== "" ? { dir } : undefined;
}

/** Whether a location is a PostgreSQL database (and not a directory). */
export function isPostgresLocation(location: LogLocation): location is { url: string; schema?: string } {
  return "url" in location;
}

/**
 * A location for messages: the directory, or the URL without its password and the schema.
 *
 * @example
 * describeLogLocation({ url: "postgres://ada:pw@db/agents", schema: "turnlog" }); // "postgres://ada@db/agents (schema turnlog)"
 */
export function describeLogLocation(location: LogLocation): string {
  if (!isPostgresLocation(location)) return location.dir;
  return `${urlWithoutPassword(location.url)} (schema ${location.schema ?? defaultPostgresSchema})`;
}

/** How {@link openLogLocation} opens a log. */
export interface OpenLogLocationOptions {
  /** LevelDB: `sync` (default) or `relaxed`. */
  durability?: "sync" | "relaxed";
  clock?: Clock;
  /**
   * PostgreSQL: bring the schema to this turnlog's version (creating it) on open. Default true;
   * `false` refuses a missing or older schema (`LogFormatError`) and creates nothing.
   */
  migrate?: boolean;
  /** PostgreSQL: connections in the pool. Default 10. */
  poolSize?: number;
}

/**
 * Opens the log at a location: a {@link LevelEventLog} for a directory, a
 * {@link PostgresEventLog} for a URL. The caller closes it.
 *
 * @example
 * const log = await openLogLocation(logLocationFromEnvironment() ?? { dir: ".turnlog" });
 */
export async function openLogLocation(location: LogLocation, options: OpenLogLocationOptions = {}): Promise<EventLog & { close(): Promise<void> }> {
  if (isPostgresLocation(location)) {
    return PostgresEventLog.open(location.url, {
      schema: location.schema ?? defaultPostgresSchema,
      ...(options.migrate !== undefined ? { migrate: options.migrate } : {}),
      ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
    });
  }
  return LevelEventLog.open(location.dir, { durability: options.durability ?? "sync", ...(options.clock !== undefined ? { clock: options.clock } : {}) });
}

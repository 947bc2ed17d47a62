import { LevelEventLog, PostgresEventLog } from "../../src/index.js";
import type { EventLog } from "../../src/index.js";

/**
 * Opens the log a host child is given on its command line: `postgres://…#<schema>` (a small pool,
 * polling as NOTIFY's fallback) or a LevelDB directory, which the child then holds.
 *
 * @example
 * const log = await openEventLogAt(process.argv[2]!); // "postgres://turnlog@127.0.0.1:5432/postgres#t1" or "/tmp/log"
 */
export function openEventLogAt(where: string, level: { durability?: "sync" | "relaxed" } = {}): Promise<EventLog> {
  if (!where.startsWith("postgres://") && !where.startsWith("postgresql://")) return LevelEventLog.open(where, level);
  const hash = where.indexOf("#");
  return PostgresEventLog.open(where.slice(0, hash), { schema: where.slice(hash + 1), poolSize: 4, pollIntervalMs: 200 });
}

import { existsSync } from "node:fs";
import path from "node:path";
import { LogNotFoundError } from "../errors/log-not-found-error.js";
import type { Clock } from "../log/event-log.js";
import { LevelEventLog } from "../log/level-event-log.js";
import { readerOver, type LogReader, type LogReaderOptions } from "./log-reader.js";

/** Where {@link openLog} opens a log, and how it reads it. */
export interface OpenLogOptions extends LogReaderOptions {
  /** The LevelDB log directory (a runtime's `.turnlog`, `$TURNLOG_DIR`). */
  dir: string;
  /** How `fork` (the one method that appends) is made durable. Default `"sync"`. */
  durability?: "sync" | "relaxed";
  /** Where `recordedAt` of a fork's events comes from. Default: the system clock. */
  clock?: Clock;
  /** Create an empty log when `dir` holds none. Default false: a missing log throws `LogNotFoundError`. */
  create?: boolean;
}

/**
 * Opens the LevelDB log at a directory for reading, with no provider and no runtime: the
 * returned {@link LogReader} owns the log, and its `close()` closes it (and releases the
 * directory's lock, so a runtime can open it afterwards). One process owns a log directory at a
 * time: a log a running runtime holds throws `LogLockedError` — read that one through
 * `createLogReader(runtime.log)` instead.
 *
 * @example
 * const reader = await openLog({ dir: ".turnlog" });
 * try {
 *   for (const session of await reader.sessions()) console.log(session.id, session.status);
 * } finally {
 *   await reader.close();
 * }
 */
export async function openLog(options: OpenLogOptions | string): Promise<LogReader> {
  const { dir, durability, clock, create, ...readerOptions } = typeof options === "string" ? { dir: options } : options;
  if (typeof dir !== "string" || dir === "") throw new TypeError("openLog needs the log directory: openLog({ dir })");
  // LevelDB creates a missing directory on open; a reader must not leave an empty log behind a typo.
  // LevelDB writes CURRENT when it creates a database and never removes it.
  if (create !== true && !existsSync(path.join(dir, "CURRENT"))) throw new LogNotFoundError(dir);
  const log = await LevelEventLog.open(dir, { durability: durability ?? "sync", ...(clock !== undefined ? { clock } : {}) });
  return readerOver(log, readerOptions, () => log.close());
}

import { existsSync } from "node:fs";
import path from "node:path";
import { LogFormatError } from "../errors/log-format-error.js";
import { LogNotFoundError } from "../errors/log-not-found-error.js";
import type { Clock } from "../log/event-log.js";
import { describeLogLocation, openLogLocation, type LogLocation } from "../log/log-location.js";
import { answerChannelOf } from "../log/level/owner-channel.js";
import type { ApproveAnswer, DenyAnswer } from "./held-call-answer.js";
import { readerOver, type LogReader, type LogReaderOptions } from "./log-reader.js";

/** How {@link openLog} opens a log and reads it. */
interface OpenLogSettings extends LogReaderOptions {
  /** How the methods that append (`fork`, `approve`, `deny`) are made durable on LevelDB. Default `"sync"`. */
  durability?: "sync" | "relaxed";
  /** Where `recordedAt` of what the reader appends (a fork, an answer) comes from. Default: the system clock. */
  clock?: Clock;
  /**
   * Create an empty log when there is none (LevelDB: the directory; PostgreSQL: the schema and its
   * tables). Default false: a missing log throws `LogNotFoundError`, and nothing is created.
   */
  create?: boolean;
}

/**
 * Where {@link openLog} opens a log, and how it reads it: `{ dir }` for a LevelDB log directory
 * (a runtime's `.turnlog`, `$TURNLOG_DIR`), or `{ url, schema? }` for a PostgreSQL log (schema
 * default `turnlog`).
 */
export type OpenLogOptions = OpenLogSettings & ({ dir: string; url?: never; schema?: never } | { url: string; schema?: string; dir?: never });

/**
 * Opens a log for reading, with no provider and no runtime: the returned {@link LogReader} owns
 * the log, and its `close()` closes it.
 *
 * - A LevelDB directory (`{ dir }`, or the directory as a string): one process owns it at a time,
 *   so a log a running runtime holds throws `LogLockedError` — read that one through
 *   `createLogReader(runtime.log)` instead, and answer its held calls with `answerHeldCall`;
 *   `close()` releases the directory's lock. While the reader holds the log, it records the
 *   answers other processes hand it through the log's owner channel.
 * - A PostgreSQL schema (`{ url, schema? }`): any number of processes read and write it at once,
 *   so a reader opens it while hosts run. Without `create`, the schema is neither created nor
 *   migrated: one without turnlog's tables throws `LogNotFoundError`, one at another version
 *   `LogFormatError` ("turnlog migrate" brings it up to date).
 *
 * @example
 * const reader = await openLog({ dir: ".turnlog" });
 * // or: await openLog({ url: "postgres://turnlog@db.internal/agents", schema: "turnlog" }); // password from PGPASSWORD or ~/.pgpass
 * try {
 *   for (const session of await reader.sessions()) console.log(session.id, session.status);
 * } finally {
 *   await reader.close();
 * }
 */
export async function openLog(options: OpenLogOptions | string): Promise<LogReader> {
  const settings: OpenLogOptions = typeof options === "string" ? { dir: options } : options;
  const { dir, url, schema, durability, clock, create, ...readerOptions } = settings;
  let location: LogLocation;
  if (url !== undefined) {
    if (typeof url !== "string" || url === "") throw new TypeError("openLog needs a postgres:// URL: openLog({ url, schema? })");
    location = schema !== undefined ? { url, schema } : { url };
  } else {
    if (typeof dir !== "string" || dir === "") throw new TypeError("openLog needs the log directory or a PostgreSQL URL: openLog({ dir }) or openLog({ url, schema? })");
    // LevelDB creates a missing directory on open; a reader must not leave an empty log behind a typo.
    // LevelDB writes CURRENT when it creates a database and never removes it.
    if (create !== true && !existsSync(path.join(dir, "CURRENT"))) throw new LogNotFoundError(dir);
    location = { dir };
  }
  let log;
  try {
    log = await openLogLocation(location, { durability: durability ?? "sync", migrate: create === true, ...(clock !== undefined ? { clock } : {}) });
  } catch (error) {
    // The lead's PostgresEventLog says "no turnlog tables" for a schema that holds no log.
    if (url !== undefined && LogFormatError.isInstance(error) && error.found === "no turnlog tables") throw new LogNotFoundError(describeLogLocation(location));
    throw error;
  }
  const opened = log;
  let stopAnswering: () => void = () => undefined;
  const reader = readerOver(opened, readerOptions, async () => {
    stopAnswering();
    await opened.close();
  });
  // A LevelDB log this reader holds records what other processes answer through its owner channel (docs/log.md, "The owner channel").
  stopAnswering = answerChannelOf(opened)?.serveAnswers((request) => {
    const answer = request.answer;
    if (answer.decision === "approve") return reader.approve(request.sessionId, request.callId, answer as unknown as ApproveAnswer);
    if (answer.decision === "deny") return reader.deny(request.sessionId, request.callId, answer as unknown as DenyAnswer);
    return Promise.reject(new TypeError('an answer\'s decision is "approve" or "deny"'));
  }) ?? stopAnswering;
  return reader;
}

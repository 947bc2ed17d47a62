import { existsSync } from "node:fs";
import path from "node:path";
import { LogLockedError } from "../errors/log-locked-error.js";
import { LevelEventLog } from "../log/level-event-log.js";
import type { Clock } from "../log/event-log.js";
import { CliError } from "./cli-error.js";

/** The log directory when `--dir` is not given: `$TURNLOG_DIR`, else `./.turnlog`. */
export function defaultLogDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.TURNLOG_DIR;
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : "./.turnlog";
}

/** Whether `directory` is the one the CLI would pick without `--dir`, so a printed command can leave it out. */
export function isDefaultLogDirectory(directory: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return path.resolve(directory) === path.resolve(defaultLogDirectory(env));
}

/** ` --dir <directory>` for a printed command, or "" when the directory is the default. */
export function dirFlag(directory: string, env: NodeJS.ProcessEnv = process.env): string {
  return isDefaultLogDirectory(directory, env) ? "" : ` --dir ${shellQuote(directory)}`;
}

/**
 * `directory` as a shell word: bare when it is made of safe characters, single-quoted otherwise,
 * so a printed command can be pasted back as it is.
 */
export function shellQuote(word: string): string {
  if (/^[\w./@%+=:,-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * Whether `directory` holds a LevelDB log. Checked before opening because
 * `LevelEventLog.open` creates a missing directory, and a read command must never leave an empty
 * log behind a typo.
 */
export function logExists(directory: string): boolean {
  // LevelDB writes CURRENT when it creates a database and never removes it.
  return existsSync(path.join(directory, "CURRENT"));
}

/** How {@link withLog} opens a log. */
export interface OpenLogOptions {
  /** Create the log when it does not exist (the demo); read commands leave this off. */
  create?: boolean;
  durability?: "sync" | "relaxed";
  clock?: Clock;
}

/**
 * Opens the log in `directory`, runs `work` with it, and closes it whatever happens, so the
 * LevelDB lock is released even when `work` throws. A missing log and a log held by another
 * process become one-line {@link CliError}s.
 *
 * @example
 * const sessions = await withLog("./.turnlog", {}, (log) => log.listStreams());
 */
export async function withLog<T>(directory: string, options: OpenLogOptions, work: (log: LevelEventLog) => Promise<T>): Promise<T> {
  if (!options.create && !logExists(directory)) {
    throw new CliError(`no log at ${directory} — run "npx turnlog demo" first or pass --dir`);
  }
  let log: LevelEventLog;
  try {
    log = await LevelEventLog.open(directory, {
      durability: options.durability ?? "sync",
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
    });
  } catch (error) {
    if (LogLockedError.isInstance(error)) {
      throw new CliError(`the log at ${directory} is in use by another process — one process owns a log at a time; try again when it is done`, { cause: error });
    }
    throw new CliError(`cannot open the log at ${directory}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  try {
    return await work(log);
  } finally {
    await log.close();
  }
}

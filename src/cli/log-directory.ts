import { existsSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { LogLockedError } from "../errors/log-locked-error.js";
import { LevelEventLog } from "../log/level-event-log.js";
import type { Clock } from "../log/event-log.js";
import { CliError } from "./cli-error.js";
import { defaultRunLogDirectory } from "../log/seal/user-directories.js";

function fromEnvironment(env: NodeJS.ProcessEnv): string | undefined {
  const fromEnv = env.TURNLOG_DIR;
  return fromEnv !== undefined && fromEnv !== "" ? fromEnv : undefined;
}

/**
 * The log directory a command reads (and `approve`, `deny`, `resume`, `fork` append to) when
 * `--dir` is not given, in this order (docs/cli-run.md):
 * 1. `$TURNLOG_DIR`;
 * 2. the log `turnlog run` keeps for this workspace (the current directory) in the user's state
 *    directory, when it exists — before `./.turnlog`, so a log planted in the workspace cannot
 *    stand in for the real one;
 * 3. `./.turnlog` (the demo's, and a host's default).
 *
 * @example
 * defaultLogDirectory(process.env); // "/home/ada/.local/state/turnlog/logs/app-3f2a9c0d1e4b"
 */
export function defaultLogDirectory(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const fromEnv = fromEnvironment(env);
  if (fromEnv !== undefined) return fromEnv;
  const runLog = defaultRunLogDirectory(cwd, env);
  return logExists(runLog) ? runLog : "./.turnlog";
}

/**
 * Where `turnlog run` logs when `--dir` is not given: `$TURNLOG_DIR`, else the workspace's log in
 * the user's state directory ({@link defaultRunLogDirectory}) — never inside the workspace, where
 * the model's commands could reach it.
 */
export function runLogDirectory(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  return fromEnvironment(env) ?? defaultRunLogDirectory(cwd, env);
}

/** Where `turnlog demo` records when `--dir` is not given: `$TURNLOG_DIR`, else `./.turnlog`. */
export function demoLogDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return fromEnvironment(env) ?? "./.turnlog";
}

/** Whether `directory` is the one the CLI would read without `--dir`, so a printed command can leave it out. */
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
  /**
   * The command only reads. When another process holds the log (a host, a `turnlog run` in
   * another terminal), read a copy taken now instead of failing, and say so through `notice`.
   */
  readOnly?: { notice(line: string): void };
}

/**
 * The options of a command that only reads: a log in use by another process is read from a copy,
 * with a note on stderr (stdout stays the command's output, JSON included).
 *
 * @example
 * const events = await withLog(options.dir, readOnly(context.io), (log) => log.readStream("session-s1"));
 */
export function readOnly(io: { stderr: { write(text: string): unknown } }): OpenLogOptions {
  return { readOnly: { notice: (line) => io.stderr.write(`${line}\n`) } };
}

/** How many times a copy of a log in use is attempted: the owner may compact files away mid-copy. */
const copyAttempts = 3;

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
      if (options.readOnly !== undefined) return withCopyOfLog(directory, options.readOnly, work, error);
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

/**
 * Runs `work` on a copy of the log in `directory`, taken now, whether or not another process
 * holds it: the log's own lock is never taken, so no writer is ever kept waiting (`turnlog events
 * --follow` reads this way). A missing log is a one-line {@link CliError}.
 */
export async function withCopyOfLogDirectory<T>(directory: string, work: (log: LevelEventLog) => Promise<T>): Promise<T> {
  if (!logExists(directory)) throw new CliError(`no log at ${directory} — run "npx turnlog demo" first or pass --dir`);
  return withCopyOfLog(directory, undefined, work, undefined);
}

/**
 * Runs a read-only command on a copy of a log another process holds. LevelDB lets one process open
 * a directory, and has no read-only mode, so the files are copied (without the LOCK file) and the
 * copy is opened: its SST files never change once written, and its write-ahead log is checksummed
 * per batch, so a torn last batch is dropped — every append whole or absent, never half. A copy
 * caught between files of a compaction fails to open and is taken again. The copy is removed
 * afterwards.
 */
async function withCopyOfLog<T>(directory: string, readOnly: { notice(line: string): void } | undefined, work: (log: LevelEventLog) => Promise<T>, locked: unknown): Promise<T> {
  const copy = await mkdtemp(path.join(tmpdir(), "turnlog-read-"));
  try {
    let log: LevelEventLog | undefined;
    for (let attempt = 1; log === undefined; attempt += 1) {
      try {
        await rm(copy, { recursive: true, force: true });
        await cp(directory, copy, { recursive: true, filter: (source) => path.basename(source) !== "LOCK" });
        log = await LevelEventLog.open(copy, { durability: "relaxed" });
      } catch (error) {
        if (attempt >= copyAttempts) {
          if (readOnly === undefined) throw new CliError(`copying the log at ${directory} to read it failed (${error instanceof Error ? error.message : String(error)})`, { cause: error });
          throw new CliError(`the log at ${directory} is in use by another process, and copying it to read failed (${error instanceof Error ? error.message : String(error)}); try again when it is done`, { cause: locked });
        }
      }
    }
    readOnly?.notice(`turnlog: the log at ${directory} is in use by another process; reading a copy taken just now`);
    try {
      return await work(log);
    } finally {
      await log.close();
    }
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

import { existsSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { LogFormatError } from "../errors/log-format-error.js";
import { LogLockedError } from "../errors/log-locked-error.js";
import { LogUnavailableError } from "../errors/log-unavailable-error.js";
import { LevelEventLog } from "../log/level/level-event-log.js";
import { ownerFileName } from "../log/level/owner-channel.js";
import type { Clock, EventLog } from "../log/event-log.js";
import {
  defaultPostgresSchema,
  describeLogLocation,
  isPostgresLocation,
  logLocationFromEnvironment,
  type ResolvedLogLocation,
} from "../log/log-location.js";
import { urlHasPassword, urlPasswords, urlWithoutPassword } from "../log/postgres/connection-string.js";
import { PostgresEventLog } from "../log/postgres/postgres-event-log.js";
import { CliError } from "../errors/cli-error.js";
import { defaultRunLogDirectory, sealKeyDirectory } from "../util/state-directories.js";
import { SealedLogRecord } from "../log/seal/sealed-log-record.js";
import { SealWitness } from "../log/seal/seal-witness.js";
import { describeThrown } from "../util/json-value.js";

/**
 * The log a command reads (and `approve`, `deny`, `resume`, `fork` append to) when neither `--log`
 * nor `--dir` is given, in this order (docs/cli-run.md):
 * 1. `$TURNLOG_LOG` (a directory or a `postgres://` URL, with `$TURNLOG_SCHEMA`), then `$TURNLOG_DIR`;
 * 2. the log `turnlog run` keeps for this workspace (the current directory) in the user's state
 *    directory, when it exists — before `./.turnlog`, so a log planted in the workspace cannot
 *    stand in for the real one;
 * 3. `./.turnlog` (the demo's, and a host's default).
 *
 * @example
 * defaultLogLocation(process.env); // { dir: "/home/ada/.local/state/turnlog/logs/app-3f2a9c0d1e4b" }
 */
export function defaultLogLocation(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): ResolvedLogLocation {
  const fromEnv = logLocationFromEnvironment(env);
  if (fromEnv !== undefined) return fromEnv;
  const runLog = defaultRunLogDirectory(cwd, env);
  return { dir: logExists(runLog) ? runLog : "./.turnlog" };
}

/**
 * The log `turnlog verify` checks when neither `--log` nor `--dir` is given: as
 * {@link defaultLogLocation}, but a log that is gone is still looked for where it was — this
 * workspace's run log when the seal key's records or witness say it was sealed, even if the
 * directory was deleted, then `./.turnlog` likewise, and else the run log, where `turnlog run`
 * writes. So a deleted run log is reported as such (`emptied-log`), never silently replaced by
 * whatever `./.turnlog` holds.
 *
 * @example
 * verifyLogLocation(process.env); // { dir: "/home/ada/.local/state/turnlog/logs/app-3f2a9c0d1e4b" }
 */
export function verifyLogLocation(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): ResolvedLogLocation {
  const fromEnv = logLocationFromEnvironment(env);
  if (fromEnv !== undefined) return fromEnv;
  const runLog = defaultRunLogDirectory(cwd, env);
  const keyDirectory = sealKeyDirectory(env);
  const wasSealed = (directory: string) =>
    existsSync(SealedLogRecord.forLogLocation({ dir: directory }, { directory: keyDirectory }).file) || existsSync(SealWitness.forLogDirectory(directory, { directory: keyDirectory }).file);
  if (logExists(runLog) || wasSealed(runLog)) return { dir: runLog };
  const demoLog = path.resolve(cwd, ".turnlog");
  if (logExists(demoLog) || wasSealed(demoLog)) return { dir: "./.turnlog" };
  return { dir: runLog };
}

/**
 * Where `turnlog run` logs when neither `--log` nor `--dir` is given: `$TURNLOG_LOG`, `$TURNLOG_DIR`,
 * else the workspace's log in the user's state directory ({@link defaultRunLogDirectory}) — never
 * inside the workspace, where the model's commands could reach it.
 */
export function runLogLocation(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): ResolvedLogLocation {
  return logLocationFromEnvironment(env) ?? { dir: defaultRunLogDirectory(cwd, env) };
}

/** Where `turnlog demo` records when neither `--log` nor `--dir` is given: `$TURNLOG_LOG`, `$TURNLOG_DIR`, else `./.turnlog`. */
export function demoLogLocation(env: NodeJS.ProcessEnv = process.env): ResolvedLogLocation {
  return logLocationFromEnvironment(env) ?? { dir: "./.turnlog" };
}

/** Whether `location` is the one the CLI would use without `--log`, so a printed command can leave it out. */
export function isDefaultLogLocation(location: ResolvedLogLocation, env: NodeJS.ProcessEnv = process.env): boolean {
  const fallback = defaultLogLocation(env);
  if (isPostgresLocation(location) || isPostgresLocation(fallback)) {
    return isPostgresLocation(location) && isPostgresLocation(fallback) && location.url === fallback.url && location.schema === fallback.schema;
  }
  return path.resolve(location.dir) === path.resolve(fallback.dir);
}

/**
 * The flags that name `location` in a printed command, or "" when it is the default: ` --dir
 * <directory>`, or ` --log <url>` (and ` --schema <name>` for another than `turnlog`) with the
 * URL's password left out — the command line is shown and pasted, and libpq reads the password
 * from `PGPASSWORD` or `~/.pgpass` ({@link passwordNote} says so).
 *
 * @example
 * logFlag({ url: "postgres://ada:pw@db/agents", schema: "turnlog" }, {}); // " --log postgres://ada@db/agents"
 */
export function logFlag(location: ResolvedLogLocation, env: NodeJS.ProcessEnv = process.env): string {
  if (isDefaultLogLocation(location, env)) return "";
  if (!isPostgresLocation(location)) return ` --dir ${shellQuote(location.dir)}`;
  const schema = location.schema === defaultPostgresSchema ? "" : ` --schema ${shellQuote(location.schema)}`;
  return ` --log ${shellQuote(urlWithoutPassword(location.url))}${schema}`;
}

/**
 * The note printed under commands whose `--log` URL lost its password, or undefined when there is
 * none to explain.
 */
export function passwordNote(location: ResolvedLogLocation, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!isPostgresLocation(location) || !urlHasPassword(location.url) || logFlag(location, env) === "") return undefined;
  return "(the password is left out of --log: set PGPASSWORD or use ~/.pgpass, which libpq reads)";
}

/** The location as messages name it: the directory, or the URL without its password and the schema. */
export function describeLocation(location: ResolvedLogLocation): string {
  return describeLogLocation(location);
}

/**
 * `text` with every password of `location` replaced by `***`: for a database's own error message,
 * which turnlog does not write and so cannot vouch for.
 */
export function withoutPasswords(text: string, location: ResolvedLogLocation): string {
  if (!isPostgresLocation(location)) return text;
  let scrubbed = text;
  for (const password of urlPasswords(location.url)) scrubbed = scrubbed.split(password).join("***");
  return scrubbed;
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
 * Opens the log at `location`, runs `work` with it, and closes it whatever happens, so the
 * LevelDB lock is released (or the PostgreSQL pool ended) even when `work` throws. A missing log,
 * a log held by another process and a database that cannot be reached become one-line
 * {@link CliError}s, never with a password in them.
 *
 * On PostgreSQL many processes share the log: a read command opens it directly, while hosts
 * write, and nothing is copied. Without `create` the schema is not created or migrated (a typo
 * in `--schema` leaves nothing behind).
 *
 * @example
 * const sessions = await withLog({ dir: "./.turnlog" }, {}, (log) => log.listStreams());
 */
export async function withLog<T>(location: ResolvedLogLocation, options: OpenLogOptions, work: (log: EventLog) => Promise<T>): Promise<T> {
  if (isPostgresLocation(location)) return withPostgresLog(location, options, work);
  const directory = location.dir;
  if (!options.create && !logExists(directory)) {
    throw new CliError(`no log at ${directory} — run "npx turnlog demo" first or pass --log`);
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
      throw new CliError(`the log at ${directory} is in use by another process — one process owns a log directory at a time (PostgreSQL, --log postgres://…, lets many share one); try again when it is done`, { cause: error });
    }
    throw new CliError(`cannot open the log at ${directory}: ${describeThrown(error)}`, { cause: error });
  }
  try {
    return await work(log);
  } finally {
    await log.close();
  }
}

/** Whether `error` (or the error a {@link CliError} wraps) says that a PostgreSQL schema holds no turnlog tables. */
export function isMissingPostgresLog(error: unknown): boolean {
  const cause = error instanceof CliError ? error.cause : error;
  return LogFormatError.isInstance(cause) && cause.found === "no turnlog tables";
}

/** Connections a CLI command needs: a few reads at a time, and a listener for `--follow`. */
const cliPoolSize = 4;

async function withPostgresLog<T>(location: { url: string; schema: string }, options: OpenLogOptions, work: (log: EventLog) => Promise<T>): Promise<T> {
  const where = describeLogLocation(location);
  let log: PostgresEventLog;
  try {
    log = await PostgresEventLog.open(location.url, {
      schema: location.schema,
      poolSize: cliPoolSize,
      migrate: options.create === true,
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
    });
  } catch (error) {
    throw postgresOpenError(error, location, where);
  }
  try {
    return await work(log);
  } finally {
    await log.close();
  }
}

/**
 * The one line for a PostgreSQL log that did not open: a schema without turnlog's tables is "no
 * log" (as a missing directory is); a server that cannot be reached or used is the
 * `LogUnavailableError`'s message with its code; anything else names the location and the
 * database's reason. Every one is scrubbed of the password.
 */
export function postgresOpenError(error: unknown, location: { url: string; schema: string }, where: string = describeLogLocation(location)): CliError {
  if (isMissingPostgresLog(error)) {
    return new CliError(`no log at ${where} — "npx turnlog migrate --log …" creates its tables, and a host or "turnlog run" writes to it`, { cause: error });
  }
  if (LogUnavailableError.isInstance(error)) return new CliError(`${withoutPasswords(error.message, location)} [${error.code}]`, { cause: error });
  if (error instanceof TypeError) return new CliError(withoutPasswords(error.message, location), { exitCode: 2, cause: error });
  const reason = error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
  return new CliError(`cannot open the log at ${where}: ${withoutPasswords(reason, location)}`, { cause: error });
}

/**
 * Runs `work` on a copy of the log in `directory`, taken now, whether or not another process
 * holds it: the log's own lock is never taken, so no writer is ever kept waiting (`turnlog events
 * --follow` reads this way). A missing log is a one-line {@link CliError}.
 */
export async function withCopyOfLogDirectory<T>(directory: string, work: (log: LevelEventLog) => Promise<T>): Promise<T> {
  if (!logExists(directory)) throw new CliError(`no log at ${directory} — run "npx turnlog demo" first or pass --log`);
  return withCopyOfLog(directory, undefined, work, undefined);
}

/**
 * Runs `work` on a copy of a damaged log directory, opened with `salvage` (LevelDB drops what it
 * cannot read of the copy): how `turnlog verify` finds the first bad position of a log whose files
 * are damaged, without changing them. The copy is removed afterwards.
 */
export async function withSalvagedCopyOfLogDirectory<T>(directory: string, work: (log: LevelEventLog) => Promise<T>): Promise<T> {
  const copy = await mkdtemp(path.join(tmpdir(), "turnlog-salvage-"));
  try {
    await cp(directory, copy, { recursive: true, filter: (source) => path.basename(source) !== "LOCK" && path.basename(source) !== ownerFileName && source !== path.join(directory, "snapshots") });
    const log = await LevelEventLog.open(copy, { durability: "relaxed", salvage: true });
    try {
      return await work(log);
    } finally {
      await log.close();
    }
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

/** A copy of a log directory, opened: {@link openCopyOfLogDirectory}. */
export interface LogDirectoryCopy {
  /** The copy, opened (its lock is the copy's own). */
  readonly log: LevelEventLog;
  /** Closes the copy and removes its files. */
  close(): Promise<void>;
}

/**
 * Copies the log in `directory` (without its LOCK file) to a temporary directory and opens the
 * copy, never taking the log's own lock: `withCopyOfLogDirectory` for one piece of work, and
 * `turnlog view`, which keeps a copy until the log changes. A copy caught between files of a
 * compaction fails to open and is taken again (up to three times), then the last error is thrown.
 *
 * @example
 * const copy = await openCopyOfLogDirectory(".turnlog");
 * try { console.log(await copy.log.listStreams()); } finally { await copy.close(); }
 */
export async function openCopyOfLogDirectory(directory: string): Promise<LogDirectoryCopy> {
  const copy = await mkdtemp(path.join(tmpdir(), "turnlog-read-"));
  for (let attempt = 1; ; attempt += 1) {
    try {
      await rm(copy, { recursive: true, force: true });
      // The owner's lock and owner channel stay the owner's: a copy takes answers from nobody.
      await cp(directory, copy, { recursive: true, filter: (source) => path.basename(source) !== "LOCK" && path.basename(source) !== ownerFileName && source !== path.join(directory, "snapshots") });
      const log = await LevelEventLog.open(copy, { durability: "relaxed", answers: false });
      return {
        log,
        async close() {
          try {
            await log.close();
          } finally {
            await rm(copy, { recursive: true, force: true });
          }
        },
      };
    } catch (error) {
      if (attempt >= copyAttempts) {
        await rm(copy, { recursive: true, force: true });
        throw error;
      }
    }
  }
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
  let copy: LogDirectoryCopy;
  try {
    copy = await openCopyOfLogDirectory(directory);
  } catch (error) {
    if (readOnly === undefined) throw new CliError(`copying the log at ${directory} to read it failed (${describeThrown(error)})`, { cause: error });
    throw new CliError(`the log at ${directory} is in use by another process, and copying it to read failed (${describeThrown(error)}); try again when it is done`, { cause: locked });
  }
  readOnly?.notice(`turnlog: the log at ${directory} is in use by another process; reading a copy taken just now`);
  try {
    return await work(copy.log);
  } finally {
    await copy.close();
  }
}

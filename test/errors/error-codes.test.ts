import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Level } from "level";
import { afterEach, describe, expect, it } from "vitest";
import {
  createRuntime,
  errorCodes,
  LevelEventLog,
  loadOrCreateSealKey,
  loadSealKey,
  LogCorruptedError,
  LogFormatError,
  LogLockedError,
  PositionOutOfRangeError,
  ProviderError,
  SealFileError,
  TurnlogError,
  UnknownSessionError,
} from "../../src/index.js";
import type { ErrorActor } from "../../src/index.js";
import { FORMAT_KEY, globalKey } from "../../src/log/level/level-keys.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

const errorsDirectory = path.resolve(import.meta.dirname, "../../src/errors");
// Files of src/errors that declare no error class: the base and the table itself.
const notErrorFiles = new Set(["turnlog-error.ts", "error-codes.ts"]);

interface DeclaredError {
  file: string;
  className: string;
  code: string;
}

/** Every error class declared in src/errors, with the code its source gives it. */
function declaredErrors(): DeclaredError[] {
  return readdirSync(errorsDirectory)
    .filter((file) => file.endsWith(".ts") && !notErrorFiles.has(file))
    .flatMap((file) => {
      const text = readFileSync(path.join(errorsDirectory, file), "utf8");
      return [...text.matchAll(/export class (\w+) extends (\w+)[^{]*\{[\s\S]*?readonly code = "(\w+)"/g)].map((match) => {
        expect(match[2], `${file}: ${match[1]} extends TurnlogError`).toBe("TurnlogError");
        return { file, className: match[1] as string, code: match[3] as string };
      });
    });
}

const temporaryDirectories: string[] = [];
async function freshDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-errors-"));
  temporaryDirectories.push(directory);
  return directory;
}
afterEach(async () => {
  for (const directory of temporaryDirectories.splice(0)) await rm(directory, { recursive: true, force: true });
});

/** What a host sees of a failure: the typed error's code and who must act. */
function whoActs(error: unknown): { code: string; actor: ErrorActor } {
  expect(TurnlogError.isTurnlogError(error), String(error)).toBe(true);
  const typed = error as TurnlogError;
  return { code: typed.code, actor: typed.actor };
}

async function levelLogWithEvents(directory: string): Promise<void> {
  const log = await LevelEventLog.open(directory);
  await log.appendToStream("s1", [{ type: "noted", data: { index: 1 } }, { type: "noted", data: { index: 2 } }]);
  await log.close();
}

async function tamper(directory: string, change: (db: Level<string, string>) => Promise<void>): Promise<void> {
  const db = new Level<string, string>(directory, { valueEncoding: "utf8" });
  await db.open();
  try {
    await change(db);
  } finally {
    await db.close();
  }
}

describe("the error code table", () => {
  it("has one row for every error class in src/errors, and one class for every row", () => {
    const declared = declaredErrors();
    const codes = declared.map((error) => error.code);
    expect(new Set(codes).size, "codes are unique").toBe(codes.length);
    expect([...codes].sort()).toEqual(Object.keys(errorCodes).sort());
    for (const { className, code } of declared) expect(errorCodes[code as keyof typeof errorCodes].errorClass).toBe(className);
  });

  it("declares one error class per file, each with a static isInstance guard", async () => {
    const declared = declaredErrors();
    const files = declared.map((error) => error.file);
    expect(new Set(files).size, "one class per file").toBe(files.length);
    for (const { file, className } of declared) {
      const module = (await import(path.join(errorsDirectory, file))) as Record<string, unknown>;
      const errorClass = module[className] as { prototype: unknown; isInstance?: unknown };
      expect(errorClass.prototype, className).toBeInstanceOf(TurnlogError);
      expect(typeof errorClass.isInstance, `${className}.isInstance`).toBe("function");
    }
  });

  it("gives every code a known actor and a summary", () => {
    const actors: ErrorActor[] = ["configuration", "model", "provider", "log", "host", "person"];
    for (const [code, row] of Object.entries(errorCodes)) {
      expect(code).toMatch(/^TURNLOG_[A-Z_]+$/);
      expect(actors).toContain(row.actor);
      expect(row.summary.length).toBeGreaterThan(10);
    }
  });

  it("is documented code by code in docs/errors.md", () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, "../../docs/errors.md"), "utf8");
    for (const [code, row] of Object.entries(errorCodes)) {
      expect(doc, code).toMatch(new RegExp(`\\| \`${code}\` \\| \`${row.errorClass}\` \\| ${row.actor} \\|`));
    }
  });
});

describe("a host can tell who must act on a failure", () => {
  it("a log directory in another layout: the log (LogFormatError), and nothing is changed", async () => {
    const directory = await freshDirectory();
    await levelLogWithEvents(directory);
    await tamper(directory, (db) => db.put(FORMAT_KEY, "turnlog-level-log/99"));
    const error = await LevelEventLog.open(directory).catch((reason: unknown) => reason);
    expect(whoActs(error)).toEqual({ code: "TURNLOG_LOG_FORMAT", actor: "log" });
    expect(LogFormatError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ directory: path.resolve(directory), found: "turnlog-level-log/99", expected: "turnlog-level-log/1" });
    await tamper(directory, async (db) => expect(await db.get(FORMAT_KEY)).toBe("turnlog-level-log/99"));
  });

  it("an event missing from storage: the log (LogCorruptedError), pointing at verify()", async () => {
    const directory = await freshDirectory();
    await levelLogWithEvents(directory);
    await tamper(directory, (db) => db.del(globalKey(2)));
    const log = await LevelEventLog.open(directory);
    try {
      const error = await log.readStream("s1").catch((reason: unknown) => reason);
      expect(whoActs(error)).toEqual({ code: "TURNLOG_LOG_CORRUPTED", actor: "log" });
      expect(LogCorruptedError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/missing; run verify\(\)/);
    } finally {
      await log.close();
    }
  });

  it("a log held by another handle: the log (LogLockedError)", async () => {
    const directory = await freshDirectory();
    const first = await LevelEventLog.open(directory);
    try {
      const error = await LevelEventLog.open(directory).catch((reason: unknown) => reason);
      expect(LogLockedError.isInstance(error)).toBe(true);
      expect(whoActs(error)).toEqual({ code: "TURNLOG_LOG_LOCKED", actor: "log" });
    } finally {
      await first.close();
    }
  });

  it("a seal key others can read: the configuration (SealFileError), naming the file", async () => {
    const directory = await freshDirectory();
    await loadOrCreateSealKey(directory);
    const file = path.join(directory, "seal-key.pem");
    await chmod(file, 0o644);
    const error = await loadSealKey(directory).catch((reason: unknown) => reason);
    expect(SealFileError.isInstance(error)).toBe(true);
    expect(whoActs(error)).toEqual({ code: "TURNLOG_SEAL_FILE", actor: "configuration" });
    expect(error).toMatchObject({ file, message: expect.stringContaining(`chmod 600 ${file}`) });
  });

  it("a position beyond a session's end or an unknown session: the host's call", async () => {
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([{ content: "hello" }]) });
    const session = await runtime.openSession("s1");
    await session.send("hi");
    const version = (await runtime.events("s1")).length;
    const beyond = await runtime.stateAt("s1", version + 1).catch((reason: unknown) => reason);
    expect(PositionOutOfRangeError.isInstance(beyond)).toBe(true);
    expect(whoActs(beyond)).toEqual({ code: "TURNLOG_POSITION_OUT_OF_RANGE", actor: "host" });
    expect(beyond).toMatchObject({ sessionId: "s1", position: version + 1, version });
    const unknown = await runtime.stateAt("nobody", 1).catch((reason: unknown) => reason);
    expect(UnknownSessionError.isInstance(unknown)).toBe(true);
    expect(whoActs(unknown)).toEqual({ code: "TURNLOG_UNKNOWN_SESSION", actor: "host" });
    await runtime.close();
  });

  it("a provider failure: the provider, with the constructor a host's adapter uses", () => {
    const error = new ProviderError({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 2000, message: "HTTP 429: slow down" });
    expect(whoActs(error)).toEqual({ code: "TURNLOG_PROVIDER_ERROR", actor: "provider" });
    expect(error).toMatchObject({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 2000, name: "ProviderError" });
  });
});

import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLogReader,
  createRuntime,
  currentSchemaVersion,
  followSession,
  LevelEventLog,
  MemoryEventLog,
  readEvent,
  sessionStream,
  UnexpectedEventError,
  type EventLog,
  type RecordedEvent,
  type RecordedTurnlogEvent,
} from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

// Events are parsed and upcast once, where they are read from a log (docs/events.md, "Reading
// events"): what comes out is the typed union, current; what cannot be is the typed error with the
// event's position, the same from every reader.

let dir: string;
let log: EventLog;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "turnlog-read-events-"));
  log = await LevelEventLog.open(dir, { durability: "relaxed" });
});

afterEach(async () => {
  await log.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A log holding the golden v0 log (read, never changed) as an older turnlog wrote it: each event's
 * stored JSON as it is, schema version 0 and hash chain included. The append API writes only
 * current events, so the stored text is put in place the way `unsafeTamper` lets a test do.
 */
function logOfV0Session(): { log: MemoryEventLog; sessionId: string } {
  const text = readFileSync(new URL("../fixtures/logs/v0-session.json", import.meta.url), "utf8");
  const events = JSON.parse(text) as RecordedEvent[];
  const stored = new MemoryEventLog();
  stored.unsafeTamper((storage) => {
    storage.events.push(...events.map((event) => JSON.stringify(event)));
    storage.streamIndex.set(sessionStream("golden-1"), events.map((event) => event.meta.globalPosition));
    storage.heads.set(sessionStream("golden-1"), { version: events.length, hash: events.at(-1)?.meta.hash ?? "" });
  });
  return { log: stored, sessionId: "golden-1" };
}

/** A session a runtime recorded on the LevelDB log ("hi" answered "hello"), then one event appended to its stream by hand. */
async function sessionWithAppended(event: { type: string; data: unknown }): Promise<{ sessionId: string; position: number }> {
  const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "hello" }]), clock: steppingClock(), ids: sequentialIds("r") });
  const session = await runtime.openSession("s1");
  expect((await session.send("hi")).status).toBe("completed");
  const { lastGlobalPosition: _global, nextExpectedStreamVersion: position } = await log.appendToStream(sessionStream("s1"), [event]);
  await runtime.close();
  return { sessionId: "s1", position };
}

/** What a rejection says: the typed error's code, position, type and problem. */
async function refusal(read: () => Promise<unknown>): Promise<{ code: string; position: number; type: string; problem: string | undefined }> {
  const error = await read().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(UnexpectedEventError.isInstance(error)).toBe(true);
  const { code, position, type, problem } = error as UnexpectedEventError;
  return { code, position, type, problem };
}

async function firstFollowed(from: EventLog, sessionId: string): Promise<RecordedTurnlogEvent | undefined> {
  const controller = new AbortController();
  for await (const event of followSession(from, sessionId, { signal: controller.signal })) {
    controller.abort();
    return event;
  }
  return undefined;
}

describe("reading events from a log", () => {
  it("hands an event written by an older schema version over typed and current: upcast once, as the log still holds it", async () => {
    const { log: old, sessionId } = logOfV0Session();
    const [stored] = await old.readStream(sessionStream(sessionId), { maxCount: 1 });
    expect(stored?.meta.schemaVersion).toBe(0);
    expect(stored?.data).not.toHaveProperty("provider.maxAttempts");

    const reader = createLogReader(old);
    const [started] = await reader.events(sessionId);
    expect(started?.meta.schemaVersion).toBe(currentSchemaVersion);
    // Narrowing on `type` types `data`: no cast to read the provider's attempts.
    expect(started?.type === "session.started" && started.data.provider.maxAttempts).toBe(3);
    expect(await firstFollowed(old, sessionId)).toEqual(started);
    // The state the reader folds is the one replay folds: the upcast start's attempts.
    expect((await reader.state(sessionId)).provider?.maxAttempts).toBe(3);
    expect((await reader.replay(sessionId, { tools: workspace().tools })).divergences).toEqual([]);
    await old.close();
  });

  it("refuses an event of a type the catalogue does not have with UnexpectedEventError at its position, the same from the reader, replay, a follower and a runtime", async () => {
    const { sessionId, position } = await sessionWithAppended({ type: "turn.tool.exploded", data: { turnId: "t" } });
    const expected = { code: "TURNLOG_UNEXPECTED_EVENT", position, type: "turn.tool.exploded", problem: expect.stringContaining("not in the event catalogue") };
    const reader = createLogReader(log);
    expect(await refusal(() => reader.events(sessionId))).toEqual(expected);
    expect(await refusal(() => reader.state(sessionId))).toEqual(expected);
    expect(await refusal(() => reader.view(sessionId))).toEqual(expected);
    expect(await refusal(() => reader.replay(sessionId))).toEqual(expected);
    expect(await refusal(() => reader.stateAt(sessionId, position))).toEqual(expected);
    expect(await refusal(() => reader.events(sessionId, { from: position }))).toEqual(expected);
    expect(await refusal(async () => [await firstFollowed(log, sessionId), await reader.events(sessionId, { from: position, to: position })])).toEqual(expected);
    const runtime = await createRuntime({ log, provider: scriptedProvider([]) });
    expect(await refusal(() => runtime.openSession(sessionId))).toEqual(expected);
    await runtime.close();
    // The listing names the session unreadable rather than hiding the others.
    expect(await reader.sessions()).toEqual([expect.objectContaining({ id: sessionId, status: "unreadable" })]);
  });

  it("refuses data that is not an object the same way, before any projection reads it", async () => {
    const { sessionId, position } = await sessionWithAppended({ type: "session.user_message.added", data: ["not", "an", "object"] });
    const expected = { code: "TURNLOG_UNEXPECTED_EVENT", position, type: "session.user_message.added", problem: "its data is not an object" };
    const reader = createLogReader(log);
    expect(await refusal(() => reader.state(sessionId))).toEqual(expected);
    expect(await refusal(() => reader.replay(sessionId))).toEqual(expected);
  });

  it("checks an event's shape on every read, and its whole schema when asked: data of unknown origin names the field it gets wrong", async () => {
    const { sessionId, position } = await sessionWithAppended({ type: "session.user_message.added", data: { content: 42 } });
    const [stored] = await log.readStream(sessionStream(sessionId), { from: position, maxCount: 1 });
    const recorded = stored as RecordedEvent;
    expect(readEvent(recorded).type).toBe("session.user_message.added");
    expect(() => readEvent(recorded, "schema")).toThrow(UnexpectedEventError);
    expect(() => readEvent(recorded, "schema")).toThrow(`event "session.user_message.added" at position ${position} cannot be read: data.content:`);
  });
});

import { cp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogReader, createRuntime, LevelEventLog } from "../../src/index.js";
import type { EventLog, ReadStreamOptions, RecordedEvent, RecordedTurnlogEvent, Runtime } from "../../src/index.js";
import { MemorySnapshotStore } from "../../src/log/snapshot-store.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";
import { SessionSnapshotReader, SessionSnapshotWriter } from "../../src/projections/session-snapshot.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { startLogChild } from "../support/log-child-process.js";
import { describeWithPostgres, postgresFixtures } from "../support/postgres.js";
import { temporary } from "../support/temporary-directories.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

const every = 40;
const messages = 12;

/** Each user message: two reads, then an answer (about 20 events). */
function script(count: number, from = 0): ScriptStep[] {
  return Array.from({ length: count }, (_, index) => [
    { toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"b.txt"}' }] },
    { content: `done ${from + index}` },
  ]).flat();
}

/** A log whose stream reads are recorded, to tell where a fold started. */
function counting<Log extends EventLog>(log: Log): { log: Log; reads: ReadStreamOptions[] } {
  const reads: ReadStreamOptions[] = [];
  const proxy = new Proxy(log, {
    get(target, key) {
      if (key === "readStream") {
        return (stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> => {
          reads.push(options);
          return target.readStream(stream, options);
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { log: proxy, reads };
}

async function runtimeOn(log: EventLog, steps: ScriptStep[], options: { snapshots?: false } = {}): Promise<Runtime> {
  const ws = workspace({ "a.txt": "alpha ".repeat(30), "b.txt": "beta" });
  return createRuntime({ log, provider: scriptedProvider(steps), tools: ws.tools, clock: steppingClock(Date.UTC(2026, 1, 1)), ids: sequentialIds("later"), snapshots: options.snapshots ?? { every } });
}

/** A LevelDB log holding session "s1" of `messages` user messages, grown with snapshots on. */
async function grownLog(): Promise<string> {
  const directory = await temporary("turnlog-session-snapshots-");
  const log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false, clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await runtimeOn(log, script(messages));
  const session = await runtime.openSession("s1");
  for (let message = 0; message < messages; message += 1) expect((await session.send(`read ${message}`)).status).toBe("completed");
  await log.snapshots.idle();
  await runtime.close();
  await log.close();
  return directory;
}

const openLevel = (directory: string) => LevelEventLog.open(directory, { durability: "relaxed", answers: false, clock: steppingClock(Date.UTC(2026, 1, 1)), ids: sequentialIds("reopened") });

/** What an open read first: from the stream's start, or from past a snapshot. */
const firstFoldRead = (reads: ReadStreamOptions[]) => reads.find((read) => read.maxCount === 10_000);

describe("session snapshots in the runtime", () => {
  it("are written in the background as a session grows, every `every` events at a point between turns", async () => {
    const directory = await grownLog();
    const log = await openLevel(directory);
    const events = await log.readStream("session-s1");
    const positions = await log.snapshots.positions("session-s1");
    expect(positions.length).toBeGreaterThanOrEqual(Math.floor(events.length / every) - 1);
    for (const [index, position] of positions.entries()) {
      if (index > 0) expect(position - (positions[index - 1] as number)).toBeGreaterThanOrEqual(every);
      // Between turns: the event there ends a turn (or the session has no turn open).
      expect(["turn.completed", "session.user_message.added", "session.started"]).toContain(events[position - 1]?.type);
    }
    await log.close();
  });

  it("a session opened from a snapshot folds only the tail, has the state of a full fold, and decides the next message as one folded from the start", async () => {
    const directory = await grownLog();
    const copy = await temporary("turnlog-session-snapshots-none-");
    await cp(directory, copy, { recursive: true });
    await rm(path.join(copy, "snapshots"), { recursive: true });

    const outcomes: { events: { type: string; data: unknown }[]; state: unknown; firstRead: ReadStreamOptions | undefined }[] = [];
    for (const where of [directory, copy]) {
      const level = await openLevel(where);
      const { log, reads } = counting(level);
      const runtime = await runtimeOn(log, script(1, messages));
      const session = await runtime.openSession("s1");
      const firstRead = firstFoldRead(reads);
      const before = await runtime.events("s1");
      expect(session.state()).toEqual(foldEvents(sessionStateProjection, before));
      expect((await session.send("one more")).status).toBe("completed");
      const after = (await runtime.events("s1")).slice(before.length).map(({ type, data }) => ({ type, data }));
      outcomes.push({ events: after, state: session.state(), firstRead });
      await runtime.close();
      await level.close();
    }
    const [fromSnapshot, fromStart] = outcomes;
    expect(fromSnapshot?.firstRead?.from).toBeGreaterThan(every);
    expect(fromStart?.firstRead?.from).toBe(1);
    expect(fromSnapshot?.events.length).toBeGreaterThan(0);
    expect(fromSnapshot?.events).toEqual(fromStart?.events);
    expect(fromSnapshot?.state).toEqual(fromStart?.state);
  });

  it("resumes a turn held for approval after the newest snapshot, as a session folded from the start does", async () => {
    const directory = await grownLog();
    // Park a turn on a held write (auto-edit asks for writes outside the workspace's trust).
    const parked = await openLevel(directory);
    const steps: ScriptStep[] = [{ toolCalls: [{ name: "write_file", arguments: '{"path":"c.txt","content":"x"}' }] }, { content: "written" }];
    const first = await runtimeOn(parked, steps);
    const held = await (await first.openSession("s1")).send("write c");
    expect(held.status).toBe("awaiting-approval");
    await first.close();
    await parked.close();
    const copy = await temporary("turnlog-session-snapshots-held-");
    await cp(directory, copy, { recursive: true });
    await rm(path.join(copy, "snapshots"), { recursive: true });

    const results: { events: { type: string; data: unknown }[]; firstRead: ReadStreamOptions | undefined }[] = [];
    for (const where of [directory, copy]) {
      const level = await openLevel(where);
      const { log, reads } = counting(level);
      const runtime = await runtimeOn(log, steps.slice(1));
      const session = await runtime.openSession("s1");
      const firstRead = firstFoldRead(reads);
      const before = (await runtime.events("s1")).length;
      const outcome = session.outcome();
      expect(outcome.status).toBe("awaiting-approval");
      const [call] = outcome.status === "awaiting-approval" ? outcome.pendingApprovals : [];
      await session.approve(call?.callId as string, { by: "tester" });
      expect((await session.resume()).status).toBe("completed");
      results.push({ events: (await runtime.events("s1")).slice(before).map(({ type, data }) => ({ type, data })), firstRead });
      await runtime.close();
      await level.close();
    }
    expect(results[0]?.firstRead?.from).toBeGreaterThan(every);
    expect(results[1]?.firstRead?.from).toBe(1);
    expect(results[0]?.events).toEqual(results[1]?.events);
  });

  it("ignores a damaged, torn, foreign or stale newest snapshot (the older one serves) and writes it again; with none left it folds from the start", async () => {
    const directory = await grownLog();
    const level = await openLevel(directory);
    const events = (await level.readStream("session-s1")) as RecordedTurnlogEvent[];
    const reference = foldEvents(sessionStateProjection, events);
    const stream = "session-s1";
    const [streamDirectory] = await readdir(path.join(directory, "snapshots", "streams"));
    const recordFile = (position: number) => path.join(directory, "snapshots", "streams", streamDirectory as string, String(position).padStart(16, "0"));
    const head = events.length;

    const open = async (): Promise<{ reads: ReadStreamOptions[]; state: unknown }> => {
      const { log, reads } = counting(level);
      const runtime = await runtimeOn(log, []);
      const session = await runtime.openSession("s1");
      const state = session.state();
      await runtime.close();
      await level.snapshots.idle();
      return { reads, state };
    };

    // A snapshot at the head that names the hash of another event.
    await new SessionSnapshotWriter(level.snapshots, stream).write(foldEvents(sessionStateProjection, events), { hash: events[head - 2]?.meta.hash as string, pending: [] });
    const newestGood = (await level.snapshots.positions(stream)).filter((position) => position < head).at(-1) as number;
    let opened = await open();
    expect(opened.state).toEqual(reference);
    expect(firstFoldRead(opened.reads)?.from).toBe(newestGood + 1);
    // Written again, now right, once the open found it wanting.
    expect(await level.snapshots.positions(stream)).toContain(head);
    opened = await open();
    expect(firstFoldRead(opened.reads)?.from).toBe(head + 1);
    expect(opened.state).toEqual(reference);

    // Bytes flipped, then cut short (a torn write): each time the older one serves.
    const bytes = await readFile(recordFile(head));
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] as number) ^ 0x20;
    await writeFile(recordFile(head), bytes);
    opened = await open();
    expect(opened.state).toEqual(reference);
    expect(firstFoldRead(opened.reads)?.from).toBe(newestGood + 1);
    await writeFile(recordFile(head), (await readFile(recordFile(head))).subarray(0, 100));
    opened = await open();
    expect(opened.state).toEqual(reference);
    expect(firstFoldRead(opened.reads)?.from).toBe(newestGood + 1);

    // A snapshot of an older projection version.
    const projection = sessionStateProjection as { version: number };
    const current = projection.version;
    projection.version = current - 1;
    try {
      await new SessionSnapshotWriter(level.snapshots, stream).write(reference, { hash: events[head - 1]?.meta.hash as string, pending: [] });
    } finally {
      projection.version = current;
    }
    opened = await open();
    expect(opened.state).toEqual(reference);
    expect(firstFoldRead(opened.reads)?.from).toBe(newestGood + 1);

    // Every snapshot deleted: the same state, folded from the start.
    await level.snapshots.clear();
    opened = await open();
    expect(opened.state).toEqual(reference);
    expect(firstFoldRead(opened.reads)?.from).toBe(1);
    await level.close();
  });

  it("stateAt never folds from below the log's newest snapshot at or below the position, and equals the full fold at every position", async () => {
    const directory = await grownLog();
    const level = await openLevel(directory);
    const { log, reads } = counting(level);
    const events = (await level.readStream("session-s1")) as RecordedTurnlogEvent[];
    const positions = await level.snapshots.positions("session-s1");
    // Memory snapshots every 20 events: the log's are read when none in memory is that near.
    const reader = createLogReader(log, { snapshots: { every: 20 } });
    let fromLog = 0;
    for (let position = events.length; position >= 1; position -= 7) {
      reads.length = 0;
      expect(await reader.stateAt("s1", position)).toEqual(foldEvents(sessionStateProjection, events.slice(0, position)));
      const below = positions.filter((snapshot) => snapshot <= position).at(-1) ?? 0;
      const firstFold = reads.find((read) => read.maxCount !== 1);
      if (firstFold !== undefined) expect(firstFold.from).toBeGreaterThan(below);
      if (reads.some((read) => read.maxCount === 1)) fromLog += 1;
    }
    expect(fromLog).toBeGreaterThan(0);
    const runtime = await runtimeOn(log, []);
    expect(await runtime.stateAt("s1", events.length)).toEqual(foldEvents(sessionStateProjection, events));
    // With snapshots off, the same states, folded from the start.
    const off = await runtimeOn(log, [], { snapshots: false });
    reads.length = 0;
    expect(await off.stateAt("s1", events.length - 1)).toEqual(foldEvents(sessionStateProjection, events.slice(0, -1)));
    expect(reads.find((read) => read.maxCount !== 1)?.from).toBe(1);
    await off.close();
    await runtime.close();
    await level.close();
  });

  it("a snapshot write that never ends holds up no append, no tool call, no turn", async () => {
    let started = 0;
    let reached: () => void = () => undefined;
    const writeReachedStore = new Promise<void>((resolve) => (reached = resolve));
    const stuck = (): Promise<void> => {
      started += 1;
      reached();
      return new Promise(() => undefined);
    };
    class StuckStore extends MemorySnapshotStore {
      override putChunk = stuck;
      override putRecord = stuck;
    }
    class StuckLog extends MemoryEventLog {
      override readonly snapshots = new StuckStore();
      override async close(): Promise<void> {
        // The stuck write is never waited for.
      }
    }
    const log = new StuckLog({ clock: steppingClock(), ids: sequentialIds("event") });
    const runtime = await runtimeOn(log, script(2 * messages));
    const session = await runtime.openSession("s1");
    for (let message = 0; message < messages; message += 1) expect((await session.send(`read ${message}`)).status).toBe("completed");
    // The write runs in turns of the event loop of its own; once it is stuck in the store, the
    // session goes on as before.
    await writeReachedStore;
    const before = (await runtime.events("s1")).length;
    for (let message = messages; message < 2 * messages; message += 1) expect((await session.send(`read ${message}`)).status).toBe("completed");
    expect((await runtime.events("s1")).length - before).toBeGreaterThan(2 * every);
    // One write at a time: the stuck one is the only one.
    expect(started).toBe(1);
    await runtime.close();
  });
});

describe("session snapshots and a crash", () => {
  it("a process killed at any moment while it writes snapshots leaves none that is used wrongly: each left either loads as the fold or is passed over", async () => {
    const directory = await temporary("turnlog-snapshot-crash-");
    for (let round = 1; round <= 3; round += 1) {
      const child = startLogChild("snapshot-crash-child.ts", [directory]);
      const wanted = 8 * round;
      // Killed on a line, not after a time: the child is somewhere in its next message then, and
      // with a snapshot every 30 events often in the middle of writing one.
      await child.waitForLine((line) => line === `sent ${wanted}`);
      child.child.kill("SIGKILL");
      expect((await child.exited).signal).toBe("SIGKILL");
    }
    const log = await openLevel(directory);
    const events = (await log.readStream("session-s1")) as RecordedTurnlogEvent[];
    const positions = await log.snapshots.positions("session-s1");
    expect(positions.length).toBeGreaterThan(0);
    for (const position of positions) {
      const loaded = await new SessionSnapshotReader().newest(log, log.snapshots, "session-s1", position, position - 1);
      if (loaded !== undefined) expect(loaded.state).toEqual(foldEvents(sessionStateProjection, events.slice(0, position)));
    }
    const runtime = await runtimeOn(log, []);
    expect((await runtime.openSession("s1")).state()).toEqual(foldEvents(sessionStateProjection, events));
    await runtime.close();
    await log.close();
  }, 120_000);
});

describeWithPostgres("session snapshots on PostgreSQL", () => {
  const fixtures = postgresFixtures();

  it("are written to the schema's tables as the session grows, open the session from the newest, and a damaged row is passed over", async () => {
    const schema = fixtures.schema("snapshots");
    const grown = await fixtures.open(schema, { clock: steppingClock(), ids: sequentialIds("event") });
    const first = await runtimeOn(grown, script(messages));
    const session = await first.openSession("s1");
    for (let message = 0; message < messages; message += 1) expect((await session.send(`read ${message}`)).status).toBe("completed");
    await grown.snapshots.idle();
    await first.close();
    const events = (await grown.readStream("session-s1")) as RecordedTurnlogEvent[];
    const reference = foldEvents(sessionStateProjection, events);
    const positions = await grown.snapshots.positions("session-s1");
    expect(positions.length).toBeGreaterThanOrEqual(2);

    const open = async (): Promise<ReadStreamOptions | undefined> => {
      const { log, reads } = counting(await fixtures.open(schema));
      const runtime = await runtimeOn(log, []);
      expect((await runtime.openSession("s1")).state()).toEqual(reference);
      await runtime.close();
      // A snapshot the open found wanting is written again, in the background: done before the next step.
      await log.snapshots.idle();
      return firstFoldRead(reads);
    };
    expect((await open())?.from).toBe((positions.at(-1) as number) + 1);

    // Bytes flipped in the newest row: the one before it serves.
    const client = await fixtures.client();
    await client.query(`UPDATE ${schema}.snapshots SET body = overlay(body placing '\\x00ff00ff'::bytea from 40) WHERE stream_position = $1`, [positions.at(-1)]);
    expect((await open())?.from).toBe((positions.at(-2) as number) + 1);

    // The tables emptied: the same state, folded from the start.
    await client.query(`TRUNCATE ${schema}.snapshots, ${schema}.snapshot_chunks`);
    expect((await open())?.from).toBe(1);
  });
});

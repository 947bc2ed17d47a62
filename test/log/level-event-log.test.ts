import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Level } from "level";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExpectedVersionConflictError, STREAM_DOES_NOT_EXIST } from "../../src/errors/expected-version-conflict-error.js";
import { LogCorruptedError } from "../../src/errors/log-corrupted-error.js";
import { LogLockedError } from "../../src/errors/log-locked-error.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { followStream } from "../../src/log/follow-stream.js";
import { LevelEventLog, maxCachedHeads } from "../../src/log/level/level-event-log.js";
import type { LevelEventLogOptions } from "../../src/log/level/level-event-log.js";
import { LAST_GLOBAL_KEY, globalKey, streamHeadKey, streamIndexKey } from "../../src/log/level/level-keys.js";
import { startLogChild } from "../support/log-child-process.js";
import type { LogChildProcess } from "../support/log-child-process.js";
import { counterIds, runEventLogConformance, someEvents, steppingClock } from "./event-log.conformance.js";

const temporaryDirectories: string[] = [];

async function freshDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-level-log-"));
  temporaryDirectories.push(directory);
  return directory;
}

afterEach(async () => {
  for (const directory of temporaryDirectories.splice(0)) await rm(directory, { recursive: true, force: true });
});

runEventLogConformance("LevelEventLog", async (options) => {
  const directory = await freshDirectory();
  const log = await LevelEventLog.open(directory, { durability: "relaxed", ...options });
  return {
    log,
    dispose: async () => {
      await log.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
});

async function collect(iterable: AsyncIterable<RecordedEvent>): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

/** Opens the closed log directory with a plain `level` handle, for tampering, and closes it again. */
async function withRawDatabase(directory: string, tamper: (db: Level<string, string>) => Promise<void>): Promise<void> {
  const db = new Level<string, string>(directory, { valueEncoding: "utf8" });
  await db.open();
  try {
    await tamper(db);
  } finally {
    await db.close();
  }
}

describe("LevelEventLog", () => {
  const openLogs: LevelEventLog[] = [];
  const children: LogChildProcess[] = [];

  async function open(directory: string, options: LevelEventLogOptions = {}): Promise<LevelEventLog> {
    const log = await LevelEventLog.open(directory, options);
    openLogs.push(log);
    return log;
  }

  afterEach(async () => {
    vi.restoreAllMocks();
    for (const log of openLogs.splice(0)) await log.close();
    for (const { child, exited } of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    }
  });

  describe("a writer that appended to more streams than it keeps heads of", () => {
    it("reads a forgotten head back exactly: versions, the hash chain and recorded times go on as if it had kept it", async () => {
      let now = Date.UTC(2026, 5, 1);
      const log = await open(await freshDirectory(), { durability: "relaxed", clock: { now: () => now } });
      await log.appendToStream("first", someEvents(1), { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
      const [first] = await log.readStream("first");
      // The system clock is set back a day, then the writer appends to more streams than it keeps.
      now -= 86_400_000;
      for (let index = 0; index < maxCachedHeads + 50; index += 1) await log.appendToStream(`other-${index}`, someEvents(1));
      await expect(log.appendToStream("first", someEvents(1), { expectedStreamVersion: STREAM_DOES_NOT_EXIST })).rejects.toMatchObject({ current: 1 });
      expect(await log.appendToStream("first", someEvents(1), { expectedStreamVersion: 1 })).toMatchObject({ nextExpectedStreamVersion: 2 });
      const [, second] = await log.readStream("first");
      expect(second?.meta.prevHash).toBe(first?.meta.hash);
      // Never recorded before the stream's last event, whatever the clock says.
      expect(Date.parse(second!.meta.recordedAt)).toBeGreaterThanOrEqual(Date.parse(first!.meta.recordedAt));
      expect(await log.verify()).toMatchObject({ ok: true });
    });
  });

  describe("durability across reopening", () => {
    it("keeps every event and continues positions and the hash chain after close and reopen", async () => {
      const directory = await freshDirectory();
      const first = await open(directory, { clock: steppingClock(), ids: counterIds("first") });
      await first.appendToStream("a", someEvents(3));
      await first.appendToStream("b", someEvents(2), { durable: false });
      const before = await collect(first.readAll());
      await first.close();

      const second = await open(directory, { clock: steppingClock(), ids: counterIds("second") });
      expect(await collect(second.readAll())).toEqual(before);
      expect(await second.listStreams()).toEqual(["a", "b"]);
      expect(await second.streamVersion("a")).toBe(3);
      expect(await second.appendToStream("a", someEvents(1), { expectedStreamVersion: 3 })).toMatchObject({
        nextExpectedStreamVersion: 4,
        lastGlobalPosition: 6,
      });
      const [continued] = await second.readStream("a", { from: 4 });
      const [previous] = await second.readStream("a", { from: 3, to: 3 });
      expect(continued?.meta.prevHash).toBe(previous?.meta.hash);
      expect(await second.verify()).toEqual({ ok: true, checked: 6 });
    });

    it("never records a stream's next event before its last one, when reopened with a clock an hour behind", async () => {
      const directory = await freshDirectory();
      const first = await open(directory, { clock: { now: () => Date.UTC(2025, 0, 1, 12) } });
      await first.appendToStream("a", someEvents(2));
      await first.close();
      const behind = Date.UTC(2025, 0, 1, 11);
      const second = await open(directory, { clock: { now: () => behind, monotonic: () => 0 } });
      await second.appendToStream("a", someEvents(1));
      await second.appendToStream("fresh", someEvents(1));
      expect((await second.readStream("a")).map((event) => event.meta.recordedAt)).toEqual(Array(3).fill("2025-01-01T12:00:00.000Z"));
      expect((await second.readStream("fresh"))[0]?.meta.recordedAt).toBe("2025-01-01T11:00:00.000Z");
      await second.close();
    });

    it("creates a missing directory, nested", async () => {
      const directory = path.join(await freshDirectory(), "nested", "log");
      const log = await open(directory);
      await log.appendToStream("a", someEvents(1));
      expect(log.directory).toBe(directory);
      expect(await log.streamVersion("a")).toBe(1);
    });

    it("rejects an unknown durability as a TypeError", async () => {
      const directory = await freshDirectory();
      await expect(LevelEventLog.open(directory, { durability: "eventually" as "sync" })).rejects.toThrow(TypeError);
    });
  });

  describe("batches", () => {
    it("writes nothing of an append whose batch fails, and carries on afterwards", async () => {
      const directory = await freshDirectory();
      const log = await open(directory);
      await log.appendToStream("a", someEvents(1));
      const seen: number[] = [];
      log.subscribe((event) => seen.push(event.meta.globalPosition));
      vi.spyOn(Level.prototype, "batch").mockRejectedValueOnce(new Error("disk full"));
      await expect(log.appendToStream("a", someEvents(3))).rejects.toThrow("disk full");
      expect(await log.streamVersion("a")).toBe(1);
      expect((await collect(log.readAll())).length).toBe(1);
      expect(seen).toEqual([]);
      expect(await log.appendToStream("a", someEvents(1), { expectedStreamVersion: 1 })).toMatchObject({
        nextExpectedStreamVersion: 2,
        lastGlobalPosition: 2,
      });
      await log.close();
      const reopened = await open(directory);
      expect((await collect(reopened.readAll())).map((event) => event.meta.globalPosition)).toEqual([1, 2]);
      expect(await reopened.verify()).toEqual({ ok: true, checked: 2 });
    });

    it("group-commits concurrent appends into one batch, each with its own result or conflict", async () => {
      const directory = await freshDirectory();
      const log = await open(directory);
      const batch = vi.spyOn(Level.prototype, "batch");
      const results = await Promise.allSettled([
        log.appendToStream("a", someEvents(2), { expectedStreamVersion: STREAM_DOES_NOT_EXIST }),
        log.appendToStream("a", someEvents(1), { expectedStreamVersion: 0 }),
        log.appendToStream("b", someEvents(1)),
        log.appendToStream("a", someEvents(1), { expectedStreamVersion: 2 }),
      ]);
      expect(batch).toHaveBeenCalledTimes(1);
      expect(results[0]).toMatchObject({ status: "fulfilled", value: { nextExpectedStreamVersion: 2, lastGlobalPosition: 2 } });
      expect(results[1]?.status).toBe("rejected");
      const conflict = results[1]?.status === "rejected" ? (results[1].reason as unknown) : undefined;
      expect(ExpectedVersionConflictError.isInstance(conflict)).toBe(true);
      expect(conflict).toMatchObject({ stream: "a", expected: 0, current: 2 });
      expect(results[2]).toMatchObject({ status: "fulfilled", value: { nextExpectedStreamVersion: 1, lastGlobalPosition: 3 } });
      expect(results[3]).toMatchObject({ status: "fulfilled", value: { nextExpectedStreamVersion: 3, lastGlobalPosition: 4 } });
      expect(await log.verify()).toEqual({ ok: true, checked: 4 });
    });

    it("fails every append of a group whose batch fails, even one that would have conflicted", async () => {
      const directory = await freshDirectory();
      const log = await open(directory);
      vi.spyOn(Level.prototype, "batch").mockRejectedValueOnce(new Error("disk full"));
      const results = await Promise.allSettled([
        log.appendToStream("a", someEvents(2)),
        log.appendToStream("a", someEvents(1), { expectedStreamVersion: 0 }),
        log.appendToStream("b", someEvents(1)),
      ]);
      expect(results.map((result) => result.status === "rejected" && (result.reason as Error).message)).toEqual([
        "disk full",
        "disk full",
        "disk full",
      ]);
      expect(await log.listStreams()).toEqual([]);
      expect(await log.appendToStream("a", someEvents(1), { expectedStreamVersion: 0 })).toMatchObject({
        nextExpectedStreamVersion: 1,
        lastGlobalPosition: 1,
      });
    });

    it("fsyncs a group when any of its appends is durable, and not when none is", async () => {
      const directory = await freshDirectory();
      const log = await open(directory, { durability: "sync" });
      const batch = vi.spyOn(Level.prototype, "batch");
      await log.appendToStream("a", someEvents(1), { durable: false });
      await Promise.all([log.appendToStream("a", someEvents(1), { durable: false }), log.appendToStream("b", someEvents(1))]);
      const relaxed = await open(await freshDirectory(), { durability: "relaxed" });
      await relaxed.appendToStream("a", someEvents(1));
      const calls = batch.mock.calls as unknown as Array<[unknown, { sync?: boolean }?]>;
      expect(calls.map(([, options]) => options?.sync)).toEqual([false, true, false]);
    });
  });

  describe("non-durable appends written behind", () => {
    /** Holds every LevelDB batch until `release` is called. */
    function holdBatches() {
      const original = Level.prototype.batch;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const batch = vi.spyOn(Level.prototype, "batch").mockImplementation(async function (this: Level<string, string>, ...args: unknown[]) {
        await released;
        return (original as (...a: unknown[]) => Promise<void>).apply(this, args);
      } as never);
      return { batch, release };
    }

    it("acknowledges a durable: false append before its batch is written; reads in this process wait for that batch", async () => {
      const log = await open(await freshDirectory(), { durability: "sync" });
      const { batch, release } = holdBatches();
      const { events } = await log.appendToStream("a", someEvents(2), { durable: false });
      expect(events.map((event) => event.meta.streamPosition)).toEqual([1, 2]);
      expect(batch).toHaveBeenCalledTimes(1);
      let read: RecordedEvent[] | undefined;
      const reading = log.readStream("a").then((result) => (read = result));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(read).toBeUndefined();
      release();
      await reading;
      expect(read?.map((event) => event.meta.hash)).toEqual(events.map((event) => event.meta.hash));
      // A durable append is acknowledged only once it (and so everything before it) is written.
      await log.appendToStream("a", someEvents(1));
      expect(await log.verify()).toEqual({ ok: true, checked: 3 });
    });

    it("acknowledges the next durable: false append while the batch before it is still being written; the batches land in order", async () => {
      const log = await open(await freshDirectory(), { durability: "sync" });
      const { batch, release } = holdBatches();
      const first = await log.appendToStream("a", someEvents(2), { durable: false });
      const second = await log.appendToStream("a", someEvents(1), { durable: false, expectedStreamVersion: 2 });
      expect(second.events.map((event) => event.meta.streamPosition)).toEqual([3]);
      // The second batch waits for the first to land before it goes to LevelDB.
      expect(batch).toHaveBeenCalledTimes(1);
      release();
      const read = await log.readStream("a");
      expect(read.map((event) => event.meta.hash)).toEqual([...first.events, ...second.events].map((event) => event.meta.hash));
      expect(await log.verify()).toEqual({ ok: true, checked: 3 });
    });

    it("appends made while a batch is being written go to LevelDB together, in one batch after it", async () => {
      const log = await open(await freshDirectory(), { durability: "sync" });
      const { batch, release } = holdBatches();
      await log.appendToStream("a", someEvents(1), { durable: false });
      await log.appendToStream("b", someEvents(1), { durable: false });
      await log.appendToStream("c", someEvents(2), { durable: false });
      // A durable append joins them, and is acknowledged once their batch is written and fsynced.
      const durable = log.appendToStream("d", someEvents(1));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(batch).toHaveBeenCalledTimes(1);
      release();
      await durable;
      expect(batch).toHaveBeenCalledTimes(2);
      expect((batch.mock.calls[1] as unknown[] | undefined)?.[1]).toEqual({ sync: true });
      expect(await log.verify()).toEqual({ ok: true, checked: 5 });
    });

    it("when a batch written behind fails, the appends acknowledged after it are not written either, and the log refuses everything after", async () => {
      const directory = await freshDirectory();
      const log = await open(directory, { durability: "sync" });
      await log.appendToStream("a", someEvents(1));
      const original = Level.prototype.batch;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const failure = new Error("disk full");
      const batch = vi.spyOn(Level.prototype, "batch").mockImplementationOnce((async () => {
        await released;
        throw failure;
      }) as never);
      batch.mockImplementation(original as never);
      await log.appendToStream("a", someEvents(1), { durable: false });
      // Acknowledged while the batch before it is held: it was told, and it is lost with it.
      await log.appendToStream("b", someEvents(1), { durable: false });
      release();
      await expect(log.readStream("b")).rejects.toBe(failure);
      await expect(log.appendToStream("c", someEvents(1), { durable: false })).rejects.toBe(failure);
      expect(batch).toHaveBeenCalledTimes(1);
      await log.close();
      vi.restoreAllMocks();
      const reopened = await open(directory, { durability: "sync" });
      expect(await reopened.streamVersion("a")).toBe(1);
      expect(await reopened.streamVersion("b")).toBe(0);
      expect(await reopened.verify()).toEqual({ ok: true, checked: 1 });
    });

    it("hands a durable: false append's events to subscribers only once its batch is written (issue 31: a kill -9 lost a handed-out event)", async () => {
      const log = await open(await freshDirectory(), { durability: "sync" });
      const seen: string[] = [];
      log.subscribe((event) => seen.push(`${event.meta.stream}@${event.meta.streamPosition}`));
      const { release } = holdBatches();
      let version: number | undefined;
      let versionRead: Promise<unknown>;
      let durable: Promise<unknown>;
      try {
        await log.appendToStream("a", someEvents(2), { durable: false });
        await log.appendToStream("b", someEvents(1), { durable: false });
        versionRead = log.streamVersion("a").then((read) => (version = read));
        durable = log.appendToStream("c", someEvents(1));
        // One turn of the event loop: a version read from the writer's own heads would be there.
        await new Promise((resolve) => setImmediate(resolve));
        // Positions were given to the appender; nobody else was told of events not yet written.
        expect(seen).toEqual([]);
        expect(version).toBeUndefined();
      } finally {
        release();
      }
      await durable;
      await versionRead;
      expect(seen).toEqual(["a@1", "a@2", "b@1", "c@1"]);
      expect(version).toBe(2);
    });

    it("never hands a subscriber or a follower the events of a batch written behind that failed (issue 31: a full disk lost 8 handed-out events)", async () => {
      const directory = await freshDirectory();
      const log = await open(directory, { durability: "sync" });
      await log.appendToStream("a", someEvents(1));
      const seen: number[] = [];
      const ended: unknown[] = [];
      log.subscribe((event) => seen.push(event.meta.streamPosition), { onEnd: (error) => ended.push(error) });
      const follower = followStream(log, "a");
      expect((await follower.next()).value?.meta.streamPosition).toBe(1);
      const pendingFollow = follower.next();
      const failure = new Error("disk full");
      vi.spyOn(Level.prototype, "batch").mockRejectedValueOnce(failure);
      const { events } = await log.appendToStream("a", someEvents(2), { durable: false });
      expect(events.map((event) => event.meta.streamPosition)).toEqual([2, 3]);
      await expect(log.readStream("a")).rejects.toBe(failure);
      await expect(log.appendToStream("a", someEvents(1))).rejects.toBe(failure);
      expect(seen).toEqual([]);
      // The follower was waiting for position 2: it ends with the write's error rather than wait
      // for events that will never be written, and a subscriber is told the same.
      await expect(pendingFollow).rejects.toBe(failure);
      expect(ended).toEqual([failure]);
      await log.close();
      vi.restoreAllMocks();
      // Reopened, the log goes on from what was written: positions 2 and 3 now hold other events.
      const reopened = await open(directory, { durability: "sync" });
      const next = await reopened.appendToStream("a", [{ type: "test.other", data: {} }], { expectedStreamVersion: 1 });
      expect(next.events.map((event) => event.meta.streamPosition)).toEqual([2]);
      expect(await reopened.verify()).toEqual({ ok: true, checked: 2 });
    });

    it("a durable append is not acknowledged before its batch is written", async () => {
      const log = await open(await freshDirectory(), { durability: "sync" });
      const { release } = holdBatches();
      let acknowledged = false;
      const appending = log.appendToStream("a", someEvents(1)).then(() => (acknowledged = true));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(acknowledged).toBe(false);
      release();
      await appending;
      expect(acknowledged).toBe(true);
    });

    it("when a batch written behind fails, the log refuses every later append and read with that error: no hole goes unnoticed", async () => {
      const directory = await freshDirectory();
      const log = await open(directory, { durability: "sync" });
      await log.appendToStream("a", someEvents(1));
      const failure = new Error("disk full");
      vi.spyOn(Level.prototype, "batch").mockRejectedValueOnce(failure);
      await log.appendToStream("a", someEvents(1), { durable: false });
      await expect(log.readStream("a")).rejects.toBe(failure);
      await expect(log.appendToStream("a", someEvents(1))).rejects.toBe(failure);
      await expect(log.appendToStream("b", someEvents(1), { durable: false })).rejects.toBe(failure);
      await log.close();
      // Reopened, the log holds what was written, and goes on from there.
      vi.restoreAllMocks();
      const reopened = await open(directory, { durability: "sync" });
      expect(await reopened.streamVersion("a")).toBe(1);
      await reopened.appendToStream("a", someEvents(1), { expectedStreamVersion: 1 });
      expect(await reopened.verify()).toEqual({ ok: true, checked: 2 });
    });
  });

  describe("closing", () => {
    it("fsyncs trailing non-durable appends of a sync log, and nothing for a relaxed log", async () => {
      const put = vi.spyOn(Level.prototype, "put");
      const synced = await open(await freshDirectory(), { durability: "sync" });
      const relaxed = await open(await freshDirectory(), { durability: "relaxed" });
      put.mockClear();
      await synced.appendToStream("a", someEvents(2), { durable: false });
      await relaxed.appendToStream("a", someEvents(2));
      await relaxed.close();
      expect(put).not.toHaveBeenCalled();
      await synced.close();
      expect(put).toHaveBeenCalledTimes(1);
      expect(put.mock.calls[0]).toEqual([LAST_GLOBAL_KEY, "2", { sync: true }]);
    });
  });

  describe("reading in pages", () => {
    it("streams events larger than one iterator page's byte budget, whole and in order", async () => {
      const log = await open(await freshDirectory(), { durability: "relaxed" });
      // 300 events of ~20 KB: a read of 1 000 events stops early on bytes, many times over.
      const text = "x".repeat(20_000);
      await log.appendToStream("big", Array.from({ length: 300 }, (_, index) => ({ type: "test.big", data: { index, text } })));
      const all = await collect(log.readAll());
      expect(all.map((event) => (event.data as { index: number }).index)).toEqual(Array.from({ length: 300 }, (_, index) => index));
      expect(all.every((event) => (event.data as { text: string }).text === text)).toBe(true);
      expect((await log.readStream("big", { from: 101, to: 300 })).map((event) => event.meta.streamPosition)).toEqual(Array.from({ length: 200 }, (_, index) => 101 + index));
    });

    it("lets a reader stop early, then reads again and closes cleanly", async () => {
      const directory = await freshDirectory();
      const log = await LevelEventLog.open(directory, { durability: "relaxed" });
      await log.appendToStream("a", someEvents(2_500));
      for (const stopAt of [1, 999, 1_000, 1_001, 2_499]) {
        let seen = 0;
        for await (const _ of log.readAll()) if ((seen += 1) === stopAt) break;
        expect(seen).toBe(stopAt);
      }
      expect((await collect(log.readAll({ after: 2_000 }))).length).toBe(500);
      await log.close();
      const reopened = await open(directory);
      expect(await reopened.verify()).toEqual({ ok: true, checked: 2_500 });
    });

    it("reads a stream interleaved with others the same as one stored side by side, both ways", async () => {
      const log = await open(await freshDirectory(), { durability: "relaxed" });
      for (let round = 0; round < 5; round += 1) {
        await log.appendToStream("woven", someEvents(2));
        await log.appendToStream("weft", someEvents(1));
      }
      await log.appendToStream("woven", someEvents(4));
      const positions = (events: RecordedEvent[]) => events.map((event) => event.meta.streamPosition);
      expect(positions(await log.readStream("woven"))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
      expect(positions(await log.readStream("woven", { from: 2, to: 5 }))).toEqual([2, 3, 4, 5]);
      expect(positions(await log.readStream("woven", { from: 11 }))).toEqual([11, 12, 13, 14]);
      expect(positions(await log.readStream("woven", { direction: "backwards", from: 13, to: 10 }))).toEqual([13, 12, 11, 10]);
      expect(positions(await log.readStream("woven", { direction: "backwards", from: 6, to: 3 }))).toEqual([6, 5, 4, 3]);
      expect((await log.readStream("woven")).every((event) => event.meta.stream === "woven")).toBe(true);
    });

    it("names the missing event when a stream's stored events lie side by side but one is gone", async () => {
      const directory = await freshDirectory();
      const log = await LevelEventLog.open(directory, { durability: "relaxed" });
      await log.appendToStream("s1", someEvents(5));
      await log.close();
      await withRawDatabase(directory, (db) => db.del(globalKey(3)));
      const reopened = await open(directory);
      await expect(reopened.readStream("s1")).rejects.toThrow(/g!0000000000000003 is missing/);
      await expect(reopened.readStream("s1", { direction: "backwards" })).rejects.toThrow(LogCorruptedError);
      expect((await reopened.readStream("s1", { from: 4 })).map((event) => event.meta.streamPosition)).toEqual([4, 5]);
    });
  });

  describe("reading values only (keys are known, or found again for an error)", () => {
    it("names a missing event by its global position and an unreadable one by its key, on a later page, and yields every event before each", async () => {
      const directory = await freshDirectory();
      const log = await LevelEventLog.open(directory, { durability: "relaxed" });
      await log.appendToStream("a", someEvents(2_500));
      await log.close();
      await withRawDatabase(directory, async (db) => {
        await db.del(globalKey(700));
        await db.put(globalKey(1_500), "{broken");
      });
      const reopened = await open(directory);
      const seen: number[] = [];
      const reading = (async () => {
        for await (const event of reopened.readAll()) seen.push(event.meta.globalPosition);
      })();
      await expect(reading).rejects.toThrow(LogCorruptedError);
      // A missing event is never skipped over: the read stops there and says so.
      await expect(reading).rejects.toThrow(/global position 700 \(g!0000000000000700\) is missing/);
      expect(seen).toEqual(Array.from({ length: 699 }, (_, index) => index + 1));
      const later: number[] = [];
      const readingOn = (async () => {
        for await (const event of reopened.readAll({ after: 700 })) later.push(event.meta.globalPosition);
      })();
      await expect(readingOn).rejects.toThrow(/g!0000000000001500 is unreadable/);
      expect(later).toEqual(Array.from({ length: 799 }, (_, index) => index + 701));
      expect((await collect(reopened.readAll({ after: 1_500 }))).map((event) => event.meta.globalPosition)).toEqual(Array.from({ length: 1_000 }, (_, index) => index + 1_501));
    });

    it("reads a stream's consecutive events by value alone, both ways and over pages, and falls back to keys when one is gone", async () => {
      const directory = await freshDirectory();
      const log = await LevelEventLog.open(directory, { durability: "relaxed" });
      await log.appendToStream("other", someEvents(3));
      await log.appendToStream("s1", someEvents(2_500));
      const all = (await collect(log.readAll())).filter((event) => event.meta.stream === "s1");
      const db = (log as unknown as { db: Level<string, string> }).db;
      const keyed = vi.spyOn(db, "iterator");
      const positions = (events: RecordedEvent[]) => events.map((event) => event.meta.streamPosition);
      expect(await log.readStream("s1", { from: 900, to: 2_100 })).toEqual(all.slice(899, 2_100));
      expect(positions(await log.readStream("s1", { direction: "backwards", from: 2_100, to: 900 }))).toEqual(positions(all.slice(899, 2_100)).reverse());
      expect(await log.readStream("s1", { direction: "backwards", from: 2_500, to: 2_401 })).toEqual(all.slice(2_400).reverse());
      // No iterator handed over keys: the values were matched to the keys by their order.
      expect(keyed.mock.calls.filter(([options]) => (options as { keys?: boolean } | undefined)?.keys !== false)).toEqual([]);
      keyed.mockRestore();
      await log.close();

      await withRawDatabase(directory, (db) => db.del(globalKey(3 + 1_000)));
      const reopened = await open(directory);
      await expect(reopened.readStream("s1", { from: 900, to: 1_100 })).rejects.toThrow(/g!0000000000001003 is missing/);
      expect(positions(await reopened.readStream("s1", { from: 1_001, to: 1_100 }))).toEqual(Array.from({ length: 100 }, (_, index) => index + 1_001));
    });
  });

  describe("verify on a tampered directory", () => {
    /** A closed log directory: stream "other" (2 events) interleaved with stream "s1" (5 events). */
    async function closedLogWithFive(): Promise<string> {
      const directory = await freshDirectory();
      const log = await LevelEventLog.open(directory, { durability: "relaxed" });
      await log.appendToStream("other", someEvents(1));
      await log.appendToStream("s1", someEvents(3));
      await log.appendToStream("other", someEvents(1));
      await log.appendToStream("s1", someEvents(2));
      await log.close();
      return directory;
    }

    /** The global position of stream position `position` of s1 in {@link closedLogWithFive}. */
    function globalOfS1(position: number): number {
      return [0, 2, 3, 4, 6, 7][position] ?? Number.NaN;
    }

    async function verifyReopened(directory: string) {
      const log = await open(directory);
      return log.verify();
    }

    it("names the position of an event whose value was rewritten as other valid JSON", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, async (db) => {
        const key = globalKey(globalOfS1(3));
        const event = JSON.parse((await db.get(key)) ?? "") as RecordedEvent<string, { index: number }>;
        event.data.index = 42;
        await db.put(key, JSON.stringify(event));
      });
      const report = await verifyReopened(directory);
      expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 3 });
      expect(report.reason).toMatch(/^hash-mismatch/);
      expect(report.checked).toBe(2 + 2);
    });

    it("names the position of an event with one flipped byte, wherever the byte is", async () => {
      const base = await closedLogWithFive();
      let length = 0;
      await withRawDatabase(base, async (db) => {
        length = Buffer.byteLength((await db.get(globalKey(globalOfS1(4)))) ?? "");
      });
      // The data, the hash, a position and a brace: each corruption is caught at position 4.
      for (const fraction of [0.05, 0.3, 0.6, 0.9, 0.999]) {
        const directory = await closedLogWithFive();
        await withRawDatabase(directory, async (db) => {
          const key = globalKey(globalOfS1(4));
          const bytes = (await db.get(key, { valueEncoding: "buffer" })) as Buffer;
          const offset = Math.floor(bytes.length * fraction);
          bytes[offset] = (bytes[offset] ?? 0) ^ 0x01;
          await db.put(key, bytes, { valueEncoding: "buffer" });
        });
        const log = await LevelEventLog.open(directory);
        const report = await log.verify();
        await log.close();
        expect(report, `byte ${Math.floor(length * fraction)} of ${length}`).toMatchObject({
          ok: false,
          stream: "s1",
          firstBadPosition: 4,
        });
      }
    });

    it("names the position of a removed event in the middle of a stream", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, async (db) => {
        await db.batch([
          { type: "del", key: globalKey(globalOfS1(2)) },
          { type: "del", key: streamIndexKey("s1", 2) },
        ]);
      });
      const report = await verifyReopened(directory);
      expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 2 });
      expect(report.reason).toMatch(/^position-gap/);
    });

    it("names the position of an event removed from storage but still indexed", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, (db) => db.del(globalKey(globalOfS1(2))));
      const report = await verifyReopened(directory);
      expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 2 });
      expect(report.reason).toMatch(/^missing/);
    });

    it("names the position of a removed last event, through the stream head", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, async (db) => {
        await db.batch([
          { type: "del", key: globalKey(globalOfS1(5)) },
          { type: "del", key: streamIndexKey("s1", 5) },
        ]);
      });
      const report = await verifyReopened(directory);
      expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 5, checked: 2 + 4 });
      expect(report.reason).toMatch(/^head-mismatch/);
    });

    it("names the first position of two swapped events", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, async (db) => {
        const [second, third] = await db.getMany([globalKey(globalOfS1(2)), globalKey(globalOfS1(3))]);
        await db.batch([
          { type: "put", key: globalKey(globalOfS1(2)), value: third ?? "" },
          { type: "put", key: globalKey(globalOfS1(3)), value: second ?? "" },
        ]);
      });
      const report = await verifyReopened(directory);
      expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 2 });
      expect(report.reason).toMatch(/^out-of-order/);
    });

    it("reports a corrupted head rather than crashing", async () => {
      const directory = await closedLogWithFive();
      await withRawDatabase(directory, (db) => db.put(streamHeadKey("s1"), "{not json"));
      expect(await verifyReopened(directory)).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 5 });
    });

    it("still verifies a stream longer than one iterator page", async () => {
      const directory = await freshDirectory();
      const log = await open(directory, { durability: "relaxed" });
      await log.appendToStream("long", someEvents(600));
      expect(await log.verify()).toEqual({ ok: true, checked: 600 });
      await log.close();
      await withRawDatabase(directory, (db) => db.del(streamIndexKey("long", 590)));
      expect(await verifyReopened(directory)).toMatchObject({ ok: false, stream: "long", firstBadPosition: 590, checked: 589 });
    });
  });

  describe("the directory lock", () => {
    it("refuses a second handle in the same process with a clear message", async () => {
      const directory = await freshDirectory();
      const first = await open(directory);
      const error: unknown = await LevelEventLog.open(directory).catch((reason: unknown) => reason);
      expect(LogLockedError.isInstance(error)).toBe(true);
      // This process holds it, not another one: the message says so, and how such a handle is often left open.
      expect((error as Error).message).toBe(
        `log is already open in this process: ${directory} (close that handle first; runtime.close() does not close a log passed to createRuntime)`,
      );
      expect((error as LogLockedError).inThisProcess).toBe(true);
      await first.close();
      const second = await open(directory);
      expect(await second.listStreams()).toEqual([]);
    });

    it("refuses a directory held by another process, and opens it once that process is gone", async () => {
      const directory = await freshDirectory();
      const holder = startLogChild("log-lock-holder.ts", [directory]);
      children.push(holder);
      await holder.waitForLine((line) => line === "ready");
      const error: unknown = await LevelEventLog.open(directory).catch((reason: unknown) => reason);
      expect(LogLockedError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(`log is locked by another process: ${directory}`);
      holder.child.kill("SIGKILL");
      await holder.exited;
      const log = await open(directory);
      expect(await log.verify()).toEqual({ ok: true, checked: 0 });
    });
  });

  describe("a crash", () => {
    it("leaves a verified prefix holding every append reported durable before SIGKILL", async () => {
      const directory = await freshDirectory();
      const writer = startLogChild("log-crash-child.ts", [directory, "4", "1000000"]);
      children.push(writer);
      await writer.waitForLine((_, index) => index >= 150);
      writer.child.kill("SIGKILL");
      expect(await writer.exited).toEqual({ code: null, signal: "SIGKILL" });
      const reported = writer.lines.map((line) => {
        const [stream = "", version = "", globalPosition = ""] = line.split(" ");
        return { stream, version: Number(version), globalPosition: Number(globalPosition) };
      });
      expect(reported.length).toBeGreaterThanOrEqual(150);

      const log = await open(directory);
      expect(await log.verify()).toMatchObject({ ok: true });
      const all = await collect(log.readAll());
      // A prefix: global positions 1..n with no hole.
      expect(all.map((event) => event.meta.globalPosition)).toEqual(all.map((_, index) => index + 1));
      for (const { stream, version, globalPosition } of reported) {
        const event = all[globalPosition - 1];
        expect(event?.meta).toMatchObject({ stream, streamPosition: version });
        expect(event?.data).toMatchObject({ stream, version });
      }
      const lastReported = Math.max(...reported.map((entry) => entry.globalPosition));
      expect(all.length).toBeGreaterThanOrEqual(lastReported);
    });
  });
});

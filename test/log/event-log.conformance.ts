import { afterEach, describe, expect, it } from "vitest";
import {
  ExpectedVersionConflictError,
  NO_CONCURRENCY_CHECK,
  STREAM_DOES_NOT_EXIST,
  STREAM_EXISTS,
} from "../../src/errors/expected-version-conflict-error.js";
import { LogClosedError } from "../../src/errors/log-closed-error.js";
import type { Clock, EventLog, EventToAppend, IdSource, RecordedEvent } from "../../src/log/event-log.js";
import { computeEventHash } from "../../src/log/hash-chain.js";
import { followStream } from "../../src/log/follow-stream.js";

/** A log under test and how to throw it away (close it, remove its files). */
export interface EventLogFixture {
  log: EventLog;
  dispose(): Promise<void>;
}

/** Opens a fresh, empty log of the backend under test. */
export type EventLogFactory = (options: { clock?: Clock; ids?: IdSource }) => Promise<EventLogFixture>;

/** A clock that starts at `start` and moves `stepMs` forward on every reading. */
export function steppingClock(start = Date.UTC(2025, 0, 1), stepMs = 1000): Clock {
  let now = start - stepMs;
  return {
    now: () => {
      now += stepMs;
      return now;
    },
  };
}

/** IDs `evt-1`, `evt-2`, … in the order they are asked for. */
export function counterIds(prefix = "evt"): IdSource {
  let next = 0;
  return { next: () => `${prefix}-${(next += 1)}` };
}

/** `count` events of `type` whose data records their index. */
export function someEvents(count: number, type = "test.thing.happened"): EventToAppend[] {
  return Array.from({ length: count }, (_, index) => ({ type, data: { index } }));
}

async function collect(iterable: AsyncIterable<RecordedEvent>): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

function positions(events: readonly RecordedEvent[]): number[] {
  return events.map((event) => event.meta.streamPosition);
}

function globalPositions(events: readonly RecordedEvent[]): number[] {
  return events.map((event) => event.meta.globalPosition);
}

/**
 * The behaviour every `EventLog` backend must show. Each backend's test file calls this once with
 * a factory for fresh logs, so that the backends cannot drift apart.
 */
export function runEventLogConformance(name: string, factory: EventLogFactory): void {
  describe(`${name} conforms to EventLog`, () => {
    const fixtures: EventLogFixture[] = [];

    async function openLog(options: { clock?: Clock; ids?: IdSource } = {}): Promise<EventLog> {
      const fixture = await factory(options);
      fixtures.push(fixture);
      return fixture.log;
    }

    afterEach(async () => {
      for (const fixture of fixtures.splice(0)) await fixture.dispose();
    });

    describe("appendToStream", () => {
      it("stores every event of one append, at consecutive stream and global positions", async () => {
        const log = await openLog();
        const result = await log.appendToStream("s1", someEvents(3));
        expect(result).toMatchObject({ nextExpectedStreamVersion: 3, lastGlobalPosition: 3 });
        const events = await log.readStream("s1");
        expect(events.map((event) => [event.type, event.data])).toEqual([
          ["test.thing.happened", { index: 0 }],
          ["test.thing.happened", { index: 1 }],
          ["test.thing.happened", { index: 2 }],
        ]);
        expect(positions(events)).toEqual([1, 2, 3]);
        expect(globalPositions(events)).toEqual([1, 2, 3]);
        expect(events.every((event) => event.meta.stream === "s1")).toBe(true);
      });

      it("returns the recorded events, frozen, as a later read returns them", async () => {
        const log = await openLog();
        await log.appendToStream("s1", someEvents(1));
        const result = await log.appendToStream("s1", someEvents(2));
        expect(result.events).toEqual(await log.readStream("s1", { from: 2 }));
        expect(Object.isFrozen(result.events[0]?.data)).toBe(true);
        expect(Object.isFrozen(result.events[0]?.meta)).toBe(true);
        const [read] = await log.readStream("s1");
        expect(Object.isFrozen(read)).toBe(false);
        expect((await log.appendToStream("s1", [])).events).toEqual([]);
      });

      it("numbers streams independently and the whole log globally", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(2));
        expect(await log.appendToStream("b", someEvents(1))).toMatchObject({ nextExpectedStreamVersion: 1, lastGlobalPosition: 3 });
        expect(await log.appendToStream("a", someEvents(1))).toMatchObject({ nextExpectedStreamVersion: 3, lastGlobalPosition: 4 });
        const a = await log.readStream("a");
        expect(positions(a)).toEqual([1, 2, 3]);
        expect(globalPositions(a)).toEqual([1, 2, 4]);
        const b = await log.readStream("b");
        expect(positions(b)).toEqual([1]);
        expect(globalPositions(b)).toEqual([3]);
      });

      it("keeps appends made concurrently in call order", async () => {
        const log = await openLog();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, index) => log.appendToStream(`s${index % 3}`, someEvents(2))),
        );
        expect(results.map((result) => result.lastGlobalPosition)).toEqual(
          Array.from({ length: 20 }, (_, index) => 2 * (index + 1)),
        );
        expect((await log.verify()).ok).toBe(true);
      });

      it("writes nothing of an append whose events are not all valid", async () => {
        const log = await openLog();
        const events: EventToAppend[] = [
          { type: "test.ok", data: { fine: true } },
          { type: "test.bad", data: { count: 10n } },
        ];
        await expect(log.appendToStream("s1", events)).rejects.toThrow(TypeError);
        await expect(log.appendToStream("s1", [{ type: "", data: {} }])).rejects.toThrow(TypeError);
        await expect(log.appendToStream("s1", [{ type: "test.undefined", data: undefined }])).rejects.toThrow(TypeError);
        await expect(log.appendToStream("s1", [{ type: "test.surrogate", data: "\ud800" }])).rejects.toThrow(TypeError);
        expect(await log.streamExists("s1")).toBe(false);
        expect(await collect(log.readAll())).toEqual([]);
      });

      it("rejects a stream name that is not a non-empty string", async () => {
        const log = await openLog();
        await expect(log.appendToStream("", someEvents(1))).rejects.toThrow(TypeError);
        await expect(log.readStream("")).rejects.toThrow(TypeError);
      });

      it("stores the JSON form of the data as it was when append was called", async () => {
        const log = await openLog();
        const data = { when: new Date(Date.UTC(2025, 0, 2)), list: [1, undefined], nested: { keep: "me" } };
        const pending = log.appendToStream("s1", [{ type: "test.json", data }]);
        data.nested.keep = "changed after the call";
        await pending;
        const [event] = await log.readStream("s1");
        expect(event?.data).toEqual({ when: "2025-01-02T00:00:00.000Z", list: [1, null], nested: { keep: "me" } });
      });

      it("takes recordedAt from the clock and eventId from the ID source unless metadata gives one", async () => {
        const log = await openLog({ clock: steppingClock(Date.UTC(2025, 0, 1), 1000), ids: counterIds() });
        await log.appendToStream("s1", [
          { type: "test.a", data: {} },
          { type: "test.b", data: {}, metadata: { eventId: "given-id", causationId: "cause-1", schemaVersion: 3 } },
          { type: "test.c", data: {} },
        ]);
        await log.appendToStream("s1", [{ type: "test.d", data: {} }]);
        const events = await log.readStream("s1");
        expect(events.map((event) => event.meta.eventId)).toEqual(["evt-1", "given-id", "evt-2", "evt-3"]);
        expect(events.map((event) => event.meta.recordedAt)).toEqual([
          "2025-01-01T00:00:00.000Z",
          "2025-01-01T00:00:00.000Z",
          "2025-01-01T00:00:00.000Z",
          "2025-01-01T00:00:01.000Z",
        ]);
        expect(events.map((event) => event.meta.schemaVersion)).toEqual([1, 3, 1, 1]);
        expect(events[1]?.meta.causationId).toBe("cause-1");
        expect(events[0]?.meta).not.toHaveProperty("causationId");
      });

      it("records an append at the time its appender settled (recordedAt), and refuses a time that is not one", async () => {
        const clock = steppingClock(Date.UTC(2025, 0, 1), 1000);
        const log = await openLog({ clock });
        expect(log.clock).toBe(clock);
        const settled = Date.UTC(2024, 5, 6, 7, 8, 9, 10);
        const { events } = await log.appendToStream("s1", someEvents(3), { recordedAt: settled });
        await log.appendToStream("s1", someEvents(1));
        expect(events.map((event) => event.meta.recordedAt)).toEqual(Array(3).fill("2024-06-06T07:08:09.010Z"));
        const read = await log.readStream("s1");
        expect(read.map((event) => event.meta.recordedAt)).toEqual([...Array(3).fill("2024-06-06T07:08:09.010Z"), "2025-01-01T00:00:00.000Z"]);
        expect(await log.verify()).toEqual({ ok: true, checked: 4 });
        for (const bad of [Number.NaN, Infinity, 8.64e15 + 1, "2024-06-06" as unknown as number]) {
          await expect(log.appendToStream("s1", someEvents(1), { recordedAt: bad })).rejects.toThrow(TypeError);
        }
        expect(await log.streamVersion("s1")).toBe(4);
      });

      it("records an event of a new stream recordedBeforeMs before the append's time (a fork's copy), and refuses it elsewhere", async () => {
        const clock = steppingClock(Date.UTC(2025, 0, 1), 1000);
        const log = await openLog({ clock });
        const spaced = someEvents(3).map((event, index) => ({ ...event, metadata: { recordedBeforeMs: [90_000, 1_500, 0][index] as number } }));
        const { events } = await log.appendToStream("copy", spaced);
        const times = ["2024-12-31T23:58:30.000Z", "2024-12-31T23:59:58.500Z", "2025-01-01T00:00:00.000Z"];
        expect(events.map((event) => event.meta.recordedAt)).toEqual(times);
        expect((await log.readStream("copy")).map((event) => event.meta.recordedAt)).toEqual(times);
        // The stream goes on from its last time, never before it.
        await log.appendToStream("copy", someEvents(1));
        expect((await log.readStream("copy", { from: 4 }))[0]?.meta.recordedAt).toBe("2025-01-01T00:00:01.000Z");
        expect(await log.verify()).toEqual({ ok: true, checked: 4 });
        // Not on a stream that has events (it could go before them), out of order, or not a whole ms ≥ 0.
        await expect(log.appendToStream("copy", [{ ...someEvents(1)[0]!, metadata: { recordedBeforeMs: 5 } }])).rejects.toThrow(TypeError);
        await expect(log.appendToStream("other", [{ type: "a.b.c", data: {}, metadata: { recordedBeforeMs: 5 } }, { type: "a.b.c", data: {}, metadata: { recordedBeforeMs: 6 } }])).rejects.toThrow(TypeError);
        for (const bad of [-1, 1.5, Number.NaN, "5" as unknown as number]) {
          await expect(log.appendToStream("other", [{ type: "a.b.c", data: {}, metadata: { recordedBeforeMs: bad } }])).rejects.toThrow(TypeError);
        }
        expect(await log.streamVersion("copy")).toBe(4);
        expect(await log.streamExists("other")).toBe(false);
      });

      it("keeps recordedAt non-decreasing per stream when the wall clock steps back, going on at the monotonic clock's pace", async () => {
        const start = Date.UTC(2025, 0, 1);
        let wall = start;
        let monotonic = 0;
        const log = await openLog({ clock: { now: () => wall, monotonic: () => monotonic } });
        await log.appendToStream("s1", someEvents(1));
        wall = start - 60 * 60 * 1000; // an hour back
        monotonic += 5_000;
        const [afterJump] = (await log.appendToStream("s1", someEvents(1))).events;
        expect(afterJump?.meta.recordedAt).toBe("2025-01-01T00:00:05.000Z");
        // Another stream has no time of its own yet: it takes the wall clock as it is.
        const [other] = (await log.appendToStream("s2", someEvents(1))).events;
        expect(other?.meta.recordedAt).toBe("2024-12-31T23:00:00.000Z");
        // The wall clock catching up (and passing) is taken again.
        wall = start + 60_000;
        monotonic += 1_000;
        const [caughtUp] = (await log.appendToStream("s1", someEvents(1))).events;
        expect(caughtUp?.meta.recordedAt).toBe("2025-01-01T00:01:00.000Z");
        // A settled time before the stream's last is recorded as the last.
        const [settled] = (await log.appendToStream("s1", someEvents(1), { recordedAt: start })).events;
        expect(settled?.meta.recordedAt).toBe("2025-01-01T00:01:00.000Z");
        expect(await log.verify()).toMatchObject({ ok: true });
      });

      it("never records a stream's event before its last one with a clock that has no monotonic reading", async () => {
        let wall = Date.UTC(2025, 0, 1);
        const log = await openLog({ clock: { now: () => wall } });
        await log.appendToStream("s1", someEvents(1));
        wall -= 60 * 60 * 1000;
        await log.appendToStream("s1", someEvents(2));
        const read = await log.readStream("s1");
        expect(read.map((event) => event.meta.recordedAt)).toEqual(Array(3).fill("2025-01-01T00:00:00.000Z"));
      });

      it("treats an empty append as a version check that writes nothing", async () => {
        const log = await openLog();
        await log.appendToStream("s1", someEvents(2));
        expect(await log.appendToStream("s1", [], { expectedStreamVersion: 2 })).toMatchObject({
          nextExpectedStreamVersion: 2,
          lastGlobalPosition: 2,
        });
        await expect(log.appendToStream("s1", [], { expectedStreamVersion: 1 })).rejects.toThrow(
          ExpectedVersionConflictError,
        );
        expect(await log.streamVersion("s1")).toBe(2);
      });
    });

    describe("expected stream versions", () => {
      async function conflictOf(promise: Promise<unknown>): Promise<ExpectedVersionConflictError> {
        const error: unknown = await promise.then(
          () => undefined,
          (reason: unknown) => reason,
        );
        expect(ExpectedVersionConflictError.isInstance(error)).toBe(true);
        return error as ExpectedVersionConflictError;
      }

      it("a number must equal the stream's current version", async () => {
        const log = await openLog();
        expect(await log.appendToStream("s1", someEvents(2), { expectedStreamVersion: 0 })).toMatchObject({
          nextExpectedStreamVersion: 2,
        });
        expect(await log.appendToStream("s1", someEvents(1), { expectedStreamVersion: 2 })).toMatchObject({
          nextExpectedStreamVersion: 3,
        });
        const conflict = await conflictOf(log.appendToStream("s1", someEvents(1), { expectedStreamVersion: 1 }));
        expect(conflict).toMatchObject({ stream: "s1", expected: 1, current: 3, code: "TURNLOG_VERSION_CONFLICT" });
        expect(conflict.message).toContain("s1");
        const ahead = await conflictOf(log.appendToStream("s1", someEvents(1), { expectedStreamVersion: 9 }));
        expect(ahead).toMatchObject({ expected: 9, current: 3 });
        const missing = await conflictOf(log.appendToStream("new", someEvents(1), { expectedStreamVersion: 1 }));
        expect(missing).toMatchObject({ stream: "new", expected: 1, current: 0 });
        expect(await log.streamVersion("s1")).toBe(3);
        expect(await log.streamExists("new")).toBe(false);
      });

      it("STREAM_DOES_NOT_EXIST passes only for a new stream", async () => {
        const log = await openLog();
        await log.appendToStream("s1", someEvents(2), { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
        const conflict = await conflictOf(
          log.appendToStream("s1", someEvents(1), { expectedStreamVersion: STREAM_DOES_NOT_EXIST }),
        );
        expect(conflict).toMatchObject({ stream: "s1", expected: STREAM_DOES_NOT_EXIST, current: 2 });
      });

      it("STREAM_EXISTS passes only for a stream with events", async () => {
        const log = await openLog();
        const conflict = await conflictOf(log.appendToStream("s1", someEvents(1), { expectedStreamVersion: STREAM_EXISTS }));
        expect(conflict).toMatchObject({ stream: "s1", expected: STREAM_EXISTS, current: 0 });
        await log.appendToStream("s1", someEvents(1));
        expect(await log.appendToStream("s1", someEvents(1), { expectedStreamVersion: STREAM_EXISTS })).toMatchObject({
          nextExpectedStreamVersion: 2,
        });
      });

      it("NO_CONCURRENCY_CHECK (the default) always passes", async () => {
        const log = await openLog();
        await log.appendToStream("s1", someEvents(1), { expectedStreamVersion: NO_CONCURRENCY_CHECK });
        await log.appendToStream("s1", someEvents(1), { expectedStreamVersion: NO_CONCURRENCY_CHECK });
        await log.appendToStream("s1", someEvents(1));
        expect(await log.streamVersion("s1")).toBe(3);
      });

      it("lets exactly one of two racing appends with the same expectation win", async () => {
        const log = await openLog();
        await log.appendToStream("s1", someEvents(1));
        const results = await Promise.allSettled([
          log.appendToStream("s1", someEvents(2), { expectedStreamVersion: 1 }),
          log.appendToStream("s1", someEvents(2), { expectedStreamVersion: 1 }),
        ]);
        expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected"]);
        const rejected = results[1];
        expect(rejected?.status === "rejected" && rejected.reason).toMatchObject({ expected: 1, current: 3 });
        expect(await log.streamVersion("s1")).toBe(3);
      });

      it("rejects an expectation that is neither a version nor a sentinel as a TypeError", async () => {
        const log = await openLog();
        const bad = [-1, 1.5, "STREAM_MAYBE", null] as unknown as number[];
        for (const expectedStreamVersion of bad) {
          await expect(log.appendToStream("s1", someEvents(1), { expectedStreamVersion })).rejects.toThrow(TypeError);
        }
        expect(await log.streamExists("s1")).toBe(false);
      });
    });

    describe("readStream", () => {
      async function logWithTen(): Promise<EventLog> {
        const log = await openLog();
        await log.appendToStream("other", someEvents(1));
        await log.appendToStream("s1", someEvents(10));
        await log.appendToStream("other", someEvents(1));
        return log;
      }

      it("reads an unknown stream as no events", async () => {
        const log = await openLog();
        expect(await log.readStream("nobody")).toEqual([]);
      });

      it("reads inclusive windows forwards", async () => {
        const log = await logWithTen();
        expect(positions(await log.readStream("s1"))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(positions(await log.readStream("s1", { from: 3, to: 5 }))).toEqual([3, 4, 5]);
        expect(positions(await log.readStream("s1", { from: 8 }))).toEqual([8, 9, 10]);
        expect(positions(await log.readStream("s1", { to: 2 }))).toEqual([1, 2]);
        expect(positions(await log.readStream("s1", { from: 4, maxCount: 2 }))).toEqual([4, 5]);
        expect(positions(await log.readStream("s1", { from: 5, to: 5 }))).toEqual([5]);
      });

      it("reads backwards from the last event, `from` being the high end", async () => {
        const log = await logWithTen();
        expect(positions(await log.readStream("s1", { direction: "backwards" }))).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
        expect(positions(await log.readStream("s1", { direction: "backwards", maxCount: 3 }))).toEqual([10, 9, 8]);
        expect(positions(await log.readStream("s1", { direction: "backwards", from: 6, to: 4 }))).toEqual([6, 5, 4]);
        expect(positions(await log.readStream("s1", { direction: "backwards", to: 9 }))).toEqual([10, 9]);
        expect(positions(await log.readStream("s1", { direction: "backwards", from: 2 }))).toEqual([2, 1]);
      });

      it("reads an empty or out-of-range window as no events", async () => {
        const log = await logWithTen();
        expect(await log.readStream("s1", { from: 11 })).toEqual([]);
        expect(await log.readStream("s1", { from: 6, to: 5 })).toEqual([]);
        expect(await log.readStream("s1", { maxCount: 0 })).toEqual([]);
        expect(await log.readStream("s1", { direction: "backwards", from: 4, to: 6 })).toEqual([]);
        expect(positions(await log.readStream("s1", { from: 9, to: 99 }))).toEqual([9, 10]);
      });

      it("rejects negative or fractional bounds as a TypeError", async () => {
        const log = await logWithTen();
        await expect(log.readStream("s1", { from: -1 })).rejects.toThrow(TypeError);
        await expect(log.readStream("s1", { maxCount: 1.5 })).rejects.toThrow(TypeError);
      });

      it("keeps streams whose names share a prefix or hold separators apart", async () => {
        const log = await openLog();
        const names = ["a", "a!0000000000000001", "a!", "ä/ü", "~tilde", "with space"];
        for (const [index, stream] of names.entries()) await log.appendToStream(stream, someEvents(index + 1));
        for (const [index, stream] of names.entries()) {
          const events = await log.readStream(stream);
          expect(positions(events)).toEqual(Array.from({ length: index + 1 }, (_, offset) => offset + 1));
          expect(events.every((event) => event.meta.stream === stream)).toBe(true);
        }
        expect(await log.listStreams()).toEqual([...names].sort());
      });
    });

    describe("readAll", () => {
      it("yields every event in global order across streams", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(2));
        await log.appendToStream("b", someEvents(1));
        await log.appendToStream("a", someEvents(1));
        const all = await collect(log.readAll());
        expect(globalPositions(all)).toEqual([1, 2, 3, 4]);
        expect(all.map((event) => `${event.meta.stream}:${event.meta.streamPosition}`)).toEqual(["a:1", "a:2", "b:1", "a:3"]);
      });

      it("starts after `after` and stops after `limit` events", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(5));
        await log.appendToStream("b", someEvents(5));
        expect(globalPositions(await collect(log.readAll({ after: 3 })))).toEqual([4, 5, 6, 7, 8, 9, 10]);
        expect(globalPositions(await collect(log.readAll({ limit: 2 })))).toEqual([1, 2]);
        expect(globalPositions(await collect(log.readAll({ after: 4, limit: 3 })))).toEqual([5, 6, 7]);
        expect(await collect(log.readAll({ after: 10 }))).toEqual([]);
        expect(await collect(log.readAll({ limit: 0 }))).toEqual([]);
      });

      it("reads a log larger than one page in order", async () => {
        const log = await openLog();
        await log.appendToStream("big", someEvents(700));
        const window = await collect(log.readAll({ after: 250, limit: 400 }));
        expect(globalPositions(window)).toEqual(Array.from({ length: 400 }, (_, index) => 251 + index));
        expect((await collect(log.readAll())).length).toBe(700);
      });

      it("ends where the log ended when reading began, even if the reader appends", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(3));
        let seen = 0;
        for await (const event of log.readAll()) {
          seen += 1;
          await log.appendToStream("echo", [{ type: "test.echoed", data: { of: event.meta.globalPosition } }]);
        }
        expect(seen).toBe(3);
        expect(await log.streamVersion("echo")).toBe(3);
      });
    });

    describe("streamVersion, streamExists and listStreams", () => {
      it("report streams once they have events", async () => {
        const log = await openLog();
        expect(await log.streamExists("b")).toBe(false);
        expect(await log.streamVersion("b")).toBe(0);
        expect(await log.listStreams()).toEqual([]);
        await log.appendToStream("b", someEvents(2));
        await log.appendToStream("a", someEvents(1));
        await expect(log.appendToStream("c", someEvents(1), { expectedStreamVersion: 5 })).rejects.toThrow();
        expect(await log.streamExists("b")).toBe(true);
        expect(await log.streamVersion("b")).toBe(2);
        expect(await log.streamExists("c")).toBe(false);
        expect(await log.listStreams()).toEqual(["a", "b"]);
      });
    });

    describe("subscribe", () => {
      it("tells a listener about each later event, in global order, before the append resolves", async () => {
        const log = await openLog();
        await log.appendToStream("before", someEvents(1));
        const seen: RecordedEvent[] = [];
        log.subscribe((event) => seen.push(event));
        await Promise.all([log.appendToStream("a", someEvents(2)), log.appendToStream("b", someEvents(1))]);
        expect(seen.map((event) => `${event.meta.stream}:${event.meta.globalPosition}`)).toEqual(["a:2", "a:3", "b:4"]);
        await log.appendToStream("a", someEvents(1));
        expect(seen.length).toBe(4);
        expect(seen[3]).toEqual((await log.readStream("a", { from: 3 }))[0]);
      });

      it("filters by stream, and stops after unsubscribing", async () => {
        const log = await openLog();
        const onlyA: string[] = [];
        const stop = log.subscribe((event) => onlyA.push(`${event.meta.stream}:${event.meta.streamPosition}`), { stream: "a" });
        await log.appendToStream("a", someEvents(1));
        await log.appendToStream("b", someEvents(1));
        await log.appendToStream("a", someEvents(1));
        stop();
        stop();
        await log.appendToStream("a", someEvents(1));
        expect(onlyA).toEqual(["a:1", "a:2"]);
      });

      it("does not let a throwing listener break the append or other listeners", async () => {
        const log = await openLog();
        const seen: number[] = [];
        log.subscribe(() => {
          throw new Error("listener bug");
        });
        log.subscribe((event) => seen.push(event.meta.globalPosition));
        await expect(log.appendToStream("a", someEvents(2))).resolves.toMatchObject({ lastGlobalPosition: 2 });
        expect(seen).toEqual([1, 2]);
        expect(await log.streamVersion("a")).toBe(2);
      });

      it("does not tell a listener about an append that conflicted", async () => {
        const log = await openLog();
        const seen: number[] = [];
        log.subscribe((event) => seen.push(event.meta.globalPosition));
        await expect(log.appendToStream("a", someEvents(1), { expectedStreamVersion: 4 })).rejects.toThrow();
        expect(seen).toEqual([]);
      });
    });

    describe("hash chain and verify", () => {
      it("chains each stream: prevHash is the previous event's hash, hash covers the event", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(2));
        await log.appendToStream("b", someEvents(1));
        await log.appendToStream("a", someEvents(1));
        for (const stream of ["a", "b"]) {
          let prevHash = "";
          for (const event of await log.readStream(stream)) {
            expect(event.meta.prevHash).toBe(prevHash);
            expect(event.meta.hash).toMatch(/^[0-9a-f]{64}$/);
            expect(computeEventHash(prevHash, event)).toBe(event.meta.hash);
            prevHash = event.meta.hash;
          }
        }
      });

      it("gives the same events and hashes for the same appends, clock and IDs", async () => {
        const appendAll = async (log: EventLog) => {
          await log.appendToStream("s1", [{ type: "session.opened", data: { title: "hello", tags: ["x"] } }]);
          await log.appendToStream("s1", [{ type: "turn.started", data: { b: 2, a: 1 } }]);
          return log.readStream("s1");
        };
        const first = await appendAll(await openLog({ clock: steppingClock(), ids: counterIds() }));
        const second = await appendAll(await openLog({ clock: steppingClock(), ids: counterIds() }));
        expect(second).toEqual(first);
        // A fixed value, so that any backend (and any future version) that hashes differently fails.
        expect(first[0]?.meta.hash).toBe(GOLDEN_FIRST_HASH);
        expect(first[1]?.meta.hash).toBe(GOLDEN_SECOND_HASH);
      });

      it("verifies an empty log, every stream, or one stream", async () => {
        const log = await openLog();
        expect(await log.verify()).toEqual({ ok: true, checked: 0 });
        await log.appendToStream("a", someEvents(3));
        await log.appendToStream("b", someEvents(2));
        expect(await log.verify()).toEqual({ ok: true, checked: 5 });
        expect(await log.verify({ stream: "b" })).toEqual({ ok: true, checked: 2 });
        expect(await log.verify({ stream: "nobody" })).toEqual({ ok: true, checked: 0 });
      });
    });

    describe("close", () => {
      it("finishes appends already made, then refuses every operation with LogClosedError", async () => {
        const log = await openLog();
        const pending = log.appendToStream("a", someEvents(2));
        await log.close();
        await expect(pending).resolves.toMatchObject({ nextExpectedStreamVersion: 2 });
        await log.close();
        await expect(log.appendToStream("a", someEvents(1))).rejects.toThrow(LogClosedError);
        await expect(log.readStream("a")).rejects.toThrow(LogClosedError);
        await expect(collect(log.readAll())).rejects.toThrow(LogClosedError);
        await expect(log.streamVersion("a")).rejects.toThrow(LogClosedError);
        await expect(log.streamExists("a")).rejects.toThrow(LogClosedError);
        await expect(log.listStreams()).rejects.toThrow(LogClosedError);
        await expect(log.verify()).rejects.toThrow(LogClosedError);
        expect(() => log.subscribe(() => {})).toThrow(LogClosedError);
      });

      it("tells each listener it ended, and ends a follower waiting for more after what it was handed (issue 31: an events() loop never ended)", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(2));
        const ended: unknown[] = [];
        log.subscribe(() => {}, { onEnd: (error) => ended.push(error) });
        const follower = followStream(log, "a");
        const handed = [(await follower.next()).value?.meta.streamPosition, (await follower.next()).value?.meta.streamPosition];
        const waiting = follower.next();
        await log.close();
        expect(handed).toEqual([1, 2]);
        await expect(waiting).resolves.toEqual({ done: true, value: undefined });
        expect(ended).toEqual([undefined]);
      });

      it("stops a readAll that is under way", async () => {
        const log = await openLog();
        await log.appendToStream("a", someEvents(600));
        const seen: number[] = [];
        const reading = (async () => {
          for await (const event of log.readAll()) {
            seen.push(event.meta.globalPosition);
            if (seen.length === 1) await log.close();
          }
        })();
        await expect(reading).rejects.toThrow(LogClosedError);
        expect(seen.length).toBeLessThan(600);
      });
    });
  });
}

/**
 * The hashes of the two events of the determinism test, checked once against an independent
 * computation (Python: sha256 of prevHash + json.dumps(sort_keys, compact)) and kept fixed.
 */
const GOLDEN_FIRST_HASH = "ec10ddedae570d014b5dae30b0462c7e37842d94a64e5d25d213c5a432760fb0";
const GOLDEN_SECOND_HASH = "538a71b6fbbef67e55a38847d2ffe9f8aae070aa47fdf69ff3f7967fa7b3351b";

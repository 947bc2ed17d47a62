import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EventLog, ReadStreamOptions, RecordedEvent } from "../../src/log/event-log.js";
import { followStream } from "../../src/log/follow-stream.js";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";
import { MemoryEventLog } from "../../src/log/memory-event-log.js";

const directories: string[] = [];
const logs: EventLog[] = [];

afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

const backends: Record<string, () => Promise<EventLog>> = {
  MemoryEventLog: async () => new MemoryEventLog(),
  LevelEventLog: async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "turnlog-follow-"));
    directories.push(directory);
    return LevelEventLog.open(directory, { durability: "relaxed" });
  },
};

const note = (n: number) => ({ type: "note.added", data: { n } });

async function append(log: EventLog, stream: string, ...numbers: number[]): Promise<void> {
  await log.appendToStream(stream, numbers.map(note));
}

/** Takes `count` events from the iterator. */
async function take(events: AsyncIterator<RecordedEvent>, count: number): Promise<RecordedEvent[]> {
  const taken: RecordedEvent[] = [];
  while (taken.length < count) {
    const next = await events.next();
    if (next.done === true) break;
    taken.push(next.value);
  }
  return taken;
}

const positions = (events: RecordedEvent[]) => events.map((event) => event.meta.streamPosition);

/**
 * A log whose `readStream` lets a test append while a page is being read — before the read
 * (the event is in the page and in the live tail) or after it (only in the live tail).
 */
function racingLog(inner: EventLog, onRead: (options: ReadStreamOptions | undefined, read: () => Promise<RecordedEvent[]>) => Promise<RecordedEvent[]>): EventLog {
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === "readStream") {
        return (stream: string, options?: ReadStreamOptions) => onRead(options, () => target.readStream(stream, options));
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

for (const [name, open] of Object.entries(backends)) {
  describe(`followStream on ${name}`, () => {
    it("yields the recorded events after `after`, then live ones, in stream order, only from its stream", async () => {
      const log = await open();
      logs.push(log);
      await append(log, "s", 1, 2, 3);
      await append(log, "other", 99);
      const controller = new AbortController();
      const events = followStream(log, "s", { after: 1, signal: controller.signal });
      expect(positions(await take(events, 2))).toEqual([2, 3]);
      await append(log, "other", 98);
      await append(log, "s", 4, 5);
      const live = await take(events, 2);
      expect(positions(live)).toEqual([4, 5]);
      expect(live.map((event) => event.data)).toEqual([{ n: 4 }, { n: 5 }]);
      controller.abort();
      expect(await events.next()).toEqual({ done: true, value: undefined });
    });

    it("misses nothing and repeats nothing when appends land while it catches up", async () => {
      const inner = await open();
      logs.push(inner);
      await append(inner, "s", 1, 2, 3, 4, 5);
      let reads = 0;
      const log = racingLog(inner, async (_options, read) => {
        reads += 1;
        // First page: an append before the read (in the page and in the live tail); second
        // page: an append after the read (in the live tail only).
        if (reads === 1) await append(inner, "s", 6);
        const page = await read();
        if (reads === 2) await append(inner, "s", 7, 8);
        return page;
      });
      const controller = new AbortController();
      const events = followStream(log, "s", { signal: controller.signal, pageSize: 4 });
      const seen = await take(events, 8);
      expect(positions(seen)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(seen.map((event) => (event.data as { n: number }).n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      await append(inner, "s", 9);
      expect(positions(await take(events, 1))).toEqual([9]);
      controller.abort();
      expect((await events.next()).done).toBe(true);
    });

    it("ends a pending wait when the signal aborts, and stops listening", async () => {
      const log = await open();
      logs.push(log);
      const controller = new AbortController();
      const events = followStream(log, "s", { signal: controller.signal });
      const pending = events.next();
      controller.abort();
      expect(await pending).toEqual({ done: true, value: undefined });
      await append(log, "s", 1);
      expect(await events.next()).toEqual({ done: true, value: undefined });
    });

    it("stops listening when a for-await loop breaks, and yields nothing after", async () => {
      const log = await open();
      logs.push(log);
      await append(log, "s", 1, 2);
      const seen: number[] = [];
      const events = followStream(log, "s");
      for await (const event of events) {
        seen.push(event.meta.streamPosition);
        if (seen.length === 2) break;
      }
      await append(log, "s", 3);
      expect(seen).toEqual([1, 2]);
      expect(await events.next()).toEqual({ done: true, value: undefined });
    });

    it("ends at once when the signal is already aborted", async () => {
      const log = await open();
      logs.push(log);
      await append(log, "s", 1);
      const events = followStream(log, "s", { signal: AbortSignal.abort() });
      expect(await events.next()).toEqual({ done: true, value: undefined });
    });
  });
}

describe("followStream's arguments", () => {
  it("refuses a position that is not a non-negative integer", () => {
    const log = new MemoryEventLog();
    expect(() => followStream(log, "s", { after: -1 })).toThrow(TypeError);
    expect(() => followStream(log, "s", { after: 1.5 })).toThrow(TypeError);
  });

  it("returns its listener to the log when it ends", async () => {
    const inner = new MemoryEventLog();
    let listening = 0;
    const log = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === "subscribe") {
          return (...args: Parameters<EventLog["subscribe"]>) => {
            listening += 1;
            const unsubscribe = target.subscribe(...args);
            return () => {
              listening -= 1;
              unsubscribe();
            };
          };
        }
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const events = followStream(log, "s");
    expect(listening).toBe(1);
    await events.return?.();
    expect(listening).toBe(0);
  });
});

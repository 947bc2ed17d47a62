import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createRuntime, PositionOutOfRangeError, SnapshotCache, UnknownSessionError } from "../../src/index.js";
import type { ReadStreamOptions, RecordedEvent, RecordedTurnlogEvent, Runtime, SessionState } from "../../src/index.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/** A log that records every `readStream` call, to check that folds read in pages and resume from snapshots. */
class CountingLog extends MemoryEventLog {
  reads: ReadStreamOptions[] = [];
  override readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.reads.push(options);
    return super.readStream(stream, options);
  }
}

const iterations = 55;
const readsPerIteration = 48;
let log: CountingLog;
let runtime: Runtime;
let events: RecordedTurnlogEvent[];
/** reference[n - 1] = the full fold of events 1..n, computed once, incrementally. */
let reference: SessionState[];

/**
 * One long real session: a single user message whose provider asks for 48 reads per iteration,
 * 55 times, then answers — about 5 700 events, every one appended by the runtime.
 */
beforeAll(async () => {
  const ws = workspace();
  const script: ScriptStep[] = [];
  for (let iteration = 0; iteration < iterations; iteration += 1) {
    script.push({
      toolCalls: Array.from({ length: readsPerIteration }, (_, index) => ({
        id: `call_${iteration}_${index}`,
        name: "read_file",
        arguments: JSON.stringify({ path: index % 2 === 0 ? "a.txt" : "b.txt" }),
      })),
    });
  }
  script.push({ content: "read them all" });
  log = new CountingLog({ clock: steppingClock(), ids: sequentialIds("event") });
  runtime = await createRuntime({
    log,
    provider: scriptedProvider(script),
    tools: ws.tools,
    clock: steppingClock(),
    ids: sequentialIds("session"),
    concurrency: 16,
    budgets: { maxIterations: 1_000, maxToolCalls: 100_000, maxToolCallsPerTurn: 1_000, wallClockMs: 1e12 },
  });
  const session = await runtime.openSession("long");
  const outcome = await session.send("read everything, many times");
  expect(outcome.status).toBe("completed");
  events = await runtime.events("long");
  reference = [];
  let state = sessionStateProjection.initialState();
  for (const event of events) {
    state = foldEvents(sessionStateProjection, [event], state);
    reference.push(state);
  }
}, 120_000);

describe("runtime.stateAt (time travel)", () => {
  it("generated a long session", () => {
    expect(events.length).toBeGreaterThan(5_000);
    expect(reference.at(-1)?.lastOutcome?.status).toBe("completed");
  });

  it("equals a full fold of the prefix (foldEvents over events.slice(0, n))", async () => {
    for (const n of [1, 2, 999, 1_000, 1_001, 3_333, events.length]) {
      expect(await runtime.stateAt("long", n)).toEqual(foldEvents(sessionStateProjection, events.slice(0, n)));
    }
  });

  it("equals the full fold at random positions, in any order, repeated and descending (fast-check)", async () => {
    const caches = [new SnapshotCache(), new SnapshotCache({ every: 97, maxSnapshots: 4, pageSize: 50 }), new SnapshotCache({ every: 1, maxSnapshots: 3, pageSize: 2_000 })];
    const position = fc.integer({ min: 1, max: events.length });
    const queries = fc.oneof(
      fc.array(position, { minLength: 1, maxLength: 6 }),
      fc.array(position, { minLength: 2, maxLength: 6 }).map((positions) => positions.sort((a, b) => b - a)),
      position.map((p) => [p, p, p]),
    );
    await fc.assert(
      fc.asyncProperty(queries, fc.integer({ min: 0, max: caches.length }), async (positions, which) => {
        for (const p of positions) {
          const state = which === caches.length ? await runtime.stateAt("long", p) : await caches[which]!.stateAt(log, "long", p);
          expect(state.position).toBe(p);
          expect(state).toEqual(reference[p - 1]);
        }
      }),
      { numRuns: 20 },
    );
    for (const cache of caches) expect(cache.size).toBeLessThanOrEqual(cache.maxSnapshots);
  }, 120_000);

  it("reads in pages and folds only from the nearest snapshot at or below the position", async () => {
    const cache = new SnapshotCache({ every: 1_000, pageSize: 500 });
    log.reads = [];
    await cache.stateAt(log, "long", 4_321);
    expect(log.reads.every((read) => (read.maxCount ?? Infinity) <= 500)).toBe(true);
    expect(log.reads).toHaveLength(Math.ceil(4_321 / 500));
    expect(cache.size).toBe(4);

    log.reads = [];
    expect(await cache.stateAt(log, "long", 4_100)).toEqual(reference[4_099]);
    expect(log.reads).toEqual([{ from: 4_001, to: 4_100, maxCount: 100 }]);

    log.reads = [];
    expect(await cache.stateAt(log, "long", 4_000)).toEqual(reference[3_999]);
    expect(log.reads).toEqual([]);

    // Snapshots are throw-away: a cleared cache refolds from the start, with the same result.
    cache.clear();
    log.reads = [];
    expect(await cache.stateAt(log, "long", 4_100)).toEqual(reference[4_099]);
    expect(log.reads[0]).toMatchObject({ from: 1 });
  });

  it("keeps at most maxSnapshots, dropping the least recently used", async () => {
    const cache = new SnapshotCache({ every: 100, maxSnapshots: 5 });
    await cache.stateAt(log, "long", 2_000);
    expect(cache.size).toBe(5);
    log.reads = [];
    // 1 600..2 000 are held; 1 500 was evicted, so 1 550 folds from the start.
    await cache.stateAt(log, "long", 1_550);
    expect(log.reads[0]).toMatchObject({ from: 1 });
  });

  it("hands out frozen states, also when it folded far from any snapshot in place", async () => {
    const cache = new SnapshotCache({ every: 100 });
    for (const position of [5_000, 2_345]) {
      const state = await cache.stateAt(log, "long", position);
      expect(state).toEqual(reference[position - 1]);
      expect(Object.isFrozen(state) && Object.isFrozen(state.messages) && Object.isFrozen(state.turns[0])).toBe(true);
      expect(() => state.calls.clear()).toThrow();
    }
    // The snapshot the in-place fold left behind is the state at its position.
    log.reads = [];
    expect(await cache.stateAt(log, "long", 4_601)).toEqual(reference[4_600]);
    expect(log.reads[0]).toMatchObject({ from: 4_601 });
  });

  it("says which position is missing when the log loses events mid-fold, whatever the page read ahead does", async () => {
    // The in-place fold reads the next page while folding the current one: a hole at 2 001 must be
    // reported as such even though the read of the page after it fails too.
    const holed = Object.create(log) as CountingLog;
    holed.readStream = async (stream, options = {}) => {
      if (options.from === 2_001) return [];
      if ((options.from ?? 1) > 2_001) throw new Error("disk gone");
      return log.readStream(stream, options);
    };
    const cache = new SnapshotCache({ every: 100, pageSize: 1_000 });
    await expect(cache.stateAt(holed, "long", 5_500)).rejects.toThrow('session "long": no event at position 2001 although its version is');
    // Nothing of the failed fold was kept: the intact log still folds to the reference.
    expect(await cache.stateAt(log, "long", 5_500)).toEqual(reference[5_499]);
  });

  it("rejects positions outside the stream clearly", async () => {
    await expect(runtime.stateAt("long", 0)).rejects.toThrow(TypeError);
    await expect(runtime.stateAt("long", -3)).rejects.toThrow(TypeError);
    await expect(runtime.stateAt("long", 1.5)).rejects.toThrow(TypeError);
    await expect(runtime.stateAt("long", events.length + 1)).rejects.toThrow(PositionOutOfRangeError);
    await expect(runtime.stateAt("long", events.length + 1)).rejects.toThrow(`session "long" has ${events.length} events; position ${events.length + 1} is beyond its end`);
    await expect(runtime.stateAt("nope", 1)).rejects.toThrow(UnknownSessionError);
  });
});

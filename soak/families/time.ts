/**
 * The `time` family (docs/reliability.md): sessions whose injected wall clock steps back (by a
 * millisecond up to an hour) and forward again between events, while the monotonic clock
 * advances steadily, each run beside the same session with a well-behaved clock.
 *
 * A case is one seeded session: a first user message answered at once, then a second one whose
 * turns each run a tool that takes a seeded time (the fake clocks advance by it) until the
 * wall-clock budget stops the turn or the script ends. The wall clock reads `true time + offset`,
 * the offset changing on every reading among seeded values ≤ 0 (the clock falls behind and catches
 * up; a clock running ahead of time is indistinguishable from time passing). Most sessions run on
 * a `MemoryEventLog`, some on a `LevelEventLog` on disk that is closed and opened again between
 * the two messages (a resumed session in a new log instance: nothing of the old one's memory).
 *
 * Invariants, each against the log as stored:
 * - `recordedAt` never decreases along the session's stream; positions increase by one;
 * - the log is the reference's, event for event (type, data, `recordedAt`, hash): so the
 *   wall-clock budget fired exactly where it fires without the jumps, and tool durations are the
 *   same;
 * - replay of both is identical.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../src/index.js";
import type { Clock, EventLog, Provider, RecordedEvent } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds } from "../../test/support/tools.js";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";

/** What one case runs: everything drawn from the seed. */
export interface TimeCase {
  backend: "memory" | "level";
  /** The agent's working time per user message, in ms. */
  wallClockMs: number;
  /** How long each tool call takes (the fake clocks advance by it while it runs). */
  toolMs: number[];
  /** How long each provider call takes. */
  providerMs: number;
  /** The wall clock's offset from true time, one per reading, in turn (the first is 0). */
  offsets: number[];
}

const hour = 60 * 60 * 1000;

/** The arbitrary every case is drawn from; `fc.sample` with the case's own seed draws it. */
export const timeCaseArbitrary: fc.Arbitrary<TimeCase> = fc.record({
  backend: fc.constantFrom<TimeCase["backend"]>("memory", "memory", "memory", "memory", "memory", "memory", "memory", "memory", "memory", "level"),
  wallClockMs: fc.integer({ min: 1_000, max: 30_000 }),
  toolMs: fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 24 }),
  providerMs: fc.integer({ min: 0, max: 800 }),
  offsets: fc
    .array(fc.oneof({ arbitrary: fc.constant(0), weight: 2 }, { arbitrary: fc.integer({ min: -hour, max: -1 }), weight: 3 }), { minLength: 1, maxLength: 40 })
    .map((offsets) => [0, ...offsets]),
});

/** The case at `index` of a run seeded `seed`: the same pair always gives the same case. */
export function timeCaseAt(seed: number, index: number): TimeCase {
  const [drawn] = fc.sample(timeCaseArbitrary, { seed: (seed * 1_000_003 + index) | 0, numRuns: 1 });
  if (drawn === undefined) throw new Error("fast-check drew no case");
  return drawn;
}

/** True time and a wall clock that reads it plus the next offset of a cycle (none: exact). */
class JumpingClock implements Clock {
  #elapsed = 0;
  #reads = 0;
  constructor(
    private readonly start: number,
    private readonly offsets: readonly number[],
  ) {}
  now(): number {
    const offset = this.offsets.length === 0 ? 0 : (this.offsets[this.#reads % this.offsets.length] ?? 0);
    this.#reads += 1;
    return this.start + this.#elapsed + offset;
  }
  monotonic(): number {
    return this.#elapsed;
  }
  advance(ms: number): void {
    this.#elapsed += ms;
  }
  /** How many readings stepped the wall clock back from the one before. */
  get backwardSteps(): number {
    let steps = 0;
    for (let read = 1; read < this.#reads; read += 1) {
      const before = this.offsets[(read - 1) % this.offsets.length] ?? 0;
      if ((this.offsets[read % this.offsets.length] ?? 0) < before) steps += 1;
    }
    return steps;
  }
}

interface RunResult {
  events: RecordedEvent[];
  outcome: string;
  identical: boolean;
  divergences: string;
  backwardSteps: number;
}

const sessionId = "time-1";

/** Runs the case's session once: with the case's jumps, or (`jumps` false) with an exact clock. */
async function runSession(spec: TimeCase, jumps: boolean, directory: string | undefined): Promise<RunResult> {
  const clock = new JumpingClock(Date.UTC(2026, 0, 1), jumps ? spec.offsets : []);
  const work = defineTool({
    name: "work",
    description: "Works for a while",
    risk: "read-only-local",
    input: z.object({ ms: z.number().int().nonnegative() }),
    run: ({ ms }) => {
      clock.advance(ms);
      return `worked ${ms} ms`;
    },
  });
  const script: ScriptStep[] = [
    { content: "ready" },
    ...spec.toolMs.map((ms, index): ScriptStep => ({ toolCalls: [{ id: `call_${index}`, name: "work", arguments: JSON.stringify({ ms }) }] })),
    { content: "done" },
  ];
  const scripted = scriptedProvider(script);
  const provider: Provider = {
    id: scripted.id,
    format: scripted.format,
    complete: (request, options) => {
      clock.advance(spec.providerMs);
      return scripted.complete(request, options);
    },
  };
  const logIds = sequentialIds("event");
  const runtimeIds = sequentialIds("id");
  const openLog = async (): Promise<EventLog> =>
    directory === undefined ? new MemoryEventLog({ clock, ids: logIds }) : LevelEventLog.open(directory, { durability: "relaxed", clock, ids: logIds });
  const start = async (log: EventLog) => createRuntime({ log, provider, tools: [work], clock, ids: runtimeIds, budgets: { wallClockMs: spec.wallClockMs, maxToolCalls: 1_000, maxIterations: 1_000 } });

  let log = await openLog();
  let runtime = await start(log);
  try {
    await (await runtime.openSession(sessionId)).send("get ready");
    if (directory !== undefined) {
      // A resumed session: a new log instance and runtime, knowing only what the log holds.
      await runtime.close();
      await log.close();
      log = await openLog();
      runtime = await start(log);
    }
    const outcome = await (await runtime.openSession(sessionId, { create: false })).send("work");
    const events = await runtime.events(sessionId);
    const report = await runtime.replay(sessionId);
    return {
      events,
      outcome: `${outcome.status}${"reason" in outcome && outcome.reason !== undefined ? `:${outcome.reason}` : ""}`,
      identical: report.identical,
      divergences: JSON.stringify(report.divergences).slice(0, 400),
      backwardSteps: clock.backwardSteps,
    };
  } finally {
    await runtime.close();
    await log.close();
  }
}

/** What broke in a case, or `undefined` when every invariant held. */
export async function checkTimeCase(spec: TimeCase): Promise<{ broke?: string; wallClockStop: boolean; backwardSteps: number; events: number }> {
  const directories: string[] = [];
  const directory = async () => {
    if (spec.backend === "memory") return undefined;
    const made = await mkdtemp(join(tmpdir(), "turnlog-soak-time-"));
    directories.push(made);
    return made;
  };
  try {
    const jumped = await runSession(spec, true, await directory());
    const reference = await runSession(spec, false, await directory());
    const result = { wallClockStop: reference.outcome === "stopped:budget:wall-clock", backwardSteps: jumped.backwardSteps, events: jumped.events.length };
    const broke = (what: string) => ({ ...result, broke: what });
    let previous: RecordedEvent | undefined;
    for (const event of jumped.events) {
      if (previous !== undefined) {
        if (event.meta.recordedAt < previous.meta.recordedAt) {
          return broke(`recordedAt went back at position ${event.meta.streamPosition}: ${previous.meta.recordedAt} → ${event.meta.recordedAt}`);
        }
        if (event.meta.streamPosition !== previous.meta.streamPosition + 1 || event.meta.globalPosition <= previous.meta.globalPosition) {
          return broke(`positions do not increase at stream position ${event.meta.streamPosition} (global ${event.meta.globalPosition})`);
        }
      }
      previous = event;
    }
    if (jumped.outcome !== reference.outcome) return broke(`the session ended ${jumped.outcome}, with an exact clock ${reference.outcome}`);
    if (jumped.events.length !== reference.events.length) {
      return broke(`${jumped.events.length} events, with an exact clock ${reference.events.length} (first difference: ${firstDifference(jumped.events, reference.events)})`);
    }
    const difference = firstDifference(jumped.events, reference.events);
    if (difference !== undefined) return broke(`differs from the session with an exact clock: ${difference}`);
    if (!jumped.identical) return broke(`replay is not identical: ${jumped.divergences}`);
    if (!reference.identical) return broke(`replay of the exact-clock session is not identical: ${reference.divergences}`);
    return result;
  } finally {
    for (const made of directories) await rm(made, { recursive: true, force: true });
  }
}

function firstDifference(actual: readonly RecordedEvent[], expected: readonly RecordedEvent[]): string | undefined {
  for (let index = 0; index < Math.min(actual.length, expected.length); index += 1) {
    const a = actual[index]!;
    const b = expected[index]!;
    if (a.type !== b.type) return `position ${a.meta.streamPosition}: ${a.type}, expected ${b.type}`;
    if (a.meta.recordedAt !== b.meta.recordedAt) return `position ${a.meta.streamPosition} (${a.type}): recordedAt ${a.meta.recordedAt}, expected ${b.meta.recordedAt}`;
    if (JSON.stringify(a.data) !== JSON.stringify(b.data)) return `position ${a.meta.streamPosition} (${a.type}): data ${JSON.stringify(a.data).slice(0, 200)}, expected ${JSON.stringify(b.data).slice(0, 200)}`;
    if (a.meta.hash !== b.meta.hash) return `position ${a.meta.streamPosition} (${a.type}): hash differs`;
  }
  return actual.length === expected.length ? undefined : `position ${Math.min(actual.length, expected.length) + 1}`;
}

export const time: SoakFamily = {
  name: "time",
  soakCount: 2_000,
  ciCount: 20,
  async run({ seed, count, log }: SoakOptions): Promise<SoakResult> {
    let passed = 0;
    let wallClockStops = 0;
    let backwardSteps = 0;
    let events = 0;
    let onDisk = 0;
    const failures: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const spec = timeCaseAt(seed, index);
      if (spec.backend === "level") onDisk += 1;
      try {
        const result = await checkTimeCase(spec);
        wallClockStops += result.wallClockStop ? 1 : 0;
        backwardSteps += result.backwardSteps;
        events += result.events;
        if (result.broke === undefined) passed += 1;
        else failures.push(`seed ${seed} case ${index} (${spec.backend}): ${result.broke}`);
      } catch (error) {
        failures.push(`seed ${seed} case ${index} (${spec.backend}): threw ${String((error as Error)?.stack ?? error)}`);
      }
      if ((index + 1) % 200 === 0) log(`${index + 1}/${count} sessions, ${failures.length} failed`);
    }
    return {
      passed,
      failed: failures.length,
      summary: `${count} sessions (${onDisk} on LevelDB, reopened), ${events} events, ${backwardSteps} backward clock steps; the wall-clock budget stopped ${wallClockStops} of them, each where the exact clock stops it`,
      failures,
    };
  },
};

/**
 * Where the `kill` family SIGKILLs a child, as seeded data, and the line of the child's output
 * each kill waits for.
 */
import fc from "fast-check";
import type { KillTrigger } from "../../test/support/killable-child.js";

/** Where a host is killed, relative to what it printed in the run the kill is for. */
export type KillPoint =
  /** Right after this run's n-th acknowledged event: between appends. */
  | { kind: "ack"; nth: number }
  /** `delayMs` into this run's n-th provider call (the model thinks 20–50 ms). */
  | { kind: "provider"; nth: number; delayMs: number }
  /** `delayMs` after a provider attempt failed transiently: in the retry's wait or its attempt. */
  | { kind: "retry"; delayMs: number }
  /** `delayMs` into the n-th `charge` / `deploy` of this run, before its side effect (30 ms in). */
  | { kind: "before-effect"; nth: number; delayMs: number }
  /** `delayMs` after the n-th local side effect of this run, before the call's outcome is logged. */
  | { kind: "after-effect"; nth: number; delayMs: number }
  /** `delayMs` into the n-th MCP `ship` of this run: its effect is written 30 ms in, it answers 60 ms in. */
  | { kind: "mcp"; nth: number; delayMs: number }
  /** `delayMs` after the host reported the `deploy` session parked for an approval. */
  | { kind: "approval"; delayMs: number }
  /** `afterReadyMs` after the host opened (recovered) its sessions: anywhere at all. */
  | { kind: "time"; afterReadyMs: number };

export const killPoint: fc.Arbitrary<KillPoint> = fc.oneof(
  fc.record({ kind: fc.constant("ack" as const), nth: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ kind: fc.constant("provider" as const), nth: fc.integer({ min: 1, max: 4 }), delayMs: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant("retry" as const), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("before-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("after-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("mcp" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 70 }) }),
  fc.record({ kind: fc.constant("approval" as const), delayMs: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant("time" as const), afterReadyMs: fc.integer({ min: 0, max: 1_500 }) }),
);

export function describeScenarioKill(kill: ScenarioKill): string {
  return `${describeKill(kill.point)} (else ${kill.fallbackMs} ms after ready)`;
}

export function describeKill(kill: KillPoint): string {
  switch (kill.kind) {
    case "ack":
      return `after ack #${kill.nth}`;
    case "provider":
      return `${kill.delayMs} ms into provider call #${kill.nth}`;
    case "retry":
      return `${kill.delayMs} ms after a transient provider failure`;
    case "before-effect":
      return `${kill.delayMs} ms into side-effecting call #${kill.nth}`;
    case "after-effect":
      return `${kill.delayMs} ms after side effect #${kill.nth}`;
    case "mcp":
      return `${kill.delayMs} ms into MCP ship #${kill.nth}`;
    case "approval":
      return `${kill.delayMs} ms after parking for approval`;
    case "time":
      return `${kill.afterReadyMs} ms after ready`;
  }
}


const nthOf = (matches: (line: string) => boolean, nth: number) => (line: string, index: number, lines: readonly string[]) =>
  matches(line) && lines.slice(0, index + 1).filter(matches).length >= nth;
const isEffectBegin = (line: string) => line.startsWith("begin ") && !line.endsWith(" read_order");

export function killTrigger(kill: KillPoint): KillTrigger {
  switch (kill.kind) {
    case "ack":
      return { when: nthOf((line) => line.startsWith("ack "), kill.nth), delayMs: 0 };
    case "provider":
      return { when: nthOf((line) => line.startsWith("provider "), kill.nth), delayMs: kill.delayMs };
    case "retry":
      return { when: (line) => line.startsWith("provider-fail "), delayMs: kill.delayMs };
    case "before-effect":
      return { when: nthOf(isEffectBegin, kill.nth), delayMs: kill.delayMs };
    case "after-effect":
      return { when: nthOf((line) => line.startsWith("effect "), kill.nth), delayMs: kill.delayMs };
    case "mcp":
      return { when: nthOf((line) => line.startsWith("mcp-begin "), kill.nth), delayMs: kill.delayMs };
    case "approval":
      return { when: (line) => line.startsWith("parked "), delayMs: kill.delayMs };
    case "time":
      return { when: (line) => line === "ready", delayMs: kill.afterReadyMs };
  }
}

/** A command another process runs on the log while a host holds it. */
export type ReaderCommand = "events" | "audit" | "verify" | "show" | "sessions";

/** A reader started `afterReadyMs` after a host run's `ready`, running `command` on the log. */
export interface ReaderPlan {
  afterReadyMs: number;
  command: ReaderCommand;
  sessionId: "pay" | "ship" | "deploy";
}

/**
 * A kill point of a scenario, and when the kill lands if the run never reaches it (the point was
 * passed in an earlier run, say, or this run has no provider failure left): `fallbackMs` after
 * `ready`. Without it a kill point the session can no longer reach would let the host finish.
 */
export interface ScenarioKill {
  point: KillPoint;
  fallbackMs: number;
}

/** One scenario: its kills in order, and for each host run, whether a reader runs beside it. */
export interface KillScenario {
  kills: ScenarioKill[];
  readers: (ReaderPlan | null)[];
}

const readerPlan: fc.Arbitrary<ReaderPlan> = fc.record({
  afterReadyMs: fc.integer({ min: 0, max: 600 }),
  command: fc.constantFrom<ReaderCommand>("events", "events", "audit", "verify", "show", "sessions"),
  sessionId: fc.constantFrom("pay" as const, "ship" as const, "deploy" as const),
});

/** Host runs a scenario may take: its kills, a few finishing runs, and an approval's restarts. */
export const maxHostRuns = 40;

export const killScenario: fc.Arbitrary<KillScenario> = fc.record({
  // Many kills per scenario: the finishing runs, the approver and the checks are paid once for all.
  kills: fc.array(fc.record({ point: killPoint, fallbackMs: fc.integer({ min: 100, max: 1_500 }) }), { minLength: 8, maxLength: 16 }),
  // About one host run in six has a reader beside it: a reader is a whole CLI start.
  readers: fc.array(fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: readerPlan, weight: 1 }), { minLength: maxHostRuns, maxLength: maxHostRuns }),
});

import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog } from "../../src/index.js";
import type { Provider, RecordedEvent, ReplayReport, SendOutcome, VerifyReport } from "../../src/index.js";
import { superviseChild } from "../support/killable-child.js";
import type { KillTrigger } from "../support/killable-child.js";
import { startBundledChild } from "../support/bundled-child.js";
import { crashPolicy, crashSessionId, crashTools, finalAnswer } from "../support/crash-session-script.js";

/**
 * docs/design.md#4-the-log and docs/design.md#7-recovery-and-many-hosts under real process death: a child runs a session whose tool charges money,
 * the parent SIGKILLs it at seeded points (during a provider call, before and after a charge's
 * side effect, right after an append, at a random time), restarts it until it finishes, then
 * checks invariants only — never timings:
 *
 * 1. the log verifies;
 * 2. every event a killed child saw acknowledged is in the log, unchanged;
 * 3. no charge ran twice, every charge that ran has a `turn.tool.started`, every started charge
 *    has exactly one end (an in-doubt one is `interrupted`), and no call is left in doubt;
 * 4. the session ends (completed, or stopped/failed with a recorded reason) and replays with no
 *    divergence.
 *
 * Reproduce a run with TURNLOG_CRASH_SEED=<seed>. A second block holds one call mid-run before the
 * kill, so that the in-doubt paths are exercised on every run, not only when a seeded kill hits them.
 */

const seed = Number(process.env.TURNLOG_CRASH_SEED ?? 20_260_317);
const scenarioCount = 26;
/** Scenarios run two at a time: a child mostly sleeps, but starting one is CPU-bound. */
const parallelScenarios = 2;
/** A child that has not finished by then is hung, which is a failure of its own. A child takes about a second alone. */
const childDeadlineMs = 60_000;
/**
 * How long a test may wait for its scenario (at most three children, two scenarios at a time): a
 * hang guard, far above the seconds a scenario takes alone, so that a loaded machine never trips it.
 */
const scenarioDeadlineMs = 300_000;

/** Where a child is killed, relative to what it printed. */
type KillPoint =
  /** Right after the append that made stream position ≥ `position` durable: between appends. */
  | { kind: "ack"; position: number }
  /** `delayMs` into a provider call (the model takes 30–80 ms). */
  | { kind: "provider"; delayMs: number }
  /** `delayMs` into the n-th `charge` this child starts, before its side effect (40 ms in). */
  | { kind: "before-effect"; nth: number; delayMs: number }
  /** `delayMs` after the n-th side effect of this child, before the charge's outcome is logged. */
  | { kind: "after-effect"; nth: number; delayMs: number }
  /** `afterReadyMs` after the child opened (recovered) the session: anywhere at all. */
  | { kind: "time"; afterReadyMs: number };

const killPoint: fc.Arbitrary<KillPoint> = fc.oneof(
  // A run without a crash appends 46 events; the second kill of a scenario may name a position
  // the log already holds, and then lands right after the child's first durable append.
  fc.record({ kind: fc.constant("ack" as const), position: fc.integer({ min: 2, max: 45 }) }),
  fc.record({ kind: fc.constant("provider" as const), delayMs: fc.integer({ min: 0, max: 25 }) }),
  fc.record({ kind: fc.constant("before-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("after-effect" as const), nth: fc.integer({ min: 1, max: 2 }), delayMs: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ kind: fc.constant("time" as const), afterReadyMs: fc.integer({ min: 0, max: 800 }) }),
);

/** One to two kills, then a run to the end. */
const scenarios: KillPoint[][] = fc.sample(fc.array(killPoint, { minLength: 1, maxLength: 2 }), { seed, numRuns: scenarioCount });

function describeKill(kill: KillPoint): string {
  switch (kill.kind) {
    case "ack":
      return `after ack ≥ ${kill.position}`;
    case "provider":
      return `${kill.delayMs} ms into a provider call`;
    case "before-effect":
      return `${kill.delayMs} ms into charge #${kill.nth}`;
    case "after-effect":
      return `${kill.delayMs} ms after side effect #${kill.nth}`;
    case "time":
      return `${kill.afterReadyMs} ms after ready`;
  }
}

interface ChildRun {
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The kill reached the child before it finished its work. */
  killedMidRun: boolean;
}

const isBeginCharge = (line: string) => line.startsWith("begin ") && line.endsWith(" charge");
const isEffect = (line: string) => line.startsWith("effect ");

function trigger(kill: KillPoint): KillTrigger {
  const nthOf = (matches: (line: string) => boolean, nth: number) => (line: string, index: number, lines: readonly string[]) =>
    matches(line) && lines.slice(0, index + 1).filter(matches).length >= nth;
  switch (kill.kind) {
    case "ack":
      return { when: (line) => line.startsWith("ack ") && Number(line.split(" ")[1]) >= kill.position, delayMs: 0 };
    case "provider":
      return { when: (line) => line.startsWith("provider "), delayMs: kill.delayMs };
    case "before-effect":
      return { when: nthOf(isBeginCharge, kill.nth), delayMs: kill.delayMs };
    case "after-effect":
      return { when: nthOf(isEffect, kill.nth), delayMs: kill.delayMs };
    case "time":
      return { when: (line) => line.startsWith("ready "), delayMs: kill.afterReadyMs };
  }
}

/** Runs the child once, SIGKILLing it at `kill` (or letting it finish), and waits for all its output. */
async function runChild(directory: string, kill: KillTrigger | undefined, extraArguments: readonly string[] = []): Promise<ChildRun> {
  // Bundled once per test process: under tsx each of the ~70 children would transpile the sources again.
  const child = await startBundledChild("crash-session-child.ts", [join(directory, "log"), join(directory, "workspace"), join(directory, "effects.txt"), ...extraArguments]);
  const run = await superviseChild(child, kill, childDeadlineMs);
  const finished = run.lines.some((line) => line.startsWith("final "));
  if (run.hung) throw new Error(`the child hung for ${childDeadlineMs} ms; stderr:\n${run.stderr}`);
  if (!finished && run.signal !== "SIGKILL") throw new Error(`the child failed (exit ${run.code}); stderr:\n${run.stderr}`);
  return { ...run, killedMidRun: run.killedBy !== undefined && !finished };
}

/** What the children left behind, gathered once so each invariant can be asserted on its own. */
interface Aftermath {
  runs: ChildRun[];
  killsLanded: number;
  /** Every `ack` any child printed: stream position, type, hash. */
  acknowledged: { position: number; type: string; hash: string }[];
  finalLine: string;
  events: RecordedEvent[];
  /** Call IDs in the order `charge` wrote them. */
  effects: string[];
  verify: VerifyReport;
  replay: ReplayReport;
  /** Opening and resuming the finished session again, in the parent. */
  reopened: { outcome: SendOutcome; eventsAfter: number };
}

const refusingProvider: Provider = {
  id: "crash-scripted",
  format: "openai-chat",
  complete() {
    throw new Error("the parent replays the session; it never calls the provider");
  },
};

async function newScenarioDirectory(root: string, name: string): Promise<string> {
  const directory = join(root, name);
  await mkdir(join(directory, "workspace"), { recursive: true });
  return directory;
}

/** Runs children, each killed at its trigger, until one is not killed mid-run, then one to the end. */
async function crashAndResume(directory: string, kills: readonly { trigger: KillTrigger; extraArguments?: string[] }[]): Promise<Aftermath> {
  const runs: ChildRun[] = [];
  for (const kill of kills) {
    const run = await runChild(directory, kill.trigger, kill.extraArguments);
    runs.push(run);
    if (!run.killedMidRun) break;
  }
  if (runs.length === 0 || runs.at(-1)?.killedMidRun) runs.push(await runChild(directory, undefined));
  const finalRun = runs.at(-1) as ChildRun;
  if (finalRun.code !== 0) throw new Error(`the last child exited with ${finalRun.code}; stderr:\n${finalRun.stderr}`);
  const finalLine = finalRun.lines.find((line) => line.startsWith("final ")) ?? "";
  const acknowledged = runs.flatMap((run) =>
    run.lines
      .filter((line) => line.startsWith("ack "))
      .map((line) => {
        const [, position, type, hash] = line.split(" ");
        return { position: Number(position), type: type ?? "", hash: hash ?? "" };
      }),
  );
  const effects = (await readFile(join(directory, "effects.txt"), "utf8").catch(() => "")).split("\n").filter((line) => line !== "");

  const log = await LevelEventLog.open(join(directory, "log"), { durability: "sync" });
  try {
    const runtime = await createRuntime({
      log,
      provider: refusingProvider,
      tools: crashTools(join(directory, "never-written.txt")),
      policy: crashPolicy(join(directory, "workspace")),
    });
    const verify = await runtime.verify();
    const events = await runtime.events(crashSessionId);
    const replay = await runtime.replay(crashSessionId);
    // Opening a finished session again recovers nothing and runs nothing.
    const session = await runtime.openSession(crashSessionId);
    const outcome = await session.resume();
    const eventsAfter = (await runtime.events(crashSessionId)).length;
    return {
      runs,
      killsLanded: runs.filter((run) => run.killedMidRun).length,
      acknowledged,
      finalLine,
      events,
      effects,
      verify,
      replay,
      reopened: { outcome, eventsAfter },
    };
  } finally {
    await log.close();
  }
}

const terminalToolEvents = new Set(["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"]);
const callIdOf = (event: RecordedEvent) => (event.data as { callId?: string }).callId ?? "";
const packetsOf = (events: readonly RecordedEvent[]) =>
  events
    .filter((event) => event.type === "turn.results.packetized")
    .flatMap((event) => (event.data as { packets: { callId: string; ok: boolean; content: string }[] }).packets);

/** The session ended: completed with the scripted answer, or stopped/failed for a recorded reason. */
function expectFinished({ events, finalLine, reopened }: Aftermath): void {
  const last = events.at(-1);
  expect(["turn.completed", "turn.stopped", "turn.failed"]).toContain(last?.type);
  if (last?.type === "turn.completed") {
    expect(finalLine).toBe(`final completed ${finalAnswer}`);
  } else {
    expect((last?.data as { reason?: string }).reason).toMatch(/\S/);
    expect(finalLine).toMatch(/^final (stopped|failed) \S/);
  }
  expect(reopened.eventsAfter).toBe(events.length);
  expect(`final ${reopened.outcome.status} ${reopened.outcome.text ?? reopened.outcome.reason ?? ""}`).toBe(finalLine);
}

describe("crash recovery: a session SIGKILLed at seeded points", () => {
  let root = "";
  /**
   * Each scenario's aftermath, or the error that ended it (never a rejection, so none goes
   * unhandled). The scenarios start in `beforeAll` and each test awaits its own: a scenario that
   * fails or hangs fails its tests with its error, where a hook timeout would skip them all.
   */
  const outcomes: Promise<Aftermath | Error>[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "turnlog-crash-"));
    const settle = scenarios.map(() => {
      let done: (outcome: Aftermath | Error) => void = () => {};
      outcomes.push(new Promise((resolve) => (done = resolve)));
      return done;
    });
    let next = 0;
    const worker = async () => {
      while (next < scenarios.length) {
        const index = next;
        next += 1;
        try {
          const directory = await newScenarioDirectory(root, `scenario-${index}`);
          const kills = (scenarios[index] ?? []).map((kill) => ({ trigger: trigger(kill) }));
          settle[index]?.(await crashAndResume(directory, kills));
        } catch (error) {
          settle[index]?.(error instanceof Error ? error : new Error(String(error)));
        } finally {
          await rm(join(root, `scenario-${index}`), { recursive: true, force: true });
        }
      }
    };
    for (const start of Array.from({ length: parallelScenarios }, () => worker)) void start();
  });

  afterAll(async () => {
    await Promise.all(outcomes);
    if (root !== "") await rm(root, { recursive: true, force: true });
  }, scenarioDeadlineMs);

  async function result(index: number): Promise<Aftermath> {
    const outcome = await outcomes[index];
    if (outcome === undefined) throw new Error(`scenario ${index} did not run (seed ${seed})`);
    if (outcome instanceof Error) throw new Error(`scenario ${index} (seed ${seed}): ${outcome.message}`, { cause: outcome });
    return outcome;
  }

  it(`kills at least 24 children mid-run (seed ${seed})`, async () => {
    const aftermaths = await Promise.all(scenarios.map((_, index) => result(index)));
    const landed = aftermaths.reduce((sum, aftermath) => sum + aftermath.killsLanded, 0);
    expect(landed).toBeGreaterThanOrEqual(24);
  }, scenarioDeadlineMs);

  for (const [index, kills] of scenarios.entries()) {
    describe(`scenario #${index}: kill ${kills.map(describeKill).join(", then ")}`, () => {
      it("leaves a log whose hash chain verifies", async () => {
        expect((await result(index)).verify).toMatchObject({ ok: true });
      }, scenarioDeadlineMs);

      it("never loses an acknowledged event", async () => {
        const { acknowledged, events } = await result(index);
        for (const ack of acknowledged) {
          const event = events[ack.position - 1];
          expect({ position: ack.position, type: event?.type, hash: event?.meta.hash }).toEqual(ack);
        }
      }, scenarioDeadlineMs);

      it("runs every started charge at most once and leaves no call in doubt", async () => {
        const { events, effects } = await result(index);
        expect(effects.filter((callId, at) => effects.indexOf(callId) !== at), "charged twice").toEqual([]);
        const started = events.filter((event) => event.type === "turn.tool.started");
        const charges = new Set(started.filter((event) => (event.data as { tool?: string }).tool === "charge").map(callIdOf));
        for (const callId of effects) expect(charges, `the side effect of ${callId} has a turn.tool.started`).toContain(callId);
        for (const callId of charges) {
          // Exactly one start and one end: an in-doubt charge is interrupted, never started again.
          const story = events.filter((event) => callIdOf(event) === callId && (event.type === "turn.tool.started" || terminalToolEvents.has(event.type)));
          expect(story.map((event) => event.type), `the tool events of ${callId}`).toEqual(["turn.tool.started", expect.stringMatching(/^turn\.tool\.(succeeded|failed|interrupted)$/)]);
          if (story[1]?.type === "turn.tool.succeeded") expect(effects, `${callId} succeeded, so it charged`).toContain(callId);
        }
        // Any call (a read may be run again, docs/design.md#7-recovery-and-many-hosts) ends on a terminal event, and the model is
        // told when it was interrupted.
        const packets = packetsOf(events);
        for (const callId of new Set(started.map(callIdOf))) {
          const last = events.findLast((event) => callIdOf(event) === callId && (event.type === "turn.tool.started" || terminalToolEvents.has(event.type)));
          expect(terminalToolEvents, `the last tool event of ${callId}`).toContain(last?.type);
          if (last?.type === "turn.tool.interrupted") expect(packets.find((packet) => packet.callId === callId)).toMatchObject({ ok: false });
        }
      }, scenarioDeadlineMs);

      it("reaches a final state and replays without divergence", async () => {
        const aftermath = await result(index);
        expectFinished(aftermath);
        expect(aftermath.replay.divergences).toEqual([]);
        expect(aftermath.replay.identical).toBe(true);
      }, scenarioDeadlineMs);
    });
  }
});

describe("crash recovery: a call certainly in doubt", () => {
  let root = "";

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "turnlog-crash-held-"));
  });

  afterAll(async () => {
    if (root !== "") await rm(root, { recursive: true, force: true });
  });

  /** Kills the child while the first call of `tool` is held mid-run, then runs a child to the end. */
  async function killWhileHeld(tool: "charge" | "read_order") {
    const directory = await newScenarioDirectory(root, `held-${tool}`);
    const heldLine = (line: string) => (tool === "charge" ? line.startsWith("effect ") : line.startsWith("begin ") && line.endsWith(" read_order"));
    const aftermath = await crashAndResume(directory, [{ trigger: { when: heldLine, delayMs: 0 }, extraArguments: [`hold=${tool}`] }]);
    const [killed, resumed] = aftermath.runs;
    expect(killed?.killedMidRun).toBe(true);
    const heldCallId = killed?.lines.find(heldLine)?.split(" ")[1] ?? "";
    return { aftermath, heldCallId, resumedLines: resumed?.lines ?? [] };
  }

  it("a charge killed after its side effect is interrupted, told to the model, and never charged again", async () => {
    const { aftermath, heldCallId, resumedLines } = await killWhileHeld("charge");
    const { events, effects, replay } = aftermath;
    expect(effects.filter((callId) => callId === heldCallId)).toEqual([heldCallId]);
    expect(resumedLines).not.toContain(`begin ${heldCallId} charge`);
    const ends = events.filter((event) => callIdOf(event) === heldCallId && terminalToolEvents.has(event.type));
    expect(ends.map((event) => event.type)).toEqual(["turn.tool.interrupted"]);
    expect(packetsOf(events).find((packet) => packet.callId === heldCallId)).toMatchObject({ ok: false, content: expect.stringMatching(/interrupted/) });
    expectFinished(aftermath);
    expect(replay.divergences).toEqual([]);
  });

  // docs/design.md#7-recovery-and-many-hosts: an in-doubt call is not re-run, unless its tool is declared idempotent and read-only.
  it("an idempotent read-only call killed mid-run runs again on resume instead of being interrupted", async () => {
    const { aftermath, heldCallId, resumedLines } = await killWhileHeld("read_order");
    const { events, replay } = aftermath;
    expect(packetsOf(events).find((packet) => packet.callId === heldCallId), "what the model is told").toMatchObject({ ok: true, content: "order A: 10 EUR, unpaid" });
    expect(resumedLines, "the resumed child runs the read again").toContain(`begin ${heldCallId} read_order`);
    expectFinished(aftermath);
    expect(replay.divergences).toEqual([]);
  });
});

/**
 * Many sessions (issue 15, deliverable 4): one process drives `--sessions` (default 1 000)
 * scripted sessions at once on one LevelEventLog with durability `sync`. Each session is the bench
 * scenario, shorter: one user message, the model answers `--turns` times with 4 no-op tool calls,
 * then a final answer. Each session has a runtime and a scripted provider of its own; they share
 * the log, whose group commit puts concurrent appends into one fsynced batch.
 *
 * Prints:
 * - **tool calls per second**: every session's tool calls ÷ the wall time from the first `send`
 *   to the last session's outcome;
 * - **per-call latency, p50 / p99**: for each tool call, the time from the model's answer being
 *   available to the runtime (the provider's `complete()` resolved with the answer that asked for
 *   the call) to the append holding the call's outcome event (`turn.tool.succeeded`, `.failed`)
 *   resolving, i.e. the call's result being in the log. The noop tool is read-only, so that
 *   append may not yet be fsynced (docs/design.md#4-the-log: read-only work rides on the next synced append,
 *   at the latest at the turn's end); the turn latency below covers the fsync;
 * - **per-turn latency, p50 / p99**: from the model's answer to the runtime's next request to the
 *   model, i.e. the answer's 4 calls run, their results logged durably and the next request built;
 * - the sync floor of this disk measured in this run (one fsynced batch of 3 events), and the
 *   wall time per call ÷ that floor: below 1 means group commit shares fsyncs between sessions.
 *
 *   npm run bench                                   (all of bench/, then one summary table)
 *   node --import tsx bench/many-sessions.ts [--sessions 1000] [--turns 5]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Level } from "level";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import type { EventLog, EventToAppend, Provider } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { percentile, printRows, recordResult } from "./results.js";

const { values: options } = parseArgs({ options: { sessions: { type: "string", default: "1000" }, turns: { type: "string", default: "5" } } });
const sessionCount = Number(options.sessions);
const turns = Number(options.turns);
const callsPerTurn = 4;
const outcomeTypes = new Set(["turn.tool.succeeded", "turn.tool.failed"]);

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

const now = () => Number(process.hrtime.bigint()) / 1000;

/** What one session's clock-watchers saw: µs per call and per turn. */
interface SessionTimes {
  /** When the provider's last answer became available (µs), undefined before the first. */
  answeredAt: number | undefined;
  callLatencies: number[];
  turnLatencies: number[];
}

/** The scripted provider of one session, noting when each answer is available and each request made. */
function timedProvider(inner: Provider, times: SessionTimes): Provider {
  return {
    id: inner.id,
    format: inner.format,
    async complete(request, completeOptions) {
      if (times.answeredAt !== undefined) times.turnLatencies.push(now() - times.answeredAt);
      const response = await inner.complete(request, completeOptions);
      times.answeredAt = now();
      return response;
    },
  };
}

/**
 * The shared log as one session's runtime sees it: the same object (a Proxy, so that every method
 * and capability the runtime may look for is the log's own), except that an append holding a tool
 * call's outcome notes, once it resolves, how long after the model's answer that was.
 */
function timedLog(log: EventLog, times: SessionTimes): EventLog {
  return new Proxy(log, {
    get(target, property) {
      if (property === "appendToStream") {
        return async (...args: Parameters<EventLog["appendToStream"]>) => {
          const result = await target.appendToStream(...args);
          const outcomes = (args[1] as readonly EventToAppend[]).filter((event) => outcomeTypes.has(event.type)).length;
          if (outcomes > 0 && times.answeredAt !== undefined) {
            const latency = now() - times.answeredAt;
            for (let outcome = 0; outcome < outcomes; outcome += 1) times.callLatencies.push(latency);
          }
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** µs per fsynced LevelDB batch of 3 small events: the sync floor of bench/run.ts, on this disk now. */
async function syncFloor(batches: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-floor-"));
  const db = new Level<string, string>(dir, { valueEncoding: "utf8" });
  try {
    await db.open();
    const value = JSON.stringify({ type: "turn.tool.succeeded", data: { callId: "call_x", output: "ok" } });
    const started = process.hrtime.bigint();
    for (let batch = 0; batch < batches; batch += 1) {
      await db.batch(
        [0, 1, 2].map((offset) => ({ type: "put" as const, key: String(batch * 3 + offset).padStart(16, "0"), value })),
        { sync: true },
      );
    }
    return Number(process.hrtime.bigint() - started) / 1000 / batches;
  } finally {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function script(): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    steps.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, call) => ({ name: "noop", arguments: JSON.stringify({ n: turn * callsPerTurn + call }) })) });
  }
  steps.push({ content: "done" });
  return steps;
}

const floorBefore = await syncFloor(200);
const dir = await mkdtemp(join(tmpdir(), "turnlog-many-"));
const log = await LevelEventLog.open(dir, { durability: "sync" });
let peakRss = 0;
let peakHeap = 0;
const sampleMemory = () => {
  const usage = process.memoryUsage();
  peakRss = Math.max(peakRss, usage.rss);
  peakHeap = Math.max(peakHeap, usage.heapUsed);
};
const memoryTimer = setInterval(sampleMemory, 100);
try {
  const sessions = await Promise.all(
    Array.from({ length: sessionCount }, async (_, index) => {
      const times: SessionTimes = { answeredAt: undefined, callLatencies: [], turnLatencies: [] };
      const runtime = await createRuntime({
        log: timedLog(log, times),
        provider: timedProvider(scriptedProvider(script()), times),
        tools: [noop],
        budgets: { maxIterations: turns + 1, maxToolCalls: turns * callsPerTurn + 1 },
      });
      return { runtime, times, session: await runtime.openSession(`bench-${index}`) };
    }),
  );
  const started = now();
  await Promise.all(
    sessions.map(async ({ session }) => {
      const outcome = await session.send("go");
      if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}: ${outcome.reason}`);
    }),
  );
  const wallMicros = now() - started;
  sampleMemory();
  for (const { runtime } of sessions) await runtime.close();
  const floorAfter = await syncFloor(200);

  const calls = sessionCount * turns * callsPerTurn;
  const callLatencies = sessions.flatMap(({ times }) => times.callLatencies);
  const turnLatencies = sessions.flatMap(({ times }) => times.turnLatencies);
  // A definition that silently stopped matching (an outcome event renamed, outcomes appended
  // elsewhere) must not print a latency of some calls as if it were of all of them.
  if (callLatencies.length !== calls) throw new Error(`saw the outcome of ${callLatencies.length} tool calls being logged, expected ${calls}`);
  if (turnLatencies.length !== sessionCount * turns) throw new Error(`saw ${turnLatencies.length} turns, expected ${sessionCount * turns}`);

  const callsPerSecond = calls / (wallMicros / 1e6);
  const floor = (floorBefore + floorAfter) / 2;
  const perCallWall = wallMicros / calls;
  const size = `${sessionCount} sessions × ${turns} turns × ${callsPerTurn} calls, sync`;
  const rows: string[][] = [[`many sessions: ${size}`, ""]];
  rows.push(["tool calls per second (all sessions)", Math.round(callsPerSecond).toLocaleString("en-US")]);
  rows.push(["per-call latency p50 / p99 (model answer → call's outcome logged)", `${(percentile(callLatencies, 0.5) / 1000).toFixed(1)} / ${(percentile(callLatencies, 0.99) / 1000).toFixed(1)} ms`]);
  rows.push(["per-turn latency p50 / p99 (model answer → next model request)", `${(percentile(turnLatencies, 0.5) / 1000).toFixed(1)} / ${(percentile(turnLatencies, 0.99) / 1000).toFixed(1)} ms`]);
  rows.push(["wall time per call ÷ sync floor (measured before and after)", `${(perCallWall / floor).toFixed(2)}× (floor ${floor.toFixed(0)} µs)`]);
  rows.push(["peak RSS / heap used", `${(peakRss / 2 ** 20).toFixed(0)} MB / ${(peakHeap / 2 ** 20).toFixed(0)} MB`]);
  printRows(rows);

  recordResult("many.callsPerSecond", `many sessions (${size}): tool calls per second`, callsPerSecond, "calls/s");
  recordResult("many.callP50", "  per-call latency p50 (model answer → outcome logged)", percentile(callLatencies, 0.5) / 1000, "ms");
  recordResult("many.callP99", "  per-call latency p99 (model answer → outcome logged)", percentile(callLatencies, 0.99) / 1000, "ms");
  recordResult("many.turnP99", "  per-turn latency p99 (model answer → next model request)", percentile(turnLatencies, 0.99) / 1000, "ms");
  recordResult("many.floorRatio", "  wall time per call ÷ sync floor", perCallWall / floor, "×");
  recordResult("many.peakRss", "  peak RSS", peakRss / 2 ** 20, "MB");
  recordResult("many.peakHeap", "  peak heap used", peakHeap / 2 ** 20, "MB");
} finally {
  clearInterval(memoryTimer);
  await log.close();
  await rm(dir, { recursive: true, force: true });
}

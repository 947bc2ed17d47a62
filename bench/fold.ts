/**
 * Folding at scale: writes one session of ~N events (default 1 000 000) into a relaxed
 * LevelEventLog, then folds it by streaming `log.readAll()` through `SessionFold`, sampling
 * `process.memoryUsage()` as it goes. The log is never loaded whole. It also times `verifyReplay`
 * over a streamed, really recorded session (the synthetic log repeats one turn's history
 * diagnostics, which replay would recompute differently, and recomputing history every turn is
 * the cost being measured there).
 *
 *   npm run bench                                      (after bench/run.ts)
 *   node --import tsx bench/fold.ts [events=1000000] [replay-turns=500] [max-fold-seconds=120]
 *
 * The fold's rate is printed per window of the log, since it is not constant: the session-state
 * projection is an immer reducer, and immer copies the `calls` Map on every write, so each event
 * costs time proportional to the calls folded so far (quadratic overall).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, MemoryEventLog } from "../src/index.js";
import type { EventToAppend, RecordedEvent } from "../src/index.js";
import { verifyReplay } from "../src/replay/replay-verifier.js";
import { SessionFold } from "../src/replay/session-fold.js";
import { ToolRegistry } from "../src/tools/tool-registry.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";

const targetEvents = Number(process.argv[2] ?? 1_000_000);
const replayTurns = Number(process.argv[3] ?? 500);
/** The fold stops after this long (and reports how far it got), so `npm run bench` stays finite. */
const maxFoldSeconds = Number(process.argv[4] ?? 120);
const callsPerTurn = 4;
const batchSize = 4096;

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });
const unlimited = { maxIterations: 1e9, maxToolCalls: 1e9, wallClockMs: 1e12 };

function script(turns: number): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    steps.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, index) => ({ name: "noop", arguments: JSON.stringify({ n: turn * callsPerTurn + index }) })) });
  }
  steps.push({ content: "done" });
  return steps;
}

/** A real scripted session of `turns` turns, recorded into `log` as session "bench". */
async function record(log: MemoryEventLog | LevelEventLog, turns: number): Promise<void> {
  const runtime = await createRuntime({ log, provider: scriptedProvider(script(turns)), tools: [noop], budgets: unlimited });
  const session = await runtime.openSession("bench");
  const outcome = await session.send("go");
  if (outcome.status !== "completed") throw new Error(`template session ended ${outcome.status}`);
}

const asAppend = (event: RecordedEvent): EventToAppend => ({ type: event.type, data: event.data });

/**
 * Writes ~`count` events: the header of a real session (started, user message), then its second
 * turn repeated with fresh turn IDs, sequence numbers and call IDs (a valid machine sequence),
 * then its final turn. Returns the number of events written.
 */
async function generate(log: LevelEventLog, count: number): Promise<number> {
  const template = new MemoryEventLog();
  await record(template, 3);
  const events = await template.readStream("session-bench");
  const starts = events.flatMap((event, index) => (event.type === "turn.started" ? [index] : []));
  const header = events.slice(0, starts[0]).map(asAppend);
  const turn = events.slice(starts[1], starts[2]);
  const final = events.slice(starts[3]);
  const turnText = JSON.stringify(turn.map(asAppend));
  const callIds = [...new Set(turn.flatMap((event) => (event.type === "turn.tool.started" ? [(event.data as { callId: string }).callId] : [])))];
  const turnsNeeded = Math.max(1, Math.floor((count - header.length - final.length) / turn.length));

  const stream = "session-bench";
  let written = 0;
  let batch: EventToAppend[] = [...header];
  const flush = async () => {
    await log.appendToStream(stream, batch);
    written += batch.length;
    batch = [];
  };
  for (let seq = 1; seq <= turnsNeeded; seq += 1) {
    let text = turnText.replaceAll('"turn-2"', `"turn-${seq}"`).replaceAll('"turnSeq":2,"iteration":2', `"turnSeq":${seq},"iteration":${seq}`);
    callIds.forEach((callId, index) => (text = text.replaceAll(callId, `call_${seq}_${index}`)));
    batch.push(...(JSON.parse(text) as EventToAppend[]));
    if (batch.length >= batchSize) await flush();
  }
  const last = turnsNeeded + 1;
  batch.push(...(JSON.parse(JSON.stringify(final.map(asAppend)).replaceAll('"turn-4"', `"turn-${last}"`).replaceAll('"turnSeq":4,"iteration":4', `"turnSeq":${last},"iteration":${last}`)) as EventToAppend[]));
  await flush();
  return written;
}

/** Samples peak RSS and heap while `work` runs (every `every` events, plus a timer). */
function memorySampler() {
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    rss = Math.max(rss, usage.rss);
    heap = Math.max(heap, usage.heapUsed);
  };
  const timer = setInterval(sample, 50);
  return { sample, stop: () => (clearInterval(timer), sample(), { rss, heap }) };
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const rows: string[][] = [];

const dir = await mkdtemp(join(tmpdir(), "turnlog-fold-"));
try {
  const log = await LevelEventLog.open(dir, { durability: "relaxed" });
  let started = process.hrtime.bigint();
  const written = await generate(log, targetEvents);
  const generateSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  rows.push([`generate ${written} events (relaxed LevelEventLog)`, `${generateSeconds.toFixed(1)} s, ${Math.round(written / generateSeconds)} events/s`]);

  global.gc?.();
  const baseline = process.memoryUsage();
  const sampler = memorySampler();
  // Folded in place, as replay does: nothing keeps the intermediate states.
  const fold = new SessionFold({ mutable: true });
  let folded = 0;
  started = process.hrtime.bigint();
  const windowSize = Math.max(10_000, Math.round(written / 10 / 1000) * 1000);
  let windowStarted = started;
  const windows: string[] = [];
  let stopped = false;
  for await (const event of log.readAll()) {
    fold.apply(event);
    folded += 1;
    if (folded % 1_000 !== 0) continue;
    sampler.sample();
    const now = process.hrtime.bigint();
    const windowDone = folded % windowSize === 0;
    const outOfTime = Number(now - started) / 1e9 > maxFoldSeconds;
    if (windowDone || outOfTime) {
      const inWindow = windowDone ? windowSize : folded % windowSize;
      windows.push(`${folded / 1000}k: ${Math.round(inWindow / (Number(now - windowStarted) / 1e9))}/s`);
      windowStarted = now;
    }
    if (outOfTime) {
      stopped = true;
      break;
    }
  }
  const foldSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const peak = sampler.stop();
  if (!stopped && (folded !== written || fold.state.lastOutcome?.status !== "completed")) throw new Error(`fold saw ${folded} of ${written} events, outcome ${fold.state.lastOutcome?.status}`);
  rows.push([`fold ${folded} events (readAll → SessionFold)${stopped ? `, stopped after ${maxFoldSeconds} s` : ""}`, `${foldSeconds.toFixed(1)} s, ${Math.round(folded / foldSeconds)} events/s`]);
  rows.push(["  events/s per window (after N events)", windows.join(", ")]);
  rows.push(["  peak RSS / heap used during the fold", `${mb(peak.rss)} / ${mb(peak.heap)} (before: ${mb(baseline.rss)} / ${mb(baseline.heapUsed)})`]);
  rows.push(["  calls in the folded state", String(fold.state.calls.size)]);
  await log.close();

  // verifyReplay over a streamed, really recorded session.
  await rm(dir, { recursive: true, force: true });
  const replayLog = await LevelEventLog.open(dir, { durability: "relaxed" });
  await record(replayLog, replayTurns);
  const replaySampler = memorySampler();
  started = process.hrtime.bigint();
  let streamed = 0;
  const counted = async function* () {
    for await (const event of replayLog.readAll()) {
      streamed += 1;
      yield event;
    }
  };
  const report = await verifyReplay(counted(), { registry: new ToolRegistry([noop]) });
  const replaySeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const replayPeak = replaySampler.stop();
  if (!report.identical) throw new Error(`bench session did not replay identical: ${JSON.stringify(report.divergences[0])}`);
  rows.push([`verifyReplay ${streamed} streamed events (${replayTurns} turns × ${callsPerTurn} calls)`, `${replaySeconds.toFixed(1)} s, ${Math.round(streamed / replaySeconds)} events/s, ${report.compared} decisions`]);
  rows.push(["  peak RSS / heap used during the replay", `${mb(replayPeak.rss)} / ${mb(replayPeak.heap)}`]);
  await replayLog.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
const width = Math.max(...rows.map((row) => row[0]!.length));
for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);

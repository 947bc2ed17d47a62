/**
 * Folding at scale (docs/performance.md#the-scenarios): writes one session of ~N events (default 1 000 000) into a
 * relaxed LevelEventLog — a real recorded user message (tool turns, a history compaction, an
 * answer) repeated — and then, each time streaming `log.readAll()` (the log is never loaded whole)
 * and sampling `process.memoryUsage()` as it goes:
 *
 * - folds it as replay does (`SessionFold({ mutable: true, retain: "live" })`: only what the next
 *   decisions read is kept, so memory stays flat however long the log);
 * - folds the full session-state projection (every call and message: memory grows with the
 *   session, because that state is what was asked for);
 * - asks `runtime.stateAt` for positions near the end, cold and then from a snapshot;
 * - times `verifyReplay` over a really recorded session of many user messages (every decision
 *   recomputed, history included).
 *
 *   npm run bench                                      (after bench/run.ts)
 *   node --import tsx --expose-gc bench/fold.ts [events=1000000] [replay-messages=150] [max-fold-seconds=120] [log-directory]
 *
 * With a log directory, the generated log is kept there, and a later run with the same directory
 * reads it instead of generating it again (generating a million events takes minutes), so runs
 * before and after a change fold the same log. Rates are given per wall-clock second and per
 * CPU-second of the process (every thread, LevelDB's included): on a shared machine the second
 * moves far less with the load.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime, LevelEventLog } from "../src/index.js";
import type { RecordedEvent } from "../src/index.js";
import { verifyReplay } from "../src/replay/replay-verifier.js";
import { readEvent, readEvents } from "../src/core/read-events.js";
import { SessionFold } from "../src/core/session-fold.js";
import { ToolRegistry } from "../src/tools/tool-registry.js";
import { scriptedProvider } from "../src/testing/index.js";
import { recordResult } from "./results.js";
import { callsPerTurn, generate, noop, record, turnsPerMessage } from "./generated-session.js";

const targetEvents = Number(process.argv[2] ?? 1_000_000);
const replayMessages = Number(process.argv[3] ?? 150);
/** The fold stops after this long (and reports how far it got), so `npm run bench` stays finite. */
const maxFoldSeconds = Number(process.argv[4] ?? 120);
/** Where the generated log is kept for the next run; default: a temporary directory, removed at the end. */
const keptLog = process.argv[5];
/**
 * Resident memory not backed by a file (Linux: `RssAnon` of /proc/self/status), or undefined
 * elsewhere. LevelDB maps its table files into memory to read them, so plain RSS grows with the
 * part of the log read so far (up to the whole directory) even while the fold holds nothing: those
 * pages are the file's, shared with the page cache and given back under memory pressure.
 */
function anonymousRss(): number | undefined {
  try {
    const line = readFileSync("/proc/self/status", "utf8").match(/^RssAnon:\s+(\d+) kB$/m);
    return line === null ? undefined : Number(line[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Samples peak RSS (all, and not file-backed) and heap while `work` runs (every `every` events, plus a timer). */
function memorySampler() {
  let rss = 0;
  let anonymous: number | undefined;
  let heap = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    rss = Math.max(rss, usage.rss);
    heap = Math.max(heap, usage.heapUsed);
    const anon = anonymousRss();
    if (anon !== undefined) anonymous = Math.max(anonymous ?? 0, anon);
  };
  const timer = setInterval(sample, 50);
  return { sample, stop: () => (clearInterval(timer), sample(), { rss, anonymous, heap }) };
}

/** CPU seconds (user + system, every thread of the process) since `since`. */
const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};

const mb = (bytes: number | undefined) => bytes === undefined ? "?" : `${(bytes / 2 ** 20).toFixed(0)} MB`;
const rows: string[][] = [];

const dir = keptLog ?? (await mkdtemp(join(tmpdir(), "turnlog-fold-")));
try {
  const log = await LevelEventLog.open(dir, { durability: "relaxed" });
  let started = process.hrtime.bigint();
  const kept = await log.streamVersion("session-bench");
  const written = kept > 0 ? kept : await generate(log, targetEvents);
  const generateSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  rows.push(
    kept > 0
      ? [`reuse ${written} events kept in ${dir}`, ""]
      : [`generate ${written} events (relaxed LevelEventLog)`, `${generateSeconds.toFixed(1)} s, ${Math.round(written / generateSeconds)} events/s`],
  );

  /** One streamed fold of the whole log, with its rate per window and its peak memory. */
  const foldLog = async (label: string, fold: SessionFold, id: string) => {
    global.gc?.();
    const baseline = process.memoryUsage();
    const sampler = memorySampler();
    let folded = 0;
    const began = process.hrtime.bigint();
    const cpuBegan = process.cpuUsage();
    const windowSize = Math.max(10_000, Math.round(written / 5 / 1000) * 1000);
    let windowStarted = began;
    const windows: string[] = [];
    let stopped = false;
    for await (const event of log.readAll()) {
      fold.apply(readEvent(event));
      folded += 1;
      if (folded % 1_000 !== 0) continue;
      sampler.sample();
      const now = process.hrtime.bigint();
      const windowDone = folded % windowSize === 0;
      const outOfTime = Number(now - began) / 1e9 > maxFoldSeconds;
      if (windowDone || outOfTime) {
        const inWindow = windowDone ? windowSize : folded % windowSize;
        const rate = Math.round(inWindow / (Number(now - windowStarted) / 1e9));
        // What the fold holds (after a collection), not the garbage it made on the way.
        global.gc?.();
        windows.push(`${folded / 1000}k: ${rate}/s, holds ${mb(process.memoryUsage().heapUsed - baseline.heapUsed)}`);
        windowStarted = process.hrtime.bigint();
      }
      if (outOfTime) {
        stopped = true;
        break;
      }
    }
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    const cpu = cpuSeconds(cpuBegan);
    const peak = sampler.stop();
    if (!stopped && (folded !== written || fold.pending.length !== 0 || fold.state.lastOutcome?.status !== "completed")) {
      throw new Error(`${label}: saw ${folded} of ${written} events, outcome ${fold.state.lastOutcome?.status}`);
    }
    rows.push([`${label}: fold ${folded} events${stopped ? `, stopped after ${maxFoldSeconds} s` : ""}`, `${seconds.toFixed(1)} s, ${Math.round(folded / seconds)} events/s; CPU ${cpu.toFixed(1)} s, ${Math.round(folded / cpu)} events per CPU-second`]);
    rows.push(["  events/s per window, and heap held after it (after N events)", windows.join(", ")]);
    rows.push(["  peak RSS (not file-backed) / heap used during the fold", `${mb(peak.rss)} (${mb(peak.anonymous)}) / ${mb(peak.heap)} (before: ${mb(baseline.rss)} / ${mb(baseline.heapUsed)})`]);
    rows.push(["  calls / messages held at the end", `${fold.state.calls.size} / ${fold.state.messages.length}`]);
    recordResult(`${id}.rate`, `${label}: streamed fold of ${folded} events`, folded / seconds, "events/s");
    recordResult(`${id}.peakRss`, `${label}: peak RSS`, peak.rss / 2 ** 20, "MB");
    recordResult(`${id}.peakHeap`, `${label}: peak heap used`, peak.heap / 2 ** 20, "MB");
  };
  // The floor under any fold: reading and parsing the events, nothing else.
  {
    let read = 0;
    const began = process.hrtime.bigint();
    const cpuBegan = process.cpuUsage();
    for await (const _ of log.readAll()) read += 1;
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    const cpu = cpuSeconds(cpuBegan);
    rows.push([`readAll only (LevelDB read + JSON.parse): ${read} events`, `${seconds.toFixed(1)} s, ${Math.round(read / seconds)} events/s; CPU ${cpu.toFixed(1)} s, ${Math.round(read / cpu)} events per CPU-second`]);
    recordResult("fold.readRate", `readAll only, ${read} events`, read / seconds, "events/s");
  }
  // The fold alone, without the log: the first 200 000 events held in memory (a sample, read
  // once; the folds below stream the whole log instead).
  {
    const raw: RecordedEvent[] = [];
    for await (const event of log.readAll({ limit: 200_000 })) raw.push(event);
    // What reading costs on top of the fold (docs/events.md, "Reading events"): every read checks
    // each event's shape; a full schema parse is what a read of data of unknown origin would add.
    for (const check of ["shape", "schema"] as const) {
      const began = process.hrtime.bigint();
      readEvents(raw, check);
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      rows.push([`read (upcast + ${check} check): ${raw.length} events already in memory`, `${(seconds * 1000).toFixed(0)} ms, ${Math.round(raw.length / seconds)} events/s, ${((seconds / raw.length) * 1e6).toFixed(2)} µs/event`]);
    }
    const sample = readEvents(raw);
    for (const [label, options] of [['retain "live"', { mutable: true, retain: "live" }], ["full projection", { mutable: true }]] as const) {
      const fold = new SessionFold(options);
      const began = process.hrtime.bigint();
      for (const event of sample) fold.apply(event);
      void fold.pending;
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      rows.push([`fold only, ${label}: ${sample.length} events already in memory`, `${(seconds * 1000).toFixed(0)} ms, ${Math.round(sample.length / seconds)} events/s, ${((seconds / sample.length) * 1e6).toFixed(2)} µs/event`]);
    }
  }
  await foldLog('replay fold (retain "live")', new SessionFold({ mutable: true, retain: "live" }), "fold");
  await foldLog("full projection", new SessionFold({ mutable: true }), "fold.full");

  // Time travel: cold (folds from the start, leaving snapshots behind), then from a snapshot.
  const runtime = await createRuntime({ log, provider: scriptedProvider([]), tools: [noop] });
  const position = (offset: number) => Math.max(1, written - offset);
  let began = process.hrtime.bigint();
  let cpuBegan = process.cpuUsage();
  await runtime.stateAt("bench", position(1_500));
  const coldSeconds = Number(process.hrtime.bigint() - began) / 1e9;
  const coldCpu = cpuSeconds(cpuBegan);
  const warm: { ms: number; cpuMs: number }[] = [];
  for (const offset of [1_200, 900, 700, 333, 10]) {
    began = process.hrtime.bigint();
    cpuBegan = process.cpuUsage();
    await runtime.stateAt("bench", position(offset));
    warm.push({ ms: Number(process.hrtime.bigint() - began) / 1e6, cpuMs: cpuSeconds(cpuBegan) * 1000 });
  }
  rows.push([`stateAt near the end of ${written} events, cold`, `${coldSeconds.toFixed(1)} s (CPU ${coldCpu.toFixed(1)} s)`]);
  rows.push(["  then from the nearest snapshot (5 positions)", warm.map(({ ms, cpuMs }) => `${ms.toFixed(0)} ms (CPU ${cpuMs.toFixed(0)})`).join(", ")]);
  recordResult("fold.stateAtCold", `stateAt near the end of ${written} events, cold`, coldSeconds, "s");
  recordResult("fold.stateAtSnapshot", `stateAt from a snapshot, slowest of ${warm.length} positions`, Math.max(...warm.map(({ ms }) => ms)), "ms");
  await runtime.close();
  await log.close();

  // verifyReplay over a streamed, really recorded session (in a directory of its own when the
  // folded log is kept).
  const replayDir = keptLog === undefined ? dir : await mkdtemp(join(tmpdir(), "turnlog-replay-"));
  await rm(replayDir, { recursive: true, force: true });
  const replayLog = await LevelEventLog.open(replayDir, { durability: "relaxed" });
  await record(replayLog, replayMessages);
  global.gc?.();
  const replayBaseline = process.memoryUsage();
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
  rows.push([`verifyReplay ${streamed} streamed events (${replayMessages} user messages × ${turnsPerMessage} turns × ${callsPerTurn} calls)`, `${replaySeconds.toFixed(1)} s, ${Math.round(streamed / replaySeconds)} events/s, ${report.compared} decisions`]);
  rows.push(["  peak RSS (not file-backed) / heap used during the replay", `${mb(replayPeak.rss)} (${mb(replayPeak.anonymous)}) / ${mb(replayPeak.heap)} (before: ${mb(replayBaseline.rss)} / ${mb(replayBaseline.heapUsed)})`]);
  await replayLog.close();
  if (replayDir !== dir) await rm(replayDir, { recursive: true, force: true });
} finally {
  if (keptLog === undefined) await rm(dir, { recursive: true, force: true });
}
const width = Math.max(...rows.map((row) => row[0]!.length));
for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);

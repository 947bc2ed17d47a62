/**
 * A streamed replay verification of a whole long session (docs/performance.md#snapshots-on-disk-issue-35-first-measurement):
 * `verifyReplay` over `log.readAll()` of a session of ~N events that replays identical
 * (bench/generated-session.ts `generateReplayable`), with its rate, its CPU, and per quarter of
 * the session its peak heap and the heap it holds — memory is bounded when they stay flat as the
 * session grows.
 * bench/snapshots.ts runs it last;
 *
 *   node --import tsx --expose-gc bench/replay-verify.ts [events=1000000] [log-directory]
 *
 * runs it alone. With a log directory, the session is kept there and read again by the next run
 * (writing a million events takes a few minutes).
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LevelEventLog } from "../src/index.js";
import { sessionStream } from "../src/core/session-stream.js";
import { verifyReplay } from "../src/replay/replay-verifier.js";
import { ToolRegistry } from "../src/tools/tool-registry.js";
import { generateReplayable, noop } from "./generated-session.js";
import { recordResult } from "./results.js";

/** The load average now (1, 5, 15 minutes): every figure is reported with it. */
const load = (): string => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

/**
 * Writes (or reuses) a session of ~`count` events in `directory` and verifies its replay,
 * streamed. Returns the rows of the bench's table.
 */
export async function measureReplayVerification(directory: string, count: number): Promise<string[][]> {
  const rows: string[][] = [];
  const log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false });
  try {
    const kept = await log.streamVersion(sessionStream("bench"));
    let began = process.hrtime.bigint();
    const written = kept > 0 ? kept : await generateReplayable(log, count);
    const recordSeconds = Number(process.hrtime.bigint() - began) / 1e9;
    rows.push(
      kept > 0
        ? [`verifyReplay: reuse the ${written}-event session kept in ${directory}`, ""]
        : [`verifyReplay: generate a ${written}-event session that replays identical (relaxed LevelEventLog)`, `${recordSeconds.toFixed(0)} s, ${Math.round(written / recordSeconds)} events/s (load ${load()})`],
    );

    global.gc?.();
    const baseline = process.memoryUsage().heapUsed;
    // The peak heap in each quarter of the session (sampled every 10 000 events), and its rate.
    const quarter = Math.max(10_000, Math.floor(written / 4 / 10_000) * 10_000);
    const quarters: string[] = [];
    let peakHeap = 0;
    let quarterPeak = 0;
    let streamed = 0;
    let quarterBegan = process.hrtime.bigint();
    const events = async function* () {
      for await (const event of log.readAll()) {
        streamed += 1;
        if (streamed % 10_000 === 0) {
          quarterPeak = Math.max(quarterPeak, process.memoryUsage().heapUsed);
          peakHeap = Math.max(peakHeap, quarterPeak);
          if (streamed % quarter === 0) {
            const rate = Math.round(quarter / (Number(process.hrtime.bigint() - quarterBegan) / 1e9));
            // What the verification holds (after a collection), not the garbage it made on the way.
            global.gc?.();
            quarters.push(`${Math.round(streamed / 1000)}k: ${rate}/s, peak ${mb(quarterPeak)}, holds ${mb(process.memoryUsage().heapUsed)}`);
            quarterPeak = 0;
            quarterBegan = process.hrtime.bigint();
          }
        }
        yield event;
      }
    };
    began = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    const report = await verifyReplay(events(), { registry: new ToolRegistry([noop]) });
    const seconds = Number(process.hrtime.bigint() - began) / 1e9;
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    if (!report.identical) throw new Error(`the generated session did not replay identical: ${JSON.stringify(report.divergences[0])}`);
    rows.push([
      `verifyReplay of the whole session, streamed: ${streamed} events, identical`,
      `${seconds.toFixed(1)} s, ${Math.round(streamed / seconds)} events/s; CPU ${cpuSeconds.toFixed(1)} s, ${Math.round(streamed / cpuSeconds)} events per CPU-second (load ${load()}); ${report.compared} decisions`,
    ]);
    rows.push(["  per quarter: events/s, peak heap used, heap held after a collection", `${quarters.join("; ")} (before: ${mb(baseline)})`]);
    recordResult("snapshots.replayRate", `verifyReplay of ${streamed} events, streamed`, streamed / seconds, "events/s");
    recordResult("snapshots.replayPeakHeap", `verifyReplay of ${streamed} events: peak heap used`, peakHeap / 2 ** 20, "MB");
  } finally {
    await log.close();
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const count = Number(process.argv[2] ?? 1_000_000);
  const keptLog = process.argv[3];
  const directory = keptLog ?? (await mkdtemp(join(tmpdir(), "turnlog-replay-verify-")));
  try {
    const rows = await measureReplayVerification(directory, count);
    const width = Math.max(...rows.map((row) => row[0]!.length));
    for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);
  } finally {
    if (keptLog === undefined) await rm(directory, { recursive: true, force: true });
  }
}

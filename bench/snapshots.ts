/**
 * Snapshots on disk at scale (docs/performance.md#the-scenarios, docs/design.md#5-projections): on
 * one session of ~N events (default 1 000 000, bench/generated-session.ts) in a relaxed
 * LevelEventLog,
 *
 * - writes the snapshots the runtime would have written as the session grew (every 2 000 events,
 *   at the first point between turns after them): total time, and the snapshot files on disk;
 * - opens the session in a new runtime (from the newest snapshot) and sends one more message;
 * - asks a new runtime's `stateAt` at 20 random positions (snapshots on disk, none in memory), then
 *   the same positions again;
 * - verifies the replay of a whole session of ~N events that replays identical, streamed (bench/replay-verify.ts:
 *   `verifyReplay` over `readAll`), with its peak memory per quarter.
 *
 *   node --import tsx --expose-gc bench/snapshots.ts [events=1000000] [log-directory] [replay-log-directory]
 *
 * With a log directory, the generated log (and its snapshots) is kept there for the next run, and
 * the session the replay verifies in the replay log directory (default: the log directory's name
 * with `-replay`).
 */
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRuntime, LevelEventLog } from "../src/index.js";
import { readEvents } from "../src/core/read-events.js";
import { SessionFold } from "../src/core/session-fold.js";
import { sessionStream } from "../src/core/session-stream.js";
import { SessionSnapshotWriter } from "../src/projections/session-snapshot.js";
import { defaultSnapshotEvery } from "../src/runtime/session-store.js";
import { scriptedProvider } from "../src/testing/index.js";
import { generate, noop } from "./generated-session.js";
import { measureReplayVerification } from "./replay-verify.js";
import { recordResult } from "./results.js";

const targetEvents = Number(process.argv[2] ?? 1_000_000);
const keptLog = process.argv[3];
/** The session the replay verifies, kept beside the kept log unless named. */
const keptReplayLog = process.argv[4] ?? (keptLog === undefined ? undefined : `${keptLog}-replay`);
const rows: string[][] = [];
/** The load average now (1, 5, 15 minutes): every figure is reported with it. */
const load = (): string => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

/** Bytes and files under a directory. */
async function du(directory: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  for (const entry of await readdir(directory, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
    files += 1;
  }
  return { bytes, files };
}

const dir = keptLog ?? (await mkdtemp(join(tmpdir(), "turnlog-snapshots-")));
const replayDir = keptReplayLog ?? (await mkdtemp(join(tmpdir(), "turnlog-replay-verify-")));
try {
  let log = await LevelEventLog.open(dir, { durability: "relaxed", answers: false });
  const stream = sessionStream("bench");
  const kept = await log.streamVersion(stream);
  let began = process.hrtime.bigint();
  const written = kept > 0 ? kept : await generate(log, targetEvents);
  rows.push([kept > 0 ? `reuse ${written} events kept in ${dir}` : `generate ${written} events`, kept > 0 ? "" : `${seconds(began).toFixed(1)} s`]);

  // The snapshots a runtime writes as the session grows: an immutable fold, in pages ending
  // every `defaultSnapshotEvery` events, and a snapshot at the first point between turns after each.
  if ((await log.snapshots.positions(stream)).length === 0) {
    began = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    const fold = new SessionFold();
    const writer = new SessionSnapshotWriter(log.snapshots, stream);
    let writeSeconds = 0;
    let count = 0;
    let last = 0;
    const page = 500;
    for (let from = 1; from <= written; from += page) {
      const events = readEvents(await log.readStream(stream, { from, maxCount: page }));
      if (from + page - 1 - last < defaultSnapshotEvery) {
        fold.applyAll(events);
        continue;
      }
      // Event by event from here, as the live fold goes, until the fold rests between turns.
      for (const event of events) {
        fold.applyAll([event]);
        if (event.meta.streamPosition - last < defaultSnapshotEvery) continue;
        void fold.pending;
        const resting = fold.resting();
        if (resting === undefined) continue;
        const writeBegan = process.hrtime.bigint();
        await writer.write(resting.state, { hash: event.meta.hash, pending: resting.pending });
        writeSeconds += seconds(writeBegan);
        last = event.meta.streamPosition;
        count += 1;
      }
    }
    const used = process.cpuUsage(cpu);
    const onDisk = await du(join(dir, "snapshots"));
    rows.push([`write ${count} snapshots while folding (every ${defaultSnapshotEvery} events)`, `${seconds(began).toFixed(1)} s in all (CPU ${((used.user + used.system) / 1e6).toFixed(1)} s), of which writing ${writeSeconds.toFixed(1)} s: ${((writeSeconds / count) * 1000).toFixed(0)} ms per snapshot`]);
    rows.push(["  on disk", `${(onDisk.bytes / 2 ** 20).toFixed(0)} MB in ${onDisk.files} files`]);
    await log.close();
    log = await LevelEventLog.open(dir, { durability: "relaxed", answers: false });
  }

  // Open the session in a new runtime, then one more message.
  {
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "one more" }]), tools: [noop], budgets: { maxIterations: 1e9, maxToolCalls: 1e9, wallClockMs: 1e12 } });
    began = process.hrtime.bigint();
    const session = await runtime.openSession("bench");
    const openMs = seconds(began) * 1000;
    began = process.hrtime.bigint();
    const outcome = await session.send("and now?");
    const sendMs = seconds(began) * 1000;
    if (outcome.status !== "completed") throw new Error(`the reopened session ended ${outcome.status}`);
    rows.push([`open the ${written}-event session in a new runtime (from its newest snapshot)`, `${openMs.toFixed(0)} ms (load ${load()})`]);
    rows.push(["  then one more user message (a turn that answers)", `${sendMs.toFixed(0)} ms`]);
    recordResult("snapshots.open", `open a ${written}-event session from its newest snapshot`, openMs, "ms");
    recordResult("snapshots.resume", `open it and send one more message`, openMs + sendMs, "ms");
    await runtime.close();
    await log.snapshots.idle();
  }

  // stateAt at 20 random positions: snapshots on disk, none in memory; then again.
  {
    const runtime = await createRuntime({ log, provider: scriptedProvider([]), tools: [noop] });
    let seed = 20_261_206;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const positions = Array.from({ length: 20 }, () => 1 + Math.floor(random() * written));
    for (const pass of ["first", "again"]) {
      const times: number[] = [];
      for (const position of positions) {
        began = process.hrtime.bigint();
        const state = await runtime.stateAt("bench", position);
        times.push(seconds(began) * 1000);
        if (state.position !== position) throw new Error(`stateAt(${position}) gave the state at ${state.position}`);
      }
      const sorted = [...times].sort((a, b) => a - b);
      rows.push([`stateAt at 20 random positions, ${pass} (snapshots on disk${pass === "again" ? ", their chunks in memory" : ""})`, `median ${sorted[10]?.toFixed(0)} ms, slowest ${sorted[19]?.toFixed(0)} ms (load ${load()}): ${times.map((ms) => ms.toFixed(0)).join(", ")}`]);
      recordResult(pass === "first" ? "snapshots.stateAt" : "snapshots.stateAtAgain", `stateAt at 20 random positions (${pass}), slowest`, sorted[19] ?? 0, "ms");
    }
    await runtime.close();
  }

  await log.close();

  // The replay of a whole session verified, streamed: a session written to replay identical (the
  // generated one above does not), in a directory of its own.
  rows.push(...(await measureReplayVerification(replayDir, targetEvents)));
} finally {
  if (keptLog === undefined) await rm(dir, { recursive: true, force: true });
  if (keptReplayLog === undefined) await rm(replayDir, { recursive: true, force: true });
}
const width = Math.max(...rows.map((row) => row[0]!.length));
for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);

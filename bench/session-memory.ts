/**
 * Sessions in memory (issue 33, deliverable 7): what one open session costs a runtime, and what
 * the heap holds after one runtime opened 10 000 sessions in turn under `maxOpenSessions`. Each
 * session is opened on a LevelEventLog (durability `relaxed`) and sent one short message that a
 * scripted provider answers at once; the host keeps no reference to it. Run with `--expose-gc`.
 *
 * Prints (heap used after a full collection, minus the same after 50 warm-up sessions):
 * - **heap per open session**: with no bound (`maxOpenSessions` above the count), the growth after
 *   `--kept` sessions (default 2 000) divided by their number: what each session kept in memory costs;
 * - **heap after N sessions**: the growth after `--sessions` (default 10 000) under the default
 *   bound (1 000), and under `--small-bound` (default 100).
 *
 *   npm run bench                                          (all of bench/, then one summary table)
 *   node --expose-gc --import tsx bench/session-memory.ts [--sessions 10000] [--kept 2000] [--small-bound 100]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createRuntime, LevelEventLog } from "../src/index.js";
import type { Provider } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import { printRows, recordResult } from "./results.js";

const { values: options } = parseArgs({ options: { sessions: { type: "string", default: "10000" }, kept: { type: "string", default: "2000" }, "small-bound": { type: "string", default: "100" } } });
const sessionCount = Number(options.sessions);
const keptCount = Number(options.kept);
const smallBound = Number(options["small-bound"]);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");
const collect = gc;

/** One scripted answer per request, so that the provider keeps nothing of earlier sessions. */
const provider: Provider = { id: "scripted", format: "openai-chat", complete: (request, completeOptions) => scriptedProvider([{ content: "done" }]).complete(request, completeOptions) };

/** Heap used after a full collection, once the finalizers it queued have run. */
async function heapUsed(): Promise<number> {
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  return process.memoryUsage().heapUsed;
}

/** The heap's growth (bytes) over `count` sessions opened in turn, after 50 warm-up sessions. */
async function growth(count: number, maxOpenSessions: number | undefined): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-session-memory-"));
  const log = await LevelEventLog.open(dir, { durability: "relaxed" });
  const runtime = await createRuntime({ log, provider, ...(maxOpenSessions !== undefined ? { maxOpenSessions } : {}) });
  try {
    let next = 0;
    const run = async () => {
      const session = await runtime.openSession(`s${next++}`);
      const outcome = await session.send("hello");
      if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}`);
    };
    for (let warm = 0; warm < 50; warm += 1) await run();
    const baseline = await heapUsed();
    // Four lanes, each opening its sessions one after another (as test/runtime/bounded-memory.test.ts does).
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < 50 + count) await run();
    }));
    return (await heapUsed()) - baseline;
  } finally {
    await runtime.close();
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const perSession = (await growth(keptCount, keptCount + 100)) / keptCount;
const underDefault = await growth(sessionCount, undefined);
const underSmall = await growth(sessionCount, smallBound);
const mb = (bytes: number) => bytes / 2 ** 20;
printRows([
  [`sessions in memory: one runtime, LevelDB relaxed, one short send each`, ""],
  [`heap per open session (${keptCount} kept, no bound)`, `${(perSession / 1024).toFixed(1)} KB`],
  [`heap after ${sessionCount} sessions, maxOpenSessions 1 000 (default)`, `+${mb(underDefault).toFixed(1)} MB`],
  [`heap after ${sessionCount} sessions, maxOpenSessions ${smallBound}`, `+${mb(underSmall).toFixed(1)} MB`],
]);
recordResult("sessions.heapPerSession", "sessions in memory: heap per open session", perSession / 1024, "KB");
recordResult("sessions.heapAfterDefault", `  heap after ${sessionCount} sessions (maxOpenSessions 1 000)`, mb(underDefault), "MB");
recordResult("sessions.heapAfterSmall", `  heap after ${sessionCount} sessions (maxOpenSessions ${smallBound})`, mb(underSmall), "MB");

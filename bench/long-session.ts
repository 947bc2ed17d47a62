/**
 * One long session (docs/performance.md#the-figures-and-their-targets: flat in history length): one user message, then turn after
 * turn of N no-op read-only tool calls (`relaxed`, full-auto) into a LevelDB log, until the
 * session holds the target number of events. Prints µs per tool call for windows of turns as the
 * session grows, and the ratio of the last window to the first.
 *
 *   node --import tsx bench/long-session.ts [events=200000] [callsPerTurn=200] [windows=10]
 *
 * The first five turns are left out (warm-up: they pay for compiling the code paths once), so the
 * first window starts at turn 6.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import type { FinalizedResponse, Provider } from "../src/index.js";

export interface LongSessionResult {
  events: number;
  turns: number;
  callsPerTurn: number;
  /**
   * One row per window of turns: the event position it ends at, wall-clock µs per call in it, and
   * the process's CPU µs (user + system) per call — steadier than the wall clock on a shared
   * machine.
   */
  windows: { turns: number; endEvent: number; usPerCall: number; cpuUsPerCall: number }[];
  /** Last window's wall-clock µs per call over the first's. */
  ratio: number;
  /** The same ratio of CPU µs per call. */
  cpuRatio: number;
}

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

export async function longSession(targetEvents: number, callsPerTurn: number, windowCount = 10): Promise<LongSessionResult> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-long-session-"));
  try {
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    // Per turn: when its provider request arrived, and the session's event count then.
    const marks: { at: bigint; cpu: number; events: number }[] = [];
    let turn = 0;
    let session: { state(): { position: number } } | undefined;
    // A scripted provider that keeps no requests (the testing one keeps every request it saw).
    const provider: Provider = {
      id: "long-session",
      format: "openai-chat",
      async complete(): Promise<FinalizedResponse> {
        // The session's event count when the request arrived (a property of its state: cheap).
        const events = session?.state().position ?? 0;
        const cpu = process.cpuUsage();
        marks.push({ at: process.hrtime.bigint(), cpu: cpu.user + cpu.system, events });
        if (events >= targetEvents) return { content: "done", toolCalls: [] };
        const base = turn * callsPerTurn;
        turn += 1;
        return {
          content: "",
          toolCalls: Array.from({ length: callsPerTurn }, (_, index) => ({ name: "noop", arguments: `{"n":${base + index}}` })),
        };
      },
    };
    const runtime = await createRuntime({
      log,
      provider,
      tools: [noop],
      budgets: { maxIterations: 1_000_000, maxToolCalls: 1_000_000_000, wallClockMs: 2_000_000_000 },
    });
    const opened = await runtime.openSession("long");
    session = opened;
    const outcome = await opened.send("go");
    if (outcome.status !== "completed") throw new Error(`long session ended ${outcome.status}: ${outcome.reason}`);
    const total = opened.state().position;
    await runtime.close();
    await log.close();

    // marks[i] is the request of turn i; turn i ran from marks[i] to marks[i + 1].
    const turns = marks.length - 1;
    const warmUp = Math.min(5, Math.floor(turns / 4));
    const perTurn = Math.max(1, Math.floor((turns - warmUp) / windowCount));
    const windows: LongSessionResult["windows"] = [];
    for (let start = warmUp; start + perTurn <= turns; start += perTurn) {
      const end = start + perTurn;
      const [from, to] = [marks[start]!, marks[end]!];
      const calls = (end - start) * callsPerTurn;
      windows.push({ turns: end - start, endEvent: to.events, usPerCall: Number(to.at - from.at) / 1000 / calls, cpuUsPerCall: (to.cpu - from.cpu) / calls });
    }
    const [first, last] = [windows[0], windows.at(-1)];
    return {
      events: total,
      turns,
      callsPerTurn,
      windows,
      ratio: (last?.usPerCall ?? NaN) / (first?.usPerCall ?? NaN),
      cpuRatio: (last?.cpuUsPerCall ?? NaN) / (first?.cpuUsPerCall ?? NaN),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const targetEvents = Number(process.argv[2] ?? 200_000);
  const callsPerTurn = Number(process.argv[3] ?? 200);
  const windowCount = Number(process.argv[4] ?? 10);
  const started = Date.now();
  const result = await longSession(targetEvents, callsPerTurn, windowCount);
  console.log(`one session: ${result.events} events, ${result.turns} turns of ${result.callsPerTurn} calls, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log("turns  up to event  µs per call  CPU µs per call");
  for (const window of result.windows) {
    console.log(`${String(window.turns).padStart(5)}  ${String(window.endEvent).padStart(11)}  ${window.usPerCall.toFixed(0).padStart(11)}  ${window.cpuUsPerCall.toFixed(0).padStart(15)}`);
  }
  // CPU time per call is steadier than the wall clock on a shared machine; the wall clock is the
  // issue's measure, and bench/suite.ts reads it from the last line.
  console.log(`long-session last/first CPU per-call ratio: ${result.cpuRatio.toFixed(2)}`);
  console.log(`long-session last/first per-call ratio: ${result.ratio.toFixed(2)}`);
}

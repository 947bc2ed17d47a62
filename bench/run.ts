/**
 * The scenario of issue 15 (docs/performance.md#the-scenarios): one user message; the model answers N times with 4
 * tool calls each (tools do no work), then a final answer. Prints µs of runtime overhead per tool
 * call at a short and a long session (default 50 and 200 turns), with durability `sync` and
 * `relaxed`, next to the two floors measured by this script in this run:
 *
 * - sync floor: one fsynced LevelDB batch of three small events per tool call;
 * - no-fsync floor: the same batch without sync;
 *
 * and the ratios the targets are stated in: sync ÷ sync floor and relaxed ÷ no-fsync floor at the
 * long session, and long ÷ short for each durability. Then user turns per second with and without
 * seals.
 *
 *   npm run bench                                     (all of bench/, then one summary table)
 *   node --import tsx bench/run.ts [--short 50] [--long 200] [--rounds 5] [--no-seals]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Level } from "level";
import { z } from "zod";
import { createRuntime, defineTool, generateSealKey, LevelEventLog, SealWitness } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { median, printRows, recordResult, roundsByDurability } from "./results.js";

const { values: options } = parseArgs({
  options: {
    short: { type: "string", default: "50" },
    long: { type: "string", default: "200" },
    rounds: { type: "string", default: "5" },
    "no-seals": { type: "boolean", default: false },
  },
});
const shortTurns = Number(options.short);
const longTurns = Number(options.long);
const rounds = Number(options.rounds);

type Durability = "sync" | "relaxed";
const callsPerTurn = 4;

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

/** µs per tool call of the bench scenario at `turns` turns, on a fresh LevelEventLog. */
async function scenario(turns: number, durability: Durability): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-bench-"));
  try {
    const steps: ScriptStep[] = [];
    for (let turn = 0; turn < turns; turn += 1) {
      steps.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, index) => ({ name: "noop", arguments: JSON.stringify({ n: turn * callsPerTurn + index }) })) });
    }
    steps.push({ content: "done" });
    const log = await LevelEventLog.open(dir, { durability });
    const runtime = await createRuntime({
      log,
      provider: scriptedProvider(steps),
      tools: [noop],
      budgets: { maxIterations: turns + 1, maxToolCalls: turns * callsPerTurn + 1 },
    });
    const session = await runtime.openSession("bench");
    const started = process.hrtime.bigint();
    const outcome = await session.send("go");
    const elapsed = Number(process.hrtime.bigint() - started) / 1000;
    if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}: ${outcome.reason}`);
    await log.close();
    return elapsed / (turns * callsPerTurn);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The floor of one durability: per tool call, one LevelDB batch of three small events (what a
 * tool call has to log at the least: planned, started, succeeded), fsynced for `sync`, not for
 * `relaxed`. µs per batch, over `calls` batches in a fresh directory.
 */
async function floor(calls: number, durability: Durability): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-floor-"));
  const db = new Level<string, string>(dir, { valueEncoding: "utf8" });
  try {
    await db.open();
    const value = JSON.stringify({ type: "turn.tool.succeeded", data: { callId: "call_x", output: "ok" } });
    const sync = durability === "sync";
    const started = process.hrtime.bigint();
    for (let call = 0; call < calls; call += 1) {
      await db.batch(
        [0, 1, 2].map((offset) => ({ type: "put" as const, key: String(call * 3 + offset).padStart(16, "0"), value })),
        { sync },
      );
    }
    return Number(process.hrtime.bigint() - started) / 1000 / calls;
  } finally {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * User turns (one message, one tool call, one answer) per second on a `sync` log, with and without
 * a seal at each turn end: the seal is one Ed25519 signature, one durable append to the seal
 * stream and one rewrite of the witness file.
 */
async function userTurns(turns: number, sealed: boolean): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-bench-seal-"));
  try {
    const steps: ScriptStep[] = [];
    for (let turn = 0; turn < turns; turn += 1) {
      steps.push({ toolCalls: [{ name: "noop", arguments: JSON.stringify({ n: turn }) }] }, { content: "done" });
    }
    const log = await LevelEventLog.open(join(dir, "log"), { durability: "sync" });
    const runtime = await createRuntime({
      log,
      provider: scriptedProvider(steps),
      tools: [noop],
      ...(sealed ? { seals: { key: generateSealKey(), witness: SealWitness.forLogDirectory(join(dir, "log"), { directory: join(dir, "keys") }) } } : {}),
    });
    const session = await runtime.openSession("bench");
    const started = process.hrtime.bigint();
    for (let turn = 0; turn < turns; turn += 1) {
      const outcome = await session.send("go");
      if (outcome.status !== "completed") throw new Error(`bench turn ended ${outcome.status}: ${outcome.reason}`);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (sealed && !(await runtime.verify()).ok) throw new Error("the sealed bench log does not verify");
    await runtime.close();
    await log.close();
    return turns / seconds;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Round {
  floor: number;
  short: number;
  long: number;
}

/** One round of a durability: its floor, then its short and long scenario (`reversed`: backwards). */
async function round(durability: Durability, reversed: boolean): Promise<Round> {
  const figures: Partial<Round> = {};
  const steps: [keyof Round, () => Promise<number>][] = [
    ["floor", () => floor(longTurns * callsPerTurn, durability)],
    ["short", () => scenario(shortTurns, durability)],
    ["long", () => scenario(longTurns, durability)],
  ];
  for (const [name, measure] of reversed ? steps.reverse() : steps) figures[name] = await measure();
  return figures as Round;
}

// Warm up: JIT, the LevelDB binding and the disk's caches, so the first round is not an outlier.
// The figures are a long-running host's: V8 takes a few thousand tool calls to reach its steady
// state (a 200-turn scenario run six times in one process costs 2–2.5× as much per call the
// first time as from the fourth time on), so each durability runs the long scenario three times first.
for (const durability of ["sync", "relaxed"] as const) {
  await floor(40, durability);
  for (let index = 0; index < 3; index += 1) await scenario(longTurns, durability);
}

// This machine is shared and its load drifts over seconds: a floor measured once, before or after
// the scenarios, can meet a different load than they did, and the ratio would measure the drift.
// So each round measures a durability's floor right beside its scenarios, in alternating order
// (forwards, then backwards), every ratio is taken within one round, and the figures printed are
// the medians over the rounds — a load spike moves one round, not the median.
const perDurability = await roundsByDurability(rounds, round);

const rows: string[][] = [[`scenario (median of ${rounds} rounds)`, "µs per tool call"]];
const floorNames: Record<Durability, string> = { sync: "sync floor: one fsynced LevelDB batch of 3 events", relaxed: "no-fsync floor: the same batch without sync" };
for (const [durability, measured] of perDurability) {
  const floorMicros = median(measured.map((figures) => figures.floor));
  const shortMicros = median(measured.map((figures) => figures.short));
  const longMicros = median(measured.map((figures) => figures.long));
  const floorRatio = median(measured.map((figures) => figures.long / figures.floor));
  const growth = median(measured.map((figures) => figures.long / figures.short));
  const floorName = durability === "sync" ? "sync floor" : "no-fsync floor";
  rows.push([floorNames[durability], floorMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${shortTurns} turns`, shortMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${longTurns} turns`, longMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${longTurns} turns ÷ ${floorName}`, `${floorRatio.toFixed(2)}×`]);
  rows.push([`turnlog ${durability}, ${longTurns}/${shortTurns} turns`, `${growth.toFixed(2)}×`]);
  recordResult(`run.${durability}.floor`, floorNames[durability], floorMicros, "µs");
  recordResult(`run.${durability}.short`, `turnlog ${durability}, ${shortTurns} turns, per tool call`, shortMicros, "µs");
  recordResult(`run.${durability}.long`, `turnlog ${durability}, ${longTurns} turns, per tool call`, longMicros, "µs");
  recordResult(`run.${durability}.floorRatio`, `turnlog ${durability} ÷ ${floorName}, ${longTurns} turns`, floorRatio, "×");
  recordResult(`run.${durability}.growth`, `turnlog ${durability}, ${longTurns} ÷ ${shortTurns} turns`, growth, "×");
}

if (!options["no-seals"]) {
  await userTurns(20, true); // warm up
  const plainTurns = await userTurns(200, false);
  const sealedTurns = await userTurns(200, true);
  const sealMillis = 1000 / sealedTurns - 1000 / plainTurns;
  rows.push(["user turns per second, sync, no seals", plainTurns.toFixed(0)]);
  rows.push(["user turns per second, sync, sealed", sealedTurns.toFixed(0)]);
  rows.push(["seal cost per turn end (ms)", sealMillis.toFixed(2)]);
  recordResult("run.seal.plainTurns", "user turns per second, sync, no seals", plainTurns, "turns/s");
  recordResult("run.seal.sealedTurns", "user turns per second, sync, sealed", sealedTurns, "turns/s");
  recordResult("run.seal.cost", "seal cost per turn end", sealMillis, "ms");
}
printRows(rows);
console.log("(each ratio is the median of the rounds' own ratios, so it need not equal the quotient of two medians above)");

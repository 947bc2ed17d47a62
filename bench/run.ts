/**
 * The scenario of DESIGN.md §15: one user message; the model answers N times with 4 tool calls
 * each (tools do no work), then a final answer. Prints µs of runtime overhead per tool call at 50
 * and 200 turns, with durability `sync` and `relaxed`, next to the floor: one fsynced LevelDB
 * batch of three small events per tool call.
 *
 *   npm run bench
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { z } from "zod";
import { createRuntime, defineTool, generateSealKey, LevelEventLog, SealWitness } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";

const callsPerTurn = 4;

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

async function scenario(turns: number, durability: "sync" | "relaxed"): Promise<number> {
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

async function floor(calls: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-floor-"));
  const db = new Level<string, string>(dir, { valueEncoding: "utf8" });
  try {
    await db.open();
    const value = JSON.stringify({ type: "turn.tool.succeeded", data: { callId: "call_x", output: "ok" } });
    const started = process.hrtime.bigint();
    for (let call = 0; call < calls; call += 1) {
      await db.batch(
        [0, 1, 2].map((offset) => ({ type: "put" as const, key: String(call * 3 + offset).padStart(16, "0"), value })),
        { sync: true },
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

const rows: string[][] = [["scenario", "µs per tool call"]];
rows.push(["floor: one fsynced batch of 3 events", (await floor(400)).toFixed(0)]);
for (const durability of ["sync", "relaxed"] as const) {
  await scenario(10, durability); // warm up
  const at50 = await scenario(50, durability);
  const at200 = await scenario(200, durability);
  rows.push([`turnlog ${durability}, 50 turns`, at50.toFixed(0)]);
  rows.push([`turnlog ${durability}, 200 turns`, at200.toFixed(0)]);
  rows.push([`turnlog ${durability}, 200/50 ratio`, (at200 / at50).toFixed(2)]);
}
await userTurns(20, true); // warm up
const plainTurns = await userTurns(200, false);
const sealedTurns = await userTurns(200, true);
rows.push(["user turns per second, sync, no seals", plainTurns.toFixed(0)]);
rows.push(["user turns per second, sync, sealed", sealedTurns.toFixed(0)]);
rows.push(["seal cost per turn end (ms)", (1000 / sealedTurns - 1000 / plainTurns).toFixed(2)]);
const width = Math.max(...rows.map((row) => row[0]!.length));
for (const [name, value] of rows) console.log(`${name!.padEnd(width)}  ${value}`);

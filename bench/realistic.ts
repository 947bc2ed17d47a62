/**
 * The realistic-calls scenario of issue 35 (docs/performance.md#the-scenarios): one user message;
 * the scripted model answers N times with 4 calls — two file reads and a code search (read-only) and
 * a file write (a workspace write, run unasked in `full-auto`), arguments of about 80 characters —
 * each returning a precomputed output of a few hundred to a few thousand characters of source code,
 * log lines or JSON (bench/realistic-workload.ts); then a final answer. The tools cost nothing, so
 * the time is turnlog's work.
 *
 * Each round measures, for each durability, its floor beside its short and long scenario (alternating
 * order, as bench/run.ts does), and for `relaxed` the Vercel AI SDK's `generateText` playing the same
 * script with the same tools and outputs over its own mock model (`MockLanguageModelV3`, `ai/test`)
 * at the short length: the reference the issue states `relaxed` against (it persists nothing).
 *
 * - sync floor: per call, one fsynced LevelDB batch of 3 events carrying that call's arguments and
 *   output (what a durably logged call has to write at the least);
 * - no-fsync floor: the same batches without sync.
 *
 *   node --import tsx bench/realistic.ts [--short 50] [--long 200] [--rounds 5] [--warmups 3]
 *   npm run bench                                     (as the step "realistic")
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { generateText, stepCountIs, tool, type ToolSet } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Level } from "level";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { realisticAnswer, realisticCallsPerTurn, realisticPrompt, realisticScript, realisticTools, type RealisticCall } from "./realistic-workload.js";
import { median, printRows, recordResult, roundsByDurability } from "./results.js";

const { values: options } = parseArgs({
  options: {
    short: { type: "string", default: "50" },
    long: { type: "string", default: "200" },
    rounds: { type: "string", default: "5" },
    warmups: { type: "string", default: "3" },
  },
});
const shortTurns = Number(options.short);
const longTurns = Number(options.long);
const rounds = Number(options.rounds);
const warmups = Number(options.warmups);

type Durability = "sync" | "relaxed";

const script = realisticScript(longTurns);
/** Every call's output by its ID: a tool's run is one map lookup. */
const outputs = new Map<string, string>(script.flat().map((call) => [call.id, call.output]));
const outputOf = (callId: string): string => {
  const output = outputs.get(callId);
  if (output === undefined) throw new Error(`no scripted output for ${callId}`);
  return output;
};

/** The JSON schema of each tool's arguments (the same for turnlog and the AI SDK). */
const inputs = {
  read_file: z.object({ path: z.string(), offset: z.number(), limit: z.number(), encoding: z.string() }),
  search_code: z.object({ pattern: z.string(), glob: z.string(), maxResults: z.number() }),
  write_file: z.object({ path: z.string(), content: z.string() }),
};

const turnlogTools = realisticTools.map((spec) =>
  defineTool({
    name: spec.name,
    description: spec.description,
    risk: spec.readOnly ? "read-only-local" : "workspace-write",
    input: inputs[spec.name] as z.ZodObject,
    run: (_input, ctx) => outputOf(ctx.callId),
  }),
);

const aiSdkTools: ToolSet = Object.fromEntries(
  realisticTools.map((spec) => [spec.name, tool({ description: spec.description, inputSchema: inputs[spec.name] as z.ZodObject, execute: (_input, { toolCallId }) => outputOf(toolCallId) })]),
);

function turnlogSteps(turns: number): ScriptStep[] {
  const steps: ScriptStep[] = script.slice(0, turns).map((calls) => ({ toolCalls: calls.map((call) => ({ id: call.id, name: call.tool, arguments: call.arguments })) }));
  steps.push({ content: realisticAnswer });
  return steps;
}

/** µs per tool call of turnlog on the scenario at `turns` turns, on a fresh LevelEventLog. */
async function scenario(turns: number, durability: Durability): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-bench-realistic-"));
  try {
    const log = await LevelEventLog.open(dir, { durability });
    const runtime = await createRuntime({
      log,
      provider: scriptedProvider(turnlogSteps(turns)),
      tools: turnlogTools,
      policy: { approvalMode: "full-auto", workspace: { root: dir, trusted: true } },
      budgets: { maxIterations: turns + 1, maxToolCalls: turns * realisticCallsPerTurn + 1 },
    });
    const session = await runtime.openSession("bench");
    const started = process.hrtime.bigint();
    const outcome = await session.send(realisticPrompt);
    const elapsed = Number(process.hrtime.bigint() - started) / 1000;
    if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}: ${outcome.reason}`);
    await runtime.close();
    await log.close();
    return elapsed / (turns * realisticCallsPerTurn);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };

/** µs per tool call of the AI SDK's `generateText` on the same script (no log: it persists nothing). */
async function aiSdk(turns: number): Promise<number> {
  const answers = script.slice(0, turns).map((calls: RealisticCall[]) => ({
    content: calls.map((call) => ({ type: "tool-call" as const, toolCallId: call.id, toolName: call.tool, input: call.arguments })),
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  }));
  answers.push({ content: [{ type: "text", text: realisticAnswer }] as never, finishReason: { unified: "stop", raw: "stop" } as never, usage, warnings: [] });
  let next = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async () => {
      const answer = answers[next];
      next += 1;
      if (answer === undefined) throw new Error("the AI SDK asked beyond the script");
      return answer;
    },
  });
  const started = process.hrtime.bigint();
  const result = await generateText({ model, tools: aiSdkTools, prompt: realisticPrompt, stopWhen: stepCountIs(turns + 1) });
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  if (result.text !== realisticAnswer || result.steps.length !== turns + 1) throw new Error(`the AI SDK ended after ${result.steps.length} steps with ${JSON.stringify(result.text)}`);
  return elapsed / (turns * realisticCallsPerTurn);
}

/**
 * The floor of one durability at `turns` turns: per call, one LevelDB batch of three events (planned
 * with the call's arguments, started, succeeded with its output), fsynced for `sync`.
 */
async function floor(turns: number, durability: Durability): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-floor-realistic-"));
  const db = new Level<string, string>(dir, { valueEncoding: "utf8" });
  try {
    await db.open();
    const calls = script.slice(0, turns).flat();
    const batches = calls.map((call, index) => [
      JSON.stringify({ type: "turn.tool.planned", data: { callId: call.id, tool: call.tool, arguments: call.arguments } }),
      JSON.stringify({ type: "turn.tool.started", data: { callId: call.id } }),
      JSON.stringify({ type: "turn.tool.succeeded", data: { callId: call.id, output: call.output } }),
    ].map((value, offset) => ({ type: "put" as const, key: String(index * 3 + offset).padStart(16, "0"), value })));
    const sync = durability === "sync";
    const started = process.hrtime.bigint();
    for (const batch of batches) await db.batch(batch, { sync });
    return Number(process.hrtime.bigint() - started) / 1000 / calls.length;
  } finally {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
}

interface Round {
  floor: number;
  short: number;
  long: number;
  /** The AI SDK at the short length (measured in the `relaxed` rounds). */
  aiSdk?: number;
}

async function round(durability: Durability, reversed: boolean): Promise<Round> {
  const figures: Partial<Round> = {};
  const steps: [keyof Round, () => Promise<number>][] = [
    ["floor", () => floor(longTurns, durability)],
    ["short", () => scenario(shortTurns, durability)],
    ["long", () => scenario(longTurns, durability)],
  ];
  if (durability === "relaxed") steps.splice(2, 0, ["aiSdk", () => aiSdk(shortTurns)]);
  for (const [name, measure] of reversed ? steps.reverse() : steps) figures[name] = await measure();
  return figures as Round;
}

// Warm up as bench/run.ts does: V8 needs a few thousand calls to settle, so each side runs its long
// form a few times before the rounds.
for (const durability of ["sync", "relaxed"] as const) {
  await floor(10, durability);
  for (let index = 0; index < warmups; index += 1) await scenario(longTurns, durability);
}
for (let index = 0; index < warmups; index += 1) await aiSdk(longTurns);

const perDurability = await roundsByDurability(rounds, round);

const characters = script.flat().reduce((sum, call) => sum + call.output.length, 0) / (longTurns * realisticCallsPerTurn);
const rows: string[][] = [[`realistic calls (median of ${rounds} rounds; outputs ${Math.round(characters)} characters on average)`, "µs per tool call"]];
const floorNames: Record<Durability, string> = { sync: "sync floor: one fsynced LevelDB batch of the call's 3 events", relaxed: "no-fsync floor: the same batch without sync" };
for (const [durability, measured] of perDurability) {
  const floorName = durability === "sync" ? "sync floor" : "no-fsync floor";
  const floorMicros = median(measured.map((figures) => figures.floor));
  const shortMicros = median(measured.map((figures) => figures.short));
  const longMicros = median(measured.map((figures) => figures.long));
  const shortRatio = median(measured.map((figures) => figures.short / figures.floor));
  const longRatio = median(measured.map((figures) => figures.long / figures.floor));
  const growth = median(measured.map((figures) => figures.long / figures.short));
  rows.push([floorNames[durability], floorMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${shortTurns} turns`, shortMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${longTurns} turns`, longMicros.toFixed(0)]);
  rows.push([`turnlog ${durability}, ${shortTurns} turns ÷ ${floorName}`, `${shortRatio.toFixed(2)}×`]);
  rows.push([`turnlog ${durability}, ${longTurns} turns ÷ ${floorName}`, `${longRatio.toFixed(2)}×`]);
  rows.push([`turnlog ${durability}, ${longTurns}/${shortTurns} turns`, `${growth.toFixed(2)}×`]);
  recordResult(`realistic.${durability}.floor`, `realistic: ${floorNames[durability]}`, floorMicros, "µs");
  recordResult(`realistic.${durability}.short`, `realistic: turnlog ${durability}, ${shortTurns} turns, per tool call`, shortMicros, "µs");
  recordResult(`realistic.${durability}.long`, `realistic: turnlog ${durability}, ${longTurns} turns, per tool call`, longMicros, "µs");
  recordResult(`realistic.${durability}.shortFloorRatio`, `realistic: turnlog ${durability} ÷ ${floorName}, ${shortTurns} turns`, shortRatio, "×");
  recordResult(`realistic.${durability}.floorRatio`, `realistic: turnlog ${durability} ÷ ${floorName}, ${longTurns} turns`, longRatio, "×");
  recordResult(`realistic.${durability}.growth`, `realistic: turnlog ${durability}, ${longTurns} ÷ ${shortTurns} turns`, growth, "×");
  if (durability === "relaxed") {
    const aiSdkMicros = median(measured.map((figures) => figures.aiSdk ?? NaN));
    const overAiSdk = median(measured.map((figures) => figures.short / (figures.aiSdk ?? NaN)));
    rows.push([`AI SDK generateText (mock model, no log), ${shortTurns} turns`, aiSdkMicros.toFixed(0)]);
    rows.push([`turnlog relaxed ÷ AI SDK, ${shortTurns} turns`, `${overAiSdk.toFixed(2)}×`]);
    recordResult("realistic.aiSdk", `realistic: AI SDK generateText (mock model), ${shortTurns} turns, per tool call`, aiSdkMicros, "µs");
    recordResult("realistic.relaxed.aiSdkRatio", `realistic: turnlog relaxed ÷ AI SDK, ${shortTurns} turns`, overAiSdk, "×");
  }
}
printRows(rows);
console.log("(each ratio is the median of the rounds' own ratios, so it need not equal the quotient of two medians above)");

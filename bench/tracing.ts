/**
 * What live spans cost (`createRuntime({ tracer })`, docs/observability.md): the bench scenario of
 * bench/run.ts — one user message, N turns of 4 tool calls that do no work — on a `relaxed`
 * LevelDB log (no fsync, so the runtime's own work is most of the time), without a tracer and
 * with one. The tracer is OpenTelemetry's own SDK (`BasicTracerProvider` with a
 * `SimpleSpanProcessor`) over an exporter that drops what it gets, so the figure is turnlog's
 * derivation and the SDK's span work, not an exporter's I/O. Rounds alternate the two, and each
 * ratio is taken within a round; the medians are printed.
 *
 *   node --import tsx bench/tracing.ts [--turns 200] [--rounds 5]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BasicTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../src/index.js";
import { scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { median, printRows, recordResult } from "./results.js";

const { values: options } = parseArgs({
  options: {
    turns: { type: "string", default: "200" },
    rounds: { type: "string", default: "5" },
  },
});
const turns = Number(options.turns);
const rounds = Number(options.rounds);
const callsPerTurn = 4;

const noop = defineTool({ name: "noop", description: "does nothing", risk: "read-only-local", input: z.object({ n: z.number() }), run: () => "ok" });

/** An exporter that takes every span and keeps none: the SDK's own work without an exporter's. */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/** µs per tool call, and the spans exported (0 without a tracer). */
async function scenario(traced: boolean): Promise<{ micros: number; spans: number }> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-bench-tracing-"));
  try {
    const steps: ScriptStep[] = [];
    for (let turn = 0; turn < turns; turn += 1) {
      steps.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, index) => ({ name: "noop", arguments: JSON.stringify({ n: turn * callsPerTurn + index }) })) });
    }
    steps.push({ content: "done" });
    const exporter = new DroppingExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const runtime = await createRuntime({
      log,
      provider: scriptedProvider(steps),
      tools: [noop],
      budgets: { maxIterations: turns + 1, maxToolCalls: turns * callsPerTurn + 1 },
      ...(traced ? { tracer: provider.getTracer("turnlog-bench") } : {}),
    });
    const session = await runtime.openSession("bench");
    const started = process.hrtime.bigint();
    const outcome = await session.send("go");
    const elapsed = Number(process.hrtime.bigint() - started) / 1000;
    if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}: ${outcome.reason}`);
    await runtime.close();
    await log.close();
    await provider.shutdown();
    // One chat span per turn and the final answer, one execute_tool span per call, one invoke_agent.
    const expected = traced ? turns + 1 + turns * callsPerTurn + 1 : 0;
    if (exporter.spans !== expected) throw new Error(`expected ${expected} spans, the exporter got ${exporter.spans}`);
    return { micros: elapsed / (turns * callsPerTurn), spans: exporter.spans };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// Warm up, as bench/run.ts does: V8 reaches its steady state after a few thousand calls.
for (let index = 0; index < 3; index += 1) {
  await scenario(false);
  await scenario(true);
}

const plain: number[] = [];
const traced: number[] = [];
const ratios: number[] = [];
let spans = 0;
for (let index = 0; index < rounds; index += 1) {
  const order = index % 2 === 0 ? [false, true] : [true, false];
  const figures = new Map<boolean, number>();
  for (const withTracer of order) {
    const measured = await scenario(withTracer);
    figures.set(withTracer, measured.micros);
    if (withTracer) spans = measured.spans;
  }
  plain.push(figures.get(false)!);
  traced.push(figures.get(true)!);
  ratios.push(figures.get(true)! / figures.get(false)!);
}

const plainMicros = median(plain);
const tracedMicros = median(traced);
const ratio = median(ratios);
printRows([
  [`scenario: ${turns} turns × ${callsPerTurn} calls, relaxed (median of ${rounds} rounds)`, "µs per tool call"],
  ["no tracer", plainMicros.toFixed(0)],
  [`a tracer (OpenTelemetry SDK, spans dropped; ${spans} spans per session)`, tracedMicros.toFixed(0)],
  ["with a tracer ÷ without", `${ratio.toFixed(2)}×`],
]);
recordResult("tracing.plain", `relaxed, ${turns} turns, no tracer, per tool call`, plainMicros, "µs");
recordResult("tracing.traced", `relaxed, ${turns} turns, with a tracer, per tool call`, tracedMicros, "µs");
recordResult("tracing.ratio", `relaxed, ${turns} turns, with a tracer ÷ without`, ratio, "×");

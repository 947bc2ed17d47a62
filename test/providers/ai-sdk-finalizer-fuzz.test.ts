import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finalizeAiSdkStreamParts } from "../../src/ai-sdk.js";

/*
 * The AI SDK finalizer fuzzed: random answers — text, reasoning, tool calls streamed as input
 * pieces or sent whole, under any finish reason — cut at any part. Whatever arrives, a surfaced
 * call is one the stream finished (its `tool-call` part arrived, arguments as sent), and a call
 * started and not finished never disappears into a successful answer.
 */

interface CallPlan {
  readonly id: string;
  readonly input: string;
  readonly pieces: number;
  readonly streamed: boolean;
  /** Whether the stream finishes the call (sends its `tool-call` part); a streamed call may be left open. */
  readonly finished: boolean;
}

const callPlan = (index: number) =>
  fc.record({
    input: fc.oneof(fc.constant("{}"), fc.dictionary(fc.constantFrom("path", "word", "limit"), fc.oneof(fc.string(), fc.integer())).map((value) => JSON.stringify(value))),
    pieces: fc.integer({ min: 1, max: 4 }),
    streamed: fc.boolean(),
    finished: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  }).map((plan): CallPlan => ({ ...plan, id: `call_${index}`, finished: plan.finished || !plan.streamed }));

/** The parts of one call: streamed as tool-input pieces then the tool-call, or the tool-call alone. */
function callParts(plan: CallPlan): Record<string, unknown>[] {
  const finished = { type: "tool-call", toolCallId: plan.id, toolName: "lookup", input: plan.input };
  if (!plan.streamed) return [finished];
  const size = Math.ceil(plan.input.length / plan.pieces);
  const pieces = Array.from({ length: plan.pieces }, (_, index) => plan.input.slice(index * size, (index + 1) * size)).filter((piece) => piece !== "");
  const started = [{ type: "tool-input-start", id: plan.id, toolName: "lookup" }, ...pieces.map((delta) => ({ type: "tool-input-delta", id: plan.id, delta }))];
  return plan.finished ? [...started, { type: "tool-input-end", id: plan.id }, finished] : started;
}

const answer = fc
  .record({
    reasoning: fc.array(fc.string(), { maxLength: 2 }),
    text: fc.array(fc.string(), { maxLength: 3 }),
    calls: fc.integer({ min: 0, max: 3 }).chain((count) => fc.tuple(...Array.from({ length: count }, (_, index) => callPlan(index)))),
    finish: fc.constantFrom("stop", "tool-calls", "length", "content-filter", "other", "error"),
    // Most answers arrive whole; one in four is cut somewhere.
    cut: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat() }),
  })
  .map(({ reasoning, text, calls, finish, cut }) => {
    const parts: Record<string, unknown>[] = [
      ...reasoning.flatMap((delta, index) => [
        { type: "reasoning-start", id: `r${index}` },
        { type: "reasoning-delta", id: `r${index}`, delta },
        { type: "reasoning-end", id: `r${index}`, providerMetadata: { openai: { itemId: `rs_${index}` } } },
      ]),
      ...(text.length > 0 ? [{ type: "text-start", id: "t" }, ...text.map((delta) => ({ type: "text-delta", id: "t", delta })), { type: "text-end", id: "t" }] : []),
      ...calls.flatMap(callParts),
      { type: "finish", finishReason: { unified: finish, raw: undefined }, usage: { inputTokens: { total: 10 }, outputTokens: { total: 5 } } },
    ];
    return { calls, parts: cut === undefined ? parts : parts.slice(0, cut % (parts.length + 1)) };
  });

describe("the AI SDK finalizer, fuzzed", () => {
  it("never surfaces an unfinished call, and never lets a started call vanish from a successful answer", () => {
    fc.assert(
      fc.property(answer, ({ calls, parts }) => {
        const result = finalizeAiSdkStreamParts(parts);
        const finishedIds = new Set(parts.flatMap((part) => (part.type === "tool-call" ? [part.toolCallId as string] : [])));
        const startedIds = new Set(parts.flatMap((part) => (part.type === "tool-input-start" ? [part.id as string] : [])));
        const ended = parts.at(-1)?.type === "finish";
        if (!ended) expect(result.ok).toBe(false);
        const open = [...startedIds].filter((id) => !finishedIds.has(id));
        const finish = ended ? (parts.at(-1)?.finishReason as { unified: string }).unified : undefined;
        // An answer left with a call open fails: cut by the length limit, a truncation the loop retries once then refuses; otherwise an incomplete stream.
        if (open.length > 0 && finish !== undefined && finish !== "error") expect(result.ok ? "ok" : result.kind).toBe(finish === "length" ? "truncated-tool-calls" : "incomplete-stream");
        if (!result.ok) return;
        // Every surfaced call was finished in the stream, with the arguments it was sent with.
        for (const surfaced of result.response.toolCalls) {
          expect(finishedIds.has(surfaced.id ?? "")).toBe(true);
          expect(surfaced.arguments).toBe(calls.find((plan) => plan.id === surfaced.id)?.input);
        }
        expect(result.response.toolCalls.map((surfaced) => surfaced.id)).toEqual([...finishedIds]);
        // A started call that never finished fails the answer instead.
        for (const id of startedIds) expect(finishedIds.has(id)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

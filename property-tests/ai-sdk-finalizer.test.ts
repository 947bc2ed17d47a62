import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finalizeAiSdkStreamParts } from "../src/providers/ai-sdk/ai-sdk-finalizer.js";

/*
 * The AI SDK finalizer over fuzzed stream-part sequences (docs/providers.md, "The AI SDK bridge"):
 * whatever order, repetition or truncation the parts come in, a call is surfaced only if its
 * `tool-call` part arrived, and a response is surfaced only after a `finish` part; a call that
 * started and never finished makes the whole stream fail.
 */

const ids = fc.constantFrom("call_a", "call_b", "call_c", "__proto__", "constructor", "");
const names = fc.constantFrom("lookup", "list_words", "__proto__");
const metadata = fc.option(fc.dictionary(fc.constantFrom("openai", "anthropic", "google", "__proto__"), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 })), { nil: undefined });
const unified = fc.constantFrom("stop", "length", "tool-calls", "content-filter", "error", "other");

/** One stream part of any kind the V3 interface has, with IDs drawn from a small pool so they collide. */
const part: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ type: fc.constantFrom("text-start", "text-end", "reasoning-start", "reasoning-end"), id: ids, providerMetadata: metadata }),
  fc.record({ type: fc.constantFrom("text-delta", "reasoning-delta"), id: ids, delta: fc.string({ unit: "binary", maxLength: 12 }), providerMetadata: metadata }),
  fc.record({ type: fc.constant("tool-input-start"), id: ids, toolName: names, providerExecuted: fc.option(fc.boolean(), { nil: undefined }) }),
  fc.record({ type: fc.constant("tool-input-delta"), id: ids, delta: fc.string({ maxLength: 8 }) }),
  fc.record({ type: fc.constant("tool-input-end"), id: ids }),
  fc.record({
    type: fc.constant("tool-call"),
    toolCallId: ids,
    toolName: names,
    input: fc.oneof(fc.json({ maxDepth: 1 }), fc.string({ maxLength: 8 })),
    providerExecuted: fc.option(fc.boolean(), { nil: undefined }),
    providerMetadata: metadata,
  }),
  fc.record({ type: fc.constant("finish"), finishReason: fc.record({ unified, raw: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }) }), usage: fc.constant({ inputTokens: { total: 3 }, outputTokens: { total: 4 } }) }),
  fc.constantFrom<Record<string, unknown>>({ type: "stream-start", warnings: [] }, { type: "response-metadata", id: "resp" }, { type: "raw", rawValue: {} }, { type: "error", error: { type: "overloaded_error" } }),
);

/** What the parts say about tool calls: which IDs finished, which started and never did. */
function callsOf(parts: readonly Record<string, unknown>[]) {
  const finished: string[] = [];
  const started = new Set<string>();
  const done = new Set<string>();
  for (const item of parts) {
    if (item.type === "tool-call") {
      done.add(item.toolCallId as string);
      if (item.providerExecuted !== true) finished.push(item.toolCallId as string);
    } else if ((item.type === "tool-input-start" || item.type === "tool-input-delta") && item.providerExecuted !== true) {
      started.add(item.id as string);
    } else if (item.type === "tool-input-start") {
      done.add(item.id as string);
    }
  }
  return { finished, unfinished: [...started].filter((id) => !done.has(id)) };
}

describe("the AI SDK finalizer (fuzzed stream parts)", () => {
  it("never surfaces a call whose tool-call part did not arrive, nor a response without a finish part", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 24 }), (parts) => {
        const result = finalizeAiSdkStreamParts(parts);
        if (!result.ok) return;
        const { finished, unfinished } = callsOf(parts);
        expect(unfinished).toEqual([]);
        expect(parts.some((item) => item.type === "finish")).toBe(true);
        expect(parts.some((item) => item.type === "error")).toBe(false);
        // Exactly the finished calls, in the order their tool-call parts came (an empty ID is none).
        expect(result.response.toolCalls.map((call) => call.id ?? "")).toEqual(finished);
      }),
    );
  });

  it("a stream cut anywhere before its finish part is a failure, never a partial response", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 24 }), fc.nat(), (parts, cut) => {
        const firstFinish = parts.findIndex((item) => item.type === "finish");
        const end = firstFinish < 0 ? parts.length : Math.min(cut % (parts.length + 1), firstFinish);
        const result = finalizeAiSdkStreamParts(parts.slice(0, end));
        expect(result.ok).toBe(false);
      }),
    );
  });

  it("a well-formed stream with any noise around its finished calls surfaces exactly those calls (the fuzz reaches the ok path)", () => {
    const call = fc.record({ id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/), name: names, input: fc.json({ maxDepth: 1 }) });
    fc.assert(
      fc.property(fc.uniqueArray(call, { selector: (item) => item.id, maxLength: 4 }), fc.array(fc.constantFrom<Record<string, unknown>>({ type: "stream-start", warnings: [] }, { type: "raw", rawValue: 1 }, { type: "text-delta", id: "t", delta: "x" }), { maxLength: 4 }), (calls, noise) => {
        const parts = [
          ...noise,
          ...calls.flatMap((item) => [
            { type: "tool-input-start", id: item.id, toolName: item.name },
            { type: "tool-input-delta", id: item.id, delta: item.input },
            { type: "tool-call", toolCallId: item.id, toolName: item.name, input: item.input },
          ]),
          { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage: { inputTokens: { total: 1 }, outputTokens: { total: 2 } } },
        ];
        const result = finalizeAiSdkStreamParts(parts);
        expect(result.ok && result.response.toolCalls).toEqual(calls.map((item) => ({ id: item.id, name: item.name, arguments: item.input })));
      }),
    );
  });

  it("the echo's tool-call parts name each surfaced call once, in order", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 24 }), (parts) => {
        const result = finalizeAiSdkStreamParts(parts);
        if (!result.ok || result.response.echo === undefined) return;
        const echoed = (result.response.echo.parts as { type: string; call?: number }[]).filter((item) => item.type === "tool-call").map((item) => item.call);
        expect(echoed).toEqual(result.response.toolCalls.map((_, index) => index));
      }),
    );
  });
});

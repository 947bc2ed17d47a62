import { APICallError } from "@ai-sdk/provider";
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { aiSdkProvider, finalizeAiSdkStreamParts } from "../../src/ai-sdk.js";
import { eventsOf, runSession } from "./support/provider-session.js";

/* The AI SDK finalizer's rules part by part, and how the model's errors map onto turnlog's failures. */

const finish = (unified: string, usage: unknown = { inputTokens: { total: 10 }, outputTokens: { total: 2 } }) => ({ type: "finish", finishReason: { unified, raw: undefined }, usage });

describe("finalizeAiSdkStreamParts", () => {
  it("text and reasoning: only text is visible; no echo when nothing in the answer needs sending back", () => {
    const seen: string[] = [];
    const result = finalizeAiSdkStreamParts(
      [
        { type: "reasoning-start", id: "r" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hel" },
        { type: "text-delta", id: "t", delta: "lo" },
        { type: "text-end", id: "t" },
        finish("stop"),
      ],
      { onText: (text) => seen.push(text) },
    );
    expect(seen).toEqual(["Hel", "lo"]);
    // An empty reasoning part still needs sending back (its metadata may come later, as OpenAI's does).
    expect(result).toEqual({ ok: true, response: { content: "Hello", toolCalls: [], finishReason: "stop", usage: { inputTokens: 10, outputTokens: 2 }, echo: { parts: [{ type: "reasoning", text: "" }, { type: "text", text: "Hello" }] } } });
    const plain = finalizeAiSdkStreamParts([{ type: "text-delta", id: "t", delta: "ok" }, finish("other")]);
    expect(plain).toEqual({ ok: true, response: { content: "ok", toolCalls: [], finishReason: "unknown", usage: { inputTokens: 10, outputTokens: 2 } } });
  });

  it("keeps the last providerMetadata a part carried, as the AI SDK does, and a reused part ID starts a new part", () => {
    const result = finalizeAiSdkStreamParts([
      { type: "reasoning-start", id: "r", providerMetadata: { anthropic: { signature: "" } } },
      { type: "reasoning-delta", id: "r", delta: "think" },
      { type: "reasoning-delta", id: "r", delta: "", providerMetadata: { anthropic: { signature: "sig-1" } } },
      { type: "reasoning-end", id: "r" },
      { type: "reasoning-start", id: "r", providerMetadata: { anthropic: { redactedData: "opaque" } } },
      { type: "reasoning-end", id: "r" },
      finish("stop"),
    ]);
    expect(result.ok && result.response.echo).toEqual({
      parts: [
        { type: "reasoning", text: "think", providerMetadata: { anthropic: { signature: "sig-1" } } },
        { type: "reasoning", text: "", providerMetadata: { anthropic: { redactedData: "opaque" } } },
      ],
    });
  });

  it("leaves out calls the provider ran itself, and their results", () => {
    const result = finalizeAiSdkStreamParts([
      { type: "tool-input-start", id: "ws_1", toolName: "web_search", providerExecuted: true },
      { type: "tool-call", toolCallId: "ws_1", toolName: "web_search", input: "{}", providerExecuted: true },
      { type: "tool-result", toolCallId: "ws_1", toolName: "web_search", result: { found: 1 } },
      { type: "tool-call", toolCallId: "call_1", toolName: "lookup", input: '{"word":"alpha"}' },
      finish("tool-calls"),
    ]);
    expect(result.ok && result.response.toolCalls).toEqual([{ id: "call_1", name: "lookup", arguments: '{"word":"alpha"}' }]);
  });

  it("fails on an error part, an error finish, a missing finish, and a part that is not an object", () => {
    expect(finalizeAiSdkStreamParts([{ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }])).toMatchObject({ ok: false, kind: "transport", retryable: true, message: "ai-sdk stream error: overloaded_error: Overloaded" });
    expect(finalizeAiSdkStreamParts([{ type: "error", error: { error: { type: "invalid_request_error", message: "bad" } } }])).toMatchObject({ ok: false, kind: "transport", retryable: false });
    expect(finalizeAiSdkStreamParts([{ type: "tool-call", toolCallId: "a", toolName: "lookup", input: "{}" }, finish("error")])).toMatchObject({ ok: false, kind: "transport", retryable: true });
    expect(finalizeAiSdkStreamParts([{ type: "tool-call", toolCallId: "a", toolName: "lookup", input: "{}" }])).toMatchObject({ ok: false, kind: "incomplete-stream" });
    expect(finalizeAiSdkStreamParts([{ type: "text-delta", id: "t", delta: "half" }])).toMatchObject({ ok: false, kind: "incomplete-stream" });
    expect(finalizeAiSdkStreamParts(["data: {}"])).toMatchObject({ ok: false, kind: "transport" });
  });

  it("a finished call under a length finish is surfaced with finish reason length, for the loop to refuse", () => {
    const result = finalizeAiSdkStreamParts([{ type: "tool-call", toolCallId: "a", toolName: "lookup", input: '{"word":"al' }, finish("length")]);
    expect(result).toMatchObject({ ok: true, response: { finishReason: "length", toolCalls: [{ id: "a" }] } });
  });
});

const textAnswer: LanguageModelV3StreamPart[] = [
  { type: "text-delta", id: "t", delta: "fine" },
  { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } } },
];

describe("aiSdkProvider: the model's errors", () => {
  it("an APICallError with a retryable status is a retryable http-status failure with the server's Retry-After; the next attempt succeeds", async () => {
    let calls = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls += 1;
        if (calls === 1) {
          throw new APICallError({
            message: "Too Many Requests",
            url: "http://127.0.0.1/v1/responses",
            requestBodyValues: {},
            statusCode: 429,
            responseHeaders: { "retry-after-ms": "3" },
            responseBody: '{"error":{"type":"rate_limit_error","message":"slow down; Authorization: Bearer sk-secret-value"}}',
            isRetryable: true,
          });
        }
        return { stream: convertArrayToReadableStream(textAnswer) };
      },
    });
    const { outcome, events } = await runSession(aiSdkProvider(model), "hi");
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    const [failed] = eventsOf(events, "turn.provider.failed");
    expect(failed?.data).toMatchObject({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 3 });
    expect(failed?.data.message).toContain("rate_limit_error");
    expect(JSON.stringify(events)).not.toContain("sk-secret-value");
  });

  it("a client error status is not retried; a connection failure without a status is a retryable transport failure", async () => {
    const refused = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({ message: "Unauthorized", url: "http://127.0.0.1", requestBodyValues: {}, statusCode: 401, responseBody: '{"error":{"message":"invalid key"}}', isRetryable: false });
      },
    });
    const { outcome, events } = await runSession(aiSdkProvider(refused), "hi");
    expect(outcome).toMatchObject({ status: "failed" });
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data)).toMatchObject([{ kind: "http-status", status: 401, retryable: false }]);

    let calls = 0;
    const flaky = new MockLanguageModelV3({
      doStream: async () => {
        calls += 1;
        if (calls === 1) {
          const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
          throw new APICallError({ message: "Cannot connect to API", url: "http://127.0.0.1:9", requestBodyValues: {}, cause, isRetryable: true });
        }
        return { stream: convertArrayToReadableStream(textAnswer) };
      },
    });
    const second = await runSession(aiSdkProvider(flaky), "hi");
    expect(second.outcome).toMatchObject({ status: "completed" });
    expect(eventsOf(second.events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "transport", retryable: true });
    expect(eventsOf(second.events, "turn.provider.failed")[0]?.data.message).toContain("ECONNREFUSED");
  });

  it("refuses what is not a v3 language model when the provider is made", () => {
    expect(() => aiSdkProvider({} as never)).toThrow(TypeError);
    expect(() => aiSdkProvider({ specificationVersion: "v2", doStream: () => undefined } as never)).toThrow(/supports v3/);
  });

  it("abandons a stream that sends no part for staleStreamTimeoutMs as a retryable timeout, and cancels it", async () => {
    let cancelled = false;
    let calls = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls += 1;
        if (calls > 1) return { stream: convertArrayToReadableStream(textAnswer) };
        // One part, then silence: the server stopped sending.
        const stream = new ReadableStream<LanguageModelV3StreamPart>({
          start: (controller) => controller.enqueue({ type: "text-delta", id: "t", delta: "thinking" }),
          cancel: () => {
            cancelled = true;
          },
        });
        return { stream };
      },
    });
    const { outcome, events } = await runSession(aiSdkProvider(model, { staleStreamTimeoutMs: 150 }), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "timeout", retryable: true });
    expect(cancelled).toBe(true);
  });

  it("the caller's abort ends a stream that hangs: the turn stops as cancelled, not as a provider failure", async () => {
    const controller = new AbortController();
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({ start: (stream) => stream.enqueue({ type: "text-delta", id: "t", delta: "thinking" }) }),
      }),
    });
    const { outcome, events } = await runSession(aiSdkProvider(model), "go", { signal: controller.signal, onDelta: () => controller.abort() });
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(eventsOf(events, "turn.provider.failed")).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import { ProviderError } from "../../src/errors/provider-error.js";
import type { ProviderRequest } from "../../src/providers/provider.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";
import {
  finishChunk,
  messageDelta,
  messageStart,
  messageStop,
  openAiToolCallChunks,
  readSseFixture,
  textBlock,
  textChunk,
  toolUseBlock,
  toolUseStart,
  usageChunk,
} from "./stream-builders.js";

const request: ProviderRequest = { messages: [], tools: [] };

async function complete(provider: ReturnType<typeof scriptedProvider>, onDelta?: (text: string) => void) {
  return provider.complete(request, { signal: new AbortController().signal, ...(onDelta ? { onDelta } : {}) });
}

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (ProviderError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

describe("scriptedProvider", () => {
  describe("responses and failures (unchanged)", () => {
    it("answers by call number, defaults the finish reason, records requests and fails beyond the script", async () => {
      const provider = scriptedProvider([{ content: "let me look", toolCalls: [{ name: "read_file" }] }, { content: "done", usage: { inputTokens: 3 } }], { id: "p" });
      expect(provider).toMatchObject({ id: "p", format: "openai-chat", remaining: 2 });
      expect(await complete(provider)).toEqual({ content: "let me look", toolCalls: [{ name: "read_file", arguments: "" }], finishReason: "tool_calls" });
      expect(() => provider.assertConsumed()).toThrow(/1 of 2/);
      expect(await complete(provider)).toEqual({ content: "done", toolCalls: [], finishReason: "stop", usage: { inputTokens: 3 } });
      provider.assertConsumed();
      expect(provider.requests).toHaveLength(2);
      expect(await rejection(complete(provider))).toMatchObject({ kind: "script-exhausted", retryable: false });
    });

    it("throws a scripted failure as a ProviderError", async () => {
      const provider = scriptedProvider([{ error: { kind: "http-status", status: 503 } }]);
      expect(await rejection(complete(provider))).toMatchObject({ kind: "http-status", retryable: true, status: 503 });
    });
  });

  describe("chunk replay", () => {
    it("finalizes OpenAI chunks by default, streaming visible text to onDelta as it is read", async () => {
      const { events } = readSseFixture("openai-chat-wire-example.sse");
      const provider = scriptedProvider([{ chunks: [textChunk("Hi, "), ...events] }]);
      const deltas: string[] = [];
      expect(await complete(provider, (text) => deltas.push(text))).toEqual({
        content: "Hi, Let me look",
        toolCalls: [
          { id: "call_abc", name: "read_file", arguments: '{"path":"a.txt"}' },
          { id: "call_def", name: "list_dir", arguments: '{"path":"."}' },
        ],
        finishReason: "tool_calls",
        usage: { inputTokens: 120, outputTokens: 31 },
      });
      expect(deltas).toEqual(["Hi, ", "Let me look"]);
      provider.assertConsumed();
    });

    it("finalizes Anthropic events for an anthropic-messages provider, or when the step says so", async () => {
      const { events } = readSseFixture("anthropic-messages-wire-example.sse");
      const expected = {
        content: "Let me look",
        toolCalls: [{ id: "toolu_01", name: "read_file", arguments: '{"path": "a.txt"}' }],
        finishReason: "tool_calls",
        usage: { inputTokens: 120, outputTokens: 31 },
      };
      expect(await complete(scriptedProvider([{ chunks: events }], { format: "anthropic-messages" }))).toEqual(expected);
      expect(await complete(scriptedProvider([{ chunks: events, format: "anthropic-messages" }]))).toEqual(expected);
    });

    it("treats done: false as a stream that broke off: text without a finish reason is incomplete-stream", async () => {
      const provider = scriptedProvider([{ chunks: [textChunk("Hello")], done: false }, { chunks: [textChunk("Hello")] }]);
      expect(await rejection(complete(provider))).toMatchObject({ kind: "incomplete-stream", retryable: true });
      expect(await complete(provider)).toEqual({ content: "Hello", toolCalls: [], finishReason: "unknown" });
    });

    it("fails tool fragments without a finish reason, and an Anthropic error event, with the finalizer's kind", async () => {
      const openAi = scriptedProvider([{ chunks: openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ['{"path":"a.txt"}']) }]);
      expect(await rejection(complete(openAi))).toMatchObject({ kind: "incomplete-stream", retryable: true });
      const anthropic = scriptedProvider([{ chunks: [messageStart(), { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }] }], { format: "anthropic-messages" });
      expect(await rejection(complete(anthropic))).toMatchObject({ kind: "transport", retryable: true, message: "overloaded_error: Overloaded" });
    });
  });

  describe("in a session", () => {
    it("retries an incomplete stream, then runs the streamed tool calls and completes", async () => {
      const ws = workspace();
      const script: ScriptStep[] = [
        { chunks: [textChunk("Let me look"), ...openAiToolCallChunks(0, { id: "call_a", name: "read_file" }, ['{"pa'])], done: false },
        {
          chunks: [
            ...openAiToolCallChunks(0, { id: "call_a", name: "read_file" }, ['{"path"', ':"a.txt"}']),
            ...openAiToolCallChunks(1, { name: "read_file" }, ['{"path":"b.txt"}']),
            finishChunk("tool_calls"),
            usageChunk(50, 20),
          ],
        },
        { chunks: [textChunk("alpha "), textChunk("and beta"), finishChunk("stop")] },
      ];
      const provider = scriptedProvider(script);
      const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
      const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock(), ids: sequentialIds("session") });
      const session = await runtime.openSession("s1");
      expect(await session.send("read both")).toMatchObject({ status: "completed", text: "alpha and beta" });
      expect(ws.ran).toEqual(["read_file a.txt", "read_file b.txt"]);
      provider.assertConsumed();

      const events = await runtime.events("s1");
      const failed = events.find((event) => event.type === "turn.provider.failed");
      expect(failed?.data).toMatchObject({ kind: "incomplete-stream", retryable: true, attempt: 1 });
      const responded = events.find((event) => event.type === "turn.provider.responded");
      expect(responded?.data).toMatchObject({
        attempt: 2,
        toolCalls: [
          { index: 0, id: "call_a", name: "read_file", argumentsText: '{"path":"a.txt"}' },
          { index: 1, name: "read_file", argumentsText: '{"path":"b.txt"}' },
        ],
        finishReason: "tool_calls",
        usage: { inputTokens: 50, outputTokens: 20 },
      });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true });
    });

    it("runs an Anthropic tool_use stream end to end", async () => {
      const ws = workspace();
      const provider = scriptedProvider(
        [
          { chunks: [messageStart(), ...textBlock(0, ["Reading."]), ...toolUseBlock(1, { id: "toolu_01", name: "read_file" }, ['{"path": "a.', 'txt"}']), messageDelta("tool_use"), messageStop] },
          { chunks: [messageStart(), ...textBlock(0, ["It says alpha."]), messageDelta("end_turn"), messageStop] },
        ],
        { format: "anthropic-messages" },
      );
      const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
      const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock(), ids: sequentialIds("session") });
      const session = await runtime.openSession("s1");
      expect(await session.send("read a")).toMatchObject({ status: "completed", text: "It says alpha." });
      expect(ws.ran).toEqual(["read_file a.txt"]);
      provider.assertConsumed();
    });

    it("never runs a tool from a tool_use block that never stopped", async () => {
      const ws = workspace();
      const broken = { chunks: [messageStart(), toolUseStart(0, { id: "toolu_01", name: "read_file" }), messageDelta("tool_use"), messageStop] };
      const provider = scriptedProvider([broken, broken, broken, broken, broken, broken], { format: "anthropic-messages" });
      const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
      const runtime = await createRuntime({ log, provider, tools: ws.tools, clock: steppingClock(), ids: sequentialIds("session") });
      const session = await runtime.openSession("s1");
      const outcome = await session.send("read a");
      expect(outcome.status).toBe("failed");
      expect(outcome.reason).toContain("incomplete-stream");
      expect(ws.ran).toEqual([]);
      const events = await runtime.events("s1");
      expect(events.some((event) => event.type === "turn.provider.responded")).toBe(false);
    });
  });
});

import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openAiChatProvider, ProviderError, stableToolCallId } from "../../src/index.js";
import type { OpenAiChatProviderOptions, Provider } from "../../src/index.js";
import { finishChunk, fragment, openAiToolCallChunks, textChunk, toolChunk, usageChunk } from "./stream-builders.js";
import { eventsOf, fakeKey, runSession, temporaryLevelLog } from "./support/provider-session.js";
import { openAiSse, startSseTestServer, statusReply, type SseTestServer } from "./support/sse-test-server.js";

const keyEnv = "TURNLOG_TEST_OPENAI_KEY";

let server: SseTestServer;

beforeEach(async () => {
  server = await startSseTestServer();
  process.env[keyEnv] = fakeKey;
});

afterEach(async () => {
  await server.close();
  delete process.env[keyEnv];
});

function provider(options: Partial<OpenAiChatProviderOptions> = {}): Provider {
  return openAiChatProvider({ baseURL: `${server.url}/v1`, model: "gpt-test", apiKeyEnv: keyEnv, ...options });
}

const lookupCall = (id: string | undefined, word: string, pieces: readonly string[] = [JSON.stringify({ word })]) =>
  openAiToolCallChunks(0, { ...(id !== undefined ? { id } : {}), name: "lookup" }, pieces);

const textReply = (...pieces: string[]) => openAiSse([...pieces.map(textChunk), finishChunk("stop"), usageChunk(12, 3)]);

describe("openAiChatProvider over real HTTP", () => {
  it("streams text to onDelta and sends a well-formed Chat Completions request", async () => {
    server.enqueue(textReply("Hel", "lo ", "there."));
    const deltas: string[] = [];
    const { outcome, events } = await runSession(provider({ temperature: 0.2, maxTokens: 256, headers: { "x-route": "test" } }), "hi", {
      onDelta: (text) => deltas.push(text),
      runtime: { history: { system: "You are terse." } },
    });

    expect(outcome).toEqual({ status: "completed", text: "Hello there.", pendingApprovals: [] });
    expect(deltas).toEqual(["Hel", "lo ", "there."]);
    expect(eventsOf(events, "turn.provider.responded")[0]?.data).toMatchObject({ finishReason: "stop", usage: { inputTokens: 12, outputTokens: 3 } });

    const [request] = server.requests;
    expect(request).toMatchObject({ method: "POST", path: "/v1/chat/completions" });
    expect(request?.headers.authorization).toBe(`Bearer ${fakeKey}`);
    expect(request?.headers["x-route"]).toBe("test");
    expect(request?.body).toMatchObject({
      model: "gpt-test",
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      max_tokens: 256,
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "hi" },
      ],
    });
    const tools = (request?.body as { tools: unknown[] }).tools;
    expect(tools).toContainEqual({
      type: "function",
      function: { name: "lookup", description: "Look a word up", parameters: expect.objectContaining({ type: "object" }) },
    });
  });

  it("runs parallel tool calls whose arguments arrive split and interleaved, continues, and replays identical", async () => {
    // The interleaving of WIRE-FORMATS.md: call 0 starts, call 1 arrives whole, call 0 finishes.
    server.enqueue(
      openAiSse([
        textChunk("Let me look"),
        toolChunk(fragment(0, { id: "call_abc", name: "lookup", arguments: "" })),
        toolChunk(fragment(0, { arguments: '{"wo' })),
        toolChunk(fragment(1, { id: "call_def", name: "list_words", arguments: '{"prefix":"b"}' })),
        toolChunk(fragment(0, { arguments: 'rd":"alpha"}' })),
        finishChunk("tool_calls"),
        usageChunk(120, 31),
      ]),
      textReply("alpha is the first letter"),
    );
    const level = await temporaryLevelLog();
    try {
      const { outcome, events, ran, runtime } = await runSession(provider(), "what is alpha?", { log: level.log });
      expect(outcome).toMatchObject({ status: "completed", text: "alpha is the first letter" });
      expect(ran.sort()).toEqual(["list_words b", "lookup alpha"]);
      expect(eventsOf(events, "turn.tool_calls.normalized")[0]?.data.calls).toMatchObject([
        { index: 0, id: "call_abc", idSource: "provider", name: "lookup", argumentsText: '{"word":"alpha"}' },
        { index: 1, id: "call_def", idSource: "provider", name: "list_words", argumentsText: '{"prefix":"b"}' },
      ]);

      // The second request carries the tool turn and its answers, in call order, in OpenAI's format.
      const messages = (server.requests[1]?.body as { messages: Record<string, unknown>[] }).messages;
      expect(messages.find((message) => message.role === "assistant")).toMatchObject({
        tool_calls: [
          { id: "call_abc", type: "function", function: { name: "lookup", arguments: '{"word":"alpha"}' } },
          { id: "call_def", type: "function", function: { name: "list_words", arguments: '{"prefix":"b"}' } },
        ],
      });
      expect(messages.filter((message) => message.role === "tool")).toEqual([
        { role: "tool", tool_call_id: "call_abc", content: "the first letter" },
        { role: "tool", tool_call_id: "call_def", content: "beta" },
      ]);
      expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
    } finally {
      await level.remove();
    }
  });

  it("derives stable IDs for tool calls a server sent without one, end to end", async () => {
    server.enqueue(
      openAiSse([...lookupCall(undefined, "alpha", ['{"word":', '"alpha"}']), ...openAiToolCallChunks(1, { name: "lookup" }, ['{"word":"beta"}']), finishChunk("tool_calls")]),
      textReply("done"),
    );
    const { outcome, events, runtime } = await runSession(provider(), "look both up");
    expect(outcome).toMatchObject({ status: "completed", text: "done" });
    const calls = eventsOf(events, "turn.tool_calls.normalized")[0]?.data.calls as { id: string; idSource: string; argumentsText: string }[];
    expect(calls.map((call) => call.idSource)).toEqual(["derived", "derived"]);
    expect(calls[0]?.id).toBe(stableToolCallId({ sessionId: "s1", turnSeq: 1, index: 0, name: "lookup", argumentsText: '{"word":"alpha"}' }));
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);
    // The derived IDs are the ones the server is sent back.
    const messages = (server.requests[1]?.body as { messages: Record<string, unknown>[] }).messages;
    expect(messages.filter((message) => message.role === "tool").map((message) => message.tool_call_id)).toEqual(calls.map((call) => call.id));
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("retries tool calls cut off by the length limit once, then refuses them; they never run", async () => {
    const truncated = () => openAiSse([...lookupCall("call_cut", "alpha", ['{"word":"al']), finishChunk("length")]);
    server.enqueue(truncated(), truncated());
    const { outcome, events, ran } = await runSession(provider(), "look it up");
    expect(outcome).toMatchObject({ status: "stopped", reason: "refused:truncated-tool-calls" });
    expect(ran).toEqual([]);
    expect(server.requests).toHaveLength(2);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["truncated-tool-calls", "truncated-tool-calls"]);
    expect(eventsOf(events, "turn.tool_calls.normalized")).toEqual([]);
  });

  it("records a connection cut mid-stream as a retryable failure, and the retry completes", async () => {
    server.enqueue(openAiSse([textChunk("Let me"), ...lookupCall("call_a", "alpha", ['{"wo'])], { done: false, ending: "cut" }), textReply("recovered"));
    const { outcome, events, ran } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "recovered" });
    expect(ran).toEqual([]);
    const [failed] = eventsOf(events, "turn.provider.failed");
    expect(failed?.data).toMatchObject({ attempt: 1, kind: "incomplete-stream", retryable: true });
    expect(failed?.data.message).toMatch(/connection broke off/);
    expect(server.requests).toHaveLength(2);
  });

  it("waits out a 429 and completes on the next attempt, recording the status and Retry-After", async () => {
    server.enqueue(statusReply(429, { headers: { "retry-after": "1" } }), textReply("ok now"));
    // A clock that records the waits the runtime asks for, and waits none of them.
    const waits: number[] = [];
    const clock = { now: () => Date.now(), sleep: async (ms: number) => void waits.push(ms) };
    const { outcome, events } = await runSession(provider(), "go", { runtime: { clock } });
    expect(outcome).toMatchObject({ status: "completed", text: "ok now" });
    expect(server.requests).toHaveLength(2);
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "http-status", status: 429, retryable: true, retryAfterMs: 1000 });
    // The server's second is capped by the test's maxDelayMs (20 ms).
    expect(waits).toEqual([20]);
    expect(events.map((event) => event.type).filter((type) => type.startsWith("turn."))).toEqual([
      "turn.started",
      "turn.provider.requested",
      "turn.provider.failed",
      "turn.provider.requested",
      "turn.provider.responded",
      "turn.completed",
    ]);
  });

  it("fails the turn when every attempt gets a 500: provider:http-status:retries-exhausted", async () => {
    server.enqueue(statusReply(500), statusReply(500), statusReply(500));
    const { outcome, events } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status:retries-exhausted" });
    expect(server.requests).toHaveLength(3);
    expect(eventsOf(events, "turn.provider.failed").map((event) => [event.data.status, event.data.retryable])).toEqual([
      [500, true],
      [500, true],
      [500, true],
    ]);
    expect(eventsOf(events, "turn.provider.failed")[0]?.data.message).toBe("openai-chat: HTTP 500 Internal Server Error (server_error): scripted status 500");
  });

  it("does not retry a 400: the same request would fail the same way", async () => {
    server.enqueue(statusReply(400, { body: () => ({ error: { message: "Unrecognized request argument", type: "invalid_request_error" } }) }));
    const { outcome } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status" });
    expect(server.requests).toHaveLength(1);
  });

  it("abandons a stream that stalls past staleStreamTimeoutMs as a retryable timeout", async () => {
    server.enqueue(openAiSse([textChunk("thinking")], { done: false, ending: "stall" }), textReply("back"));
    const { outcome, events } = await runSession(provider({ staleStreamTimeoutMs: 150 }), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "back" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "timeout", retryable: true });
  });

  it("gives up on a server that never starts its response after requestTimeoutMs: a retryable timeout", async () => {
    server.enqueue({ kind: "hang" }, textReply("late but here"));
    const { outcome, events } = await runSession(provider({ requestTimeoutMs: 150 }), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "late but here" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "timeout", retryable: true });
  });

  it("records an error chunk sent mid-stream as a retryable transport failure", async () => {
    server.enqueue(openAiSse([textChunk("par"), { error: { message: "upstream overloaded", code: 503 } }]), textReply("fine"));
    const { outcome, events } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "transport", retryable: true, message: "upstream overloaded" });
  });

  it("tells a stream that ended without [DONE] or a finish reason from one that ended properly", async () => {
    server.enqueue(openAiSse([textChunk("half")], { done: false }), openAiSse([textChunk("whole")]));
    const { outcome, events } = await runSession(provider(), "go");
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "incomplete-stream", retryable: true });
    // With [DONE], text without a finish reason is final (as `unknown`).
    expect(outcome).toMatchObject({ status: "completed", text: "whole" });
    expect(eventsOf(events, "turn.provider.responded")[0]?.data).toMatchObject({ finishReason: "unknown" });
  });

  it("reports a refused connection as a retryable transport failure", async () => {
    const closed = await startSseTestServer();
    await closed.close();
    const { outcome, events } = await runSession(openAiChatProvider({ baseURL: `${closed.url}/v1`, model: "gpt-test", apiKeyEnv: keyEnv }), "go", {
      runtime: { providerAttempts: 2 },
    });
    expect(outcome).toMatchObject({ status: "failed", reason: "provider:transport:retries-exhausted" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "transport", retryable: true });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data.message).toMatch(/^openai-chat: connection failed \(ECONNREFUSED\)/);
  });

  it("propagates the caller's abort as a cancellation, not a provider failure", async () => {
    server.enqueue(openAiSse([textChunk("one"), textChunk("two")], { done: false, ending: "stall" }));
    const controller = new AbortController();
    const { outcome, events } = await runSession(provider({ staleStreamTimeoutMs: 30_000 }), "go", {
      signal: controller.signal,
      onDelta: (text) => {
        if (text === "two") controller.abort();
      },
    });
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(eventsOf(events, "turn.provider.failed")).toEqual([]);
    await expect(provider().complete({ messages: [], tools: [] }, { signal: controller.signal })).rejects.toThrow();
  });

  describe("key hygiene", () => {
    it("sends the key to the server but never logs it, never puts it in an error, never in the provider id", async () => {
      // A server that echoes the Authorization header back in its error body.
      const echo = () => statusReply(401, { body: (request) => ({ error: { message: `Incorrect API key provided: ${request.headers.authorization}`, type: "invalid_request_error" } }) });
      server.enqueue(echo(), echo());
      const chosen = provider();
      const { outcome, events } = await runSession(chosen, "go");

      expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${fakeKey}`);
      expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status" });
      const failed = eventsOf(events, "turn.provider.failed")[0];
      expect(failed?.data).toMatchObject({ kind: "http-status", status: 401, retryable: false });
      expect(failed?.data.message).toBe("openai-chat: HTTP 401 Unauthorized (invalid_request_error): Incorrect API key provided: Bearer [redacted]");
      expect(JSON.stringify(events)).not.toContain(fakeKey.slice(8));
      expect(chosen.id).toBe("openai-chat:gpt-test");

      // The error itself, cause and all, as a host would see it if it logged it.
      const error = await chosen.complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal }).catch((caught: unknown) => caught);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect(inspect(error, { depth: 10 })).not.toContain(fakeKey.slice(8));
    });

    it("keeps the key out of a successful session's log too", async () => {
      server.enqueue(textReply("hello"));
      const { events } = await runSession(provider(), "hi");
      expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${fakeKey}`);
      expect(JSON.stringify(events)).not.toContain(fakeKey.slice(8));
    });

    it("sends a placeholder when the variable is unset, so keyless local servers work, and names the variable on a 401", async () => {
      delete process.env[keyEnv];
      server.enqueue(textReply("local model here"), statusReply(401));
      const { outcome } = await runSession(provider(), "hi");
      expect(outcome).toMatchObject({ status: "completed", text: "local model here" });
      expect(server.requests[0]?.headers.authorization).toBe("Bearer turnlog-no-key");
      const error = await provider().complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal }).catch((caught: unknown) => caught);
      expect((error as Error).message).toContain(`(${keyEnv} is not set)`);
    });

    it("reads the key at call time, so a rotated key is used without a new provider", async () => {
      const chosen = provider();
      server.enqueue(textReply("one"), textReply("two"));
      await chosen.complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal });
      process.env[keyEnv] = `${fakeKey}-rotated`;
      await chosen.complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal });
      expect(server.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${fakeKey}`, `Bearer ${fakeKey}-rotated`]);
    });
  });

  describe("options", () => {
    it("refuses a base URL with credentials, and a key where the variable's name belongs, without echoing either", () => {
      expect(() => openAiChatProvider({ model: "m", baseURL: "http://user:hunter2@localhost:11434/v1" })).toThrow(/must not carry credentials/);
      expect(() => openAiChatProvider({ model: "m", baseURL: "http://user:hunter2@localhost:11434/v1" })).not.toThrow(/hunter2/);
      expect(() => openAiChatProvider({ model: "m", apiKeyEnv: fakeKey })).toThrow(TypeError);
      expect(() => openAiChatProvider({ model: "m", apiKeyEnv: fakeKey })).not.toThrow(new RegExp(fakeKey.slice(8)));
      expect(() => openAiChatProvider({ model: "" })).toThrow(TypeError);
      expect(() => openAiChatProvider({ model: "m", staleStreamTimeoutMs: 0 })).toThrow(TypeError);
    });

    it("sends maxTokens as max_completion_tokens to api.openai.com, as max_tokens elsewhere, or as told", async () => {
      server.enqueue(textReply("a"));
      await provider({ maxTokens: 10, maxTokensParameter: "max_completion_tokens" }).complete({ messages: [], tools: [] }, { signal: new AbortController().signal });
      expect(server.requests[0]?.body).toMatchObject({ max_completion_tokens: 10 });
      expect(server.requests[0]?.body).not.toHaveProperty("max_tokens");
      expect(server.requests[0]?.body).not.toHaveProperty("tools");
    });
  });
});

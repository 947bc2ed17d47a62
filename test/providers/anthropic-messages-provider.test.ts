import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { anthropicMessagesProvider, ProviderError } from "../../src/index.js";
import type { AnthropicMessagesProviderOptions, Provider } from "../../src/index.js";
import { blockStop, jsonDelta, messageDelta, messageStart, messageStop, ping, textBlock, textDelta, toolUseBlock, toolUseStart } from "./stream-builders.js";
import { eventsOf, fakeKey, runSession, temporaryLevelLog } from "./support/provider-session.js";
import { anthropicSse, startSseTestServer, statusReply, type SseTestServer } from "./support/sse-test-server.js";

const keyEnv = "TURNLOG_TEST_ANTHROPIC_KEY";

let server: SseTestServer;

beforeEach(async () => {
  server = await startSseTestServer();
  process.env[keyEnv] = fakeKey;
});

afterEach(async () => {
  await server.close();
  delete process.env[keyEnv];
});

function provider(options: Partial<AnthropicMessagesProviderOptions> = {}): Provider {
  return anthropicMessagesProvider({ baseURL: server.url, model: "claude-test", apiKeyEnv: keyEnv, ...options });
}

const textReply = (...pieces: string[]) => anthropicSse([messageStart(40), ...textBlock(0, pieces), messageDelta("end_turn", 7), messageStop] as { type: string }[]);

const anthropicError = (type: string, message: string) => () => ({ type: "error", error: { type, message } });

/** The credential header the SDK sent (this SDK version sends the key as a Bearer token). */
const credentialHeader = (headers: Record<string, unknown> | undefined) => headers?.["x-api-key"] ?? headers?.authorization;

describe("anthropicMessagesProvider over real HTTP", () => {
  it("streams text to onDelta and sends a well-formed Messages request", async () => {
    server.enqueue(textReply("Hel", "lo."));
    const deltas: string[] = [];
    const { outcome, events } = await runSession(provider({ temperature: 0 }), "hi", {
      onDelta: (text) => deltas.push(text),
      runtime: { history: { system: "You are terse." } },
    });

    expect(outcome).toEqual({ status: "completed", text: "Hello.", pendingApprovals: [] });
    expect(deltas).toEqual(["Hel", "lo."]);
    expect(eventsOf(events, "turn.provider.responded")[0]?.data).toMatchObject({ finishReason: "stop", usage: { inputTokens: 40, outputTokens: 7 } });

    const [request] = server.requests;
    expect(request).toMatchObject({ method: "POST", path: "/v1/messages" });
    expect([`Bearer ${fakeKey}`, fakeKey]).toContain(credentialHeader(request?.headers));
    expect(request?.body).toMatchObject({
      model: "claude-test",
      max_tokens: 4096,
      stream: true,
      temperature: 0,
      system: "You are terse.",
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    });
    expect((request?.body as { tools: unknown[] }).tools).toContainEqual({
      name: "lookup",
      description: "Look a word up",
      input_schema: expect.objectContaining({ type: "object", properties: expect.objectContaining({ word: expect.anything() }) }),
    });
  });

  it("runs parallel tool_use blocks whose input arrives in pieces, continues, and replays identical", async () => {
    server.enqueue(
      anthropicSse([
        messageStart(),
        ...textBlock(0, ["Let me look"]),
        ping,
        ...toolUseBlock(1, { id: "toolu_01", name: "lookup" }, ['{"word": "al', 'pha"}']),
        ...toolUseBlock(2, { id: "toolu_02", name: "list_words" }, ['{"prefix":', ' "b"}']),
        messageDelta("tool_use"),
        messageStop,
      ] as { type: string }[]),
      textReply("alpha is the first letter"),
    );
    const level = await temporaryLevelLog();
    try {
      const { outcome, events, ran, runtime } = await runSession(provider(), "what is alpha?", { log: level.log });
      expect(outcome).toMatchObject({ status: "completed", text: "alpha is the first letter" });
      expect(ran.sort()).toEqual(["list_words b", "lookup alpha"]);
      expect(eventsOf(events, "turn.tool_calls.normalized")[0]?.data.calls).toMatchObject([
        { index: 0, id: "toolu_01", idSource: "provider", name: "lookup", argumentsText: '{"word": "alpha"}' },
        { index: 1, id: "toolu_02", idSource: "provider", name: "list_words", argumentsText: '{"prefix": "b"}' },
      ]);

      // The second request: the assistant's text and tool_use blocks, then the results first in the user turn.
      const messages = (server.requests[1]?.body as { messages: { role: string; content: unknown }[] }).messages;
      expect(messages[1]).toMatchObject({
        role: "assistant",
        content: [
          { type: "text", text: "Let me look" },
          { type: "tool_use", id: "toolu_01", name: "lookup", input: { word: "alpha" } },
          { type: "tool_use", id: "toolu_02", name: "list_words", input: { prefix: "b" } },
        ],
      });
      expect(messages[2]).toMatchObject({
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_01", content: "the first letter" },
          { type: "tool_result", tool_use_id: "toolu_02", content: "beta" },
        ],
      });
      expect(await runtime.replay("s1")).toMatchObject({ identical: true, divergences: [] });
    } finally {
      await level.remove();
    }
  });

  it("derives IDs for tool_use blocks that came without one", async () => {
    server.enqueue(
      anthropicSse([messageStart(), ...toolUseBlock(0, { name: "lookup" }, ['{"word":"beta"}']), messageDelta("tool_use"), messageStop] as { type: string }[]),
      textReply("done"),
    );
    const { outcome, events, runtime } = await runSession(provider(), "look it up");
    expect(outcome).toMatchObject({ status: "completed", text: "done" });
    const calls = eventsOf(events, "turn.tool_calls.normalized")[0]?.data.calls as { id: string; idSource: string }[];
    expect(calls).toMatchObject([{ idSource: "derived" }]);
    expect(calls[0]?.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    const messages = (server.requests[1]?.body as { messages: { role: string; content: { type: string; tool_use_id?: string }[] }[] }).messages;
    expect(messages[2]?.content[0]).toMatchObject({ type: "tool_result", tool_use_id: calls[0]?.id });
    expect(await runtime.replay("s1")).toMatchObject({ identical: true });
  });

  it("retries tool_use cut off by max_tokens once, then refuses it; it never runs", async () => {
    const truncated = () =>
      anthropicSse([messageStart(), ...toolUseBlock(0, { id: "toolu_cut", name: "lookup" }, ['{"word":"al']), messageDelta("max_tokens"), messageStop] as { type: string }[]);
    server.enqueue(truncated(), truncated());
    const { outcome, events, ran } = await runSession(provider(), "look it up");
    expect(outcome).toMatchObject({ status: "stopped", reason: "refused:truncated-tool-calls" });
    expect(ran).toEqual([]);
    expect(server.requests).toHaveLength(2);
    expect(eventsOf(events, "turn.provider.failed").map((event) => event.data.kind)).toEqual(["truncated-tool-calls", "truncated-tool-calls"]);
  });

  it("records a connection cut mid-stream as a retryable failure, and the retry completes", async () => {
    server.enqueue(
      anthropicSse([messageStart(), toolUseStart(0, { id: "toolu_a", name: "lookup" }), jsonDelta(0, '{"wo')] as { type: string }[], { ending: "cut" }),
      textReply("recovered"),
    );
    const { outcome, events, ran } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "recovered" });
    expect(ran).toEqual([]);
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ attempt: 1, kind: "incomplete-stream", retryable: true });
  });

  it("waits out a 429 and completes on the next attempt", async () => {
    server.enqueue(statusReply(429, { headers: { "retry-after": "2" }, body: anthropicError("rate_limit_error", "Number of requests has exceeded your rate limit") }), textReply("ok now"));
    const { outcome, events } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "ok now" });
    expect(server.requests).toHaveLength(2);
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({
      kind: "http-status",
      status: 429,
      retryable: true,
      retryAfterMs: 2000,
      message: "anthropic-messages: HTTP 429 Too Many Requests (rate_limit_error): Number of requests has exceeded your rate limit",
    });
  });

  it("retries 529 overloaded and fails the turn once attempts run out", async () => {
    const overloaded = () => statusReply(529, { body: anthropicError("overloaded_error", "Overloaded") });
    server.enqueue(overloaded(), overloaded(), overloaded());
    const { outcome, events } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status:retries-exhausted" });
    expect(server.requests).toHaveLength(3);
    expect(eventsOf(events, "turn.provider.failed").map((event) => [event.data.status, event.data.retryable])).toEqual([
      [529, true],
      [529, true],
      [529, true],
    ]);
  });

  it("fails the turn on 500s once attempts run out: provider:http-status:retries-exhausted", async () => {
    server.enqueue(statusReply(500), statusReply(500));
    const { outcome } = await runSession(provider(), "go", { runtime: { providerAttempts: 2 } });
    expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status:retries-exhausted" });
    expect(server.requests).toHaveLength(2);
  });

  it("records an overloaded_error event mid-stream as a retryable transport failure", async () => {
    server.enqueue(
      anthropicSse([messageStart(), ...textBlock(0, ["par"]), { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }] as { type: string }[]),
      textReply("fine"),
    );
    const { outcome, events } = await runSession(provider(), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "fine" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "transport", retryable: true, message: "overloaded_error: Overloaded" });
  });

  it("abandons a stream that stalls past staleStreamTimeoutMs as a retryable timeout", async () => {
    server.enqueue(
      anthropicSse([messageStart(), { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, textDelta(0, "thinking")] as { type: string }[], {
        ending: "stall",
      }),
      textReply("back"),
    );
    const { outcome, events } = await runSession(provider({ staleStreamTimeoutMs: 150 }), "go");
    expect(outcome).toMatchObject({ status: "completed", text: "back" });
    expect(eventsOf(events, "turn.provider.failed")[0]?.data).toMatchObject({ kind: "timeout", retryable: true });
  });

  it("keeps a stream alive while ping events arrive", async () => {
    const pings = Array.from({ length: 6 }, () => ping);
    // 8 frames 80 ms apart: the stream takes well over the 250 ms limit, but no gap reaches it.
    server.enqueue(anthropicSse([messageStart(), ...pings, ...textBlock(0, ["patient"]), messageDelta("end_turn"), messageStop] as { type: string }[], { intervalMs: 80 }));
    const { outcome, events } = await runSession(provider({ staleStreamTimeoutMs: 250 }), "go");
    expect(eventsOf(events, "turn.provider.failed")).toEqual([]);
    expect(outcome).toMatchObject({ status: "completed", text: "patient" });
  });

  it("propagates the caller's abort as a cancellation, not a provider failure", async () => {
    server.enqueue(anthropicSse([messageStart(), { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, textDelta(0, "one")] as { type: string }[], { ending: "stall" }));
    const controller = new AbortController();
    const { outcome, events } = await runSession(provider({ staleStreamTimeoutMs: 30_000 }), "go", {
      signal: controller.signal,
      onDelta: () => controller.abort(),
    });
    expect(outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
    expect(eventsOf(events, "turn.provider.failed")).toEqual([]);
  });

  describe("key hygiene", () => {
    it("sends the key to the server but never logs it, never puts it in an error, never in the provider id", async () => {
      const echo = () =>
        statusReply(401, {
          body: (request) => anthropicError("authentication_error", `invalid x-api-key: ${String(credentialHeader(request.headers))}`)(),
        });
      server.enqueue(echo(), echo());
      const chosen = provider();
      const { outcome, events } = await runSession(chosen, "go");

      expect([`Bearer ${fakeKey}`, fakeKey]).toContain(credentialHeader(server.requests[0]?.headers));
      expect(outcome).toMatchObject({ status: "failed", reason: "provider:http-status" });
      const failed = eventsOf(events, "turn.provider.failed")[0];
      expect(failed?.data).toMatchObject({ kind: "http-status", status: 401, retryable: false });
      expect(failed?.data.message).toMatch(/^anthropic-messages: HTTP 401 Unauthorized \(authentication_error\): invalid x-api-key: .*\[redacted\]$/);
      expect(JSON.stringify(events)).not.toContain(fakeKey.slice(8));
      expect(chosen.id).toBe("anthropic-messages:claude-test");

      const error = await chosen.complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal }).catch((caught: unknown) => caught);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect(inspect(error, { depth: 10 })).not.toContain(fakeKey.slice(8));
    });

    it("does not send ANTHROPIC_AUTH_TOKEN from the environment alongside the key", async () => {
      const previous = process.env.ANTHROPIC_AUTH_TOKEN;
      process.env.ANTHROPIC_AUTH_TOKEN = "ambient-token-should-not-be-sent";
      try {
        server.enqueue(textReply("hi"));
        await provider().complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal });
        expect(JSON.stringify(server.requests[0]?.headers)).not.toContain("ambient-token-should-not-be-sent");
      } finally {
        if (previous === undefined) delete process.env.ANTHROPIC_AUTH_TOKEN;
        else process.env.ANTHROPIC_AUTH_TOKEN = previous;
      }
    });

    it("sends a placeholder when the variable is unset and names the variable on a 401", async () => {
      delete process.env[keyEnv];
      server.enqueue(statusReply(401, { body: anthropicError("authentication_error", "invalid x-api-key") }));
      const error = await provider().complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal }).catch((caught: unknown) => caught);
      expect(String(credentialHeader(server.requests[0]?.headers))).toContain("turnlog-no-key");
      expect((error as Error).message).toContain(`(${keyEnv} is not set)`);
    });
  });

  it("refuses a maxTokens that is not a positive integer", () => {
    expect(() => anthropicMessagesProvider({ model: "m", maxTokens: 0 })).toThrow(TypeError);
    expect(() => anthropicMessagesProvider({ model: "m", maxTokens: 1.5 })).toThrow(TypeError);
  });

  it("finalizes a tool_use block whose stop arrives after a ping", async () => {
    server.enqueue(
      anthropicSse([messageStart(), toolUseStart(0, { id: "toolu_9", name: "lookup" }), jsonDelta(0, '{"word":"alpha"}'), ping, blockStop(0), messageDelta("tool_use"), messageStop] as {
        type: string;
      }[]),
    );
    const response = await provider().complete({ messages: [{ role: "user", content: "hi" }], tools: [] }, { signal: new AbortController().signal });
    expect(response.toolCalls).toEqual([{ id: "toolu_9", name: "lookup", arguments: '{"word":"alpha"}' }]);
  });
});

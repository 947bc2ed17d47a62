import type { LanguageModelV3, LanguageModelV3StreamPart, SharedV3ProviderOptions } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import { startAnthropicThinkingServer, thinking, toolUse } from "../support/fake-servers/anthropic-thinking-server.js";
import type { FakeProviderServer } from "../support/fake-servers/checking-server.js";
import { call, startGeminiServer } from "../support/fake-servers/gemini-server.js";
import { anthropicModel, anthropicProviderOptions, geminiModel } from "../support/fake-servers/provider-models.js";

// What the real provider packages emit when the fake servers end a stream badly: the facts turnlog's
// `ai-sdk` finalizer is built on (docs/providers.md). A package emits a `tool-call` part as soon as
// its block ends, before it knows how the stream ends, and does not check that the input parses.

let server: FakeProviderServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Every part of one `doStream`, and the stream's failure as a last `thrown` entry. */
async function partsOf(model: LanguageModelV3, providerOptions?: SharedV3ProviderOptions) {
  const { stream } = await model.doStream({ prompt: [{ role: "user", content: [{ type: "text", text: "What does a.txt say?" }] }], ...(providerOptions ? { providerOptions } : {}) });
  const parts: (LanguageModelV3StreamPart | { type: "thrown"; message: string })[] = [];
  const reader = stream.getReader();
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
  } catch (error) {
    parts.push({ type: "thrown", message: error instanceof Error ? error.message : String(error) });
  }
  return parts;
}

const kinds = (parts: { type: string }[]) => parts.map((part) => part.type);

describe("stream endings through the real packages", () => {
  it("@ai-sdk/anthropic: a tool use cut by max_tokens is still a tool-call part, with input that does not parse, then a length finish", async () => {
    server = await startAnthropicThinkingServer([{ content: [thinking("Read it.", "sig-one"), { type: "tool_use", id: "toolu_1", name: "read_file", inputJson: '{"path": "a.' }], stopReason: "max_tokens" }]);
    const parts = await partsOf(anthropicModel(server.url), anthropicProviderOptions);

    expect(parts.find((part) => part.type === "tool-call")).toMatchObject({ toolCallId: "toolu_1", input: '{"path": "a.' });
    expect(parts.at(-1)).toMatchObject({ type: "finish", finishReason: { unified: "length", raw: "max_tokens" } });
  });

  it("@ai-sdk/anthropic: a stream reset after a finished tool_use block has already emitted its tool-call part, then throws", async () => {
    // Frames: message_start, ping, thinking start/delta/signature/stop, tool_use start/delta/stop; cut before message_delta.
    server = await startAnthropicThinkingServer([{ content: [thinking("Read it.", "sig-one"), toolUse("toolu_1", "read_file", { path: "a.txt" })], cutAfterFrames: 9 }]);
    const parts = await partsOf(anthropicModel(server.url), anthropicProviderOptions);

    expect(kinds(parts).slice(-3)).toEqual(["tool-input-end", "tool-call", "thrown"]);
    expect(kinds(parts)).not.toContain("finish");
  });

  it("@ai-sdk/google: a function call without an ID gets a random one from the package; a MAX_TOKENS finish follows the call", async () => {
    server = await startGeminiServer([{ parts: [call("read_file", { path: "a.txt" }, { signature: "sig-one" })], finishReason: "MAX_TOKENS" }]);
    const parts = await partsOf(geminiModel(server.url));

    const toolCall = parts.find((part) => part.type === "tool-call");
    expect(toolCall).toMatchObject({ toolName: "read_file", input: '{"path":"a.txt"}', providerMetadata: { google: { thoughtSignature: "sig-one" } } });
    expect(toolCall).toHaveProperty("toolCallId", expect.stringMatching(/^\w{16}$/));
    expect(parts.at(-1)).toMatchObject({ type: "finish", finishReason: { unified: "length", raw: "MAX_TOKENS" } });
  });

  it("@ai-sdk/google: a stream reset before the function call's chunk throws after the text", async () => {
    server = await startGeminiServer([{ parts: [{ kind: "text", text: "Reading.", thought: false }, call("read_file", { path: "a.txt" }, { signature: "sig-one" })], cutAfterFrames: 1 }]);
    const parts = await partsOf(geminiModel(server.url));

    expect(kinds(parts)).toEqual(["stream-start", "response-metadata", "text-start", "text-delta", "thrown"]);
  });
});

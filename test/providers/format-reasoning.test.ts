import { describe, expect, it } from "vitest";
import { providerFormat } from "../../src/providers/formats.js";
import { blockStop, chunk, messageDelta, messageStart, messageStop, textBlock } from "./stream-builders.js";

/*
 * What `turnlog view` shows of a response's reasoning (docs/providers.md, "Adding a provider
 * format"): each format reads its own recorded echo, taken from a stream through its own finalizer,
 * so an ai-sdk session shows what an anthropic-messages or openai-chat one does.
 */

/** The echo a format's finalizer records for a whole stream. */
function echoOf(format: "openai-chat" | "anthropic-messages" | "ai-sdk", chunks: readonly unknown[]): Record<string, unknown> {
  const result = providerFormat(format).finalizeStream(chunks, { done: true });
  if (!result.ok || result.response.echo === undefined) throw new Error(`${format}: the stream left no echo`);
  return result.response.echo;
}

describe("reasoningOf: the reasoning a recorded echo holds, as a person reads it", () => {
  it("anthropic-messages: each thinking block's text, and a note for a redacted one", () => {
    const echo = echoOf("anthropic-messages", [
      messageStart(),
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "The user wants a.txt." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig-1" } },
      blockStop(0),
      { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "opaque" } },
      blockStop(1),
      ...textBlock(2, ["Done."]),
      messageDelta("end_turn"),
      messageStop,
    ]);
    expect(providerFormat("anthropic-messages").reasoningOf(echo)).toEqual(["The user wants a.txt.", "(redacted thinking)"]);
  });

  it("openai-chat: the reasoning_content a reasoning model behind a compatible server sent", () => {
    const echo = echoOf("openai-chat", [chunk({ reasoning_content: "Reading a.txt first." }), chunk({ content: "Done." }, "stop")]);
    expect(providerFormat("openai-chat").reasoningOf(echo)).toEqual(["Reading a.txt first."]);
  });

  it("ai-sdk: each reasoning part's text, and a note for one that travels encrypted only", () => {
    const echo = echoOf("ai-sdk", [
      { type: "reasoning-start", id: "r1", providerMetadata: { openai: { itemId: "rs_1" } } },
      { type: "reasoning-delta", id: "r1", delta: "Reading a.txt first." },
      { type: "reasoning-end", id: "r1", providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: "enc-1" } } },
      { type: "reasoning-start", id: "r2", providerMetadata: { openai: { itemId: "rs_2" } } },
      { type: "reasoning-end", id: "r2", providerMetadata: { openai: { itemId: "rs_2", reasoningEncryptedContent: "enc-2" } } },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Done." },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage: { inputTokens: { total: 10 }, outputTokens: { total: 2 } } },
    ]);
    expect(providerFormat("ai-sdk").reasoningOf(echo)).toEqual(["Reading a.txt first.", "(encrypted reasoning)"]);
  });

  it("an echo of another shape shows no reasoning in any format", () => {
    for (const format of ["openai-chat", "anthropic-messages", "ai-sdk"] as const) {
      expect(providerFormat(format).reasoningOf({ parts: "x", thinking: [null, 3], reasoning_content: 7 }), format).toEqual([]);
    }
  });
});

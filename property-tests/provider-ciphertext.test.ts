import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { responseEvent } from "../src/core/response-event.js";
import { createSecretRedactor } from "../src/policy/secrets/secret-detector.js";
import { finalizeAiSdkStreamParts } from "../src/providers/ai-sdk/ai-sdk-finalizer.js";
import { finalizeAnthropicMessagesEvents } from "../src/providers/anthropic-messages/anthropic-messages-finalizer.js";
import type { FinalizedResponse } from "../src/providers/provider.js";

/*
 * The provider's ciphertext in an echo (OpenAI's encrypted reasoning, Anthropic's thinking
 * signatures, Gemini's thought signatures) is random base64 of a few kilobytes; about one such blob
 * in a hundred matches some key format. Whatever bytes it holds, it is recorded whole and the turn's
 * echo is kept (docs/security.md, "Provider ciphertext"), while a key in the readable reasoning
 * beside it still drops the echo.
 */

const redactor = createSecretRedactor({ secrets: ["turnlog-host-known-secret-value"] });
const turn = { turnId: "turn-1", attempt: 1 };
const blob = fc.noBias(fc.uint8Array({ minLength: 2_048, maxLength: 16_384, size: "max" })).map((bytes) => Buffer.from(bytes));
const finish = { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: { inputTokens: { total: 10 }, outputTokens: { total: 20 } } };

/** An AI SDK stream: one reasoning part whose metadata carries `metadata`, one tool call carrying `callMetadata`. */
function aiSdkResponse(reasoning: string, metadata: Record<string, unknown>, callMetadata?: Record<string, unknown>): FinalizedResponse {
  const result = finalizeAiSdkStreamParts([
    { type: "reasoning-start", id: "r0", providerMetadata: metadata },
    { type: "reasoning-delta", id: "r0", delta: reasoning },
    { type: "reasoning-end", id: "r0", providerMetadata: metadata },
    { type: "tool-call", toolCallId: "call_1", toolName: "read_file", input: '{"path":"src/index.ts"}', ...(callMetadata !== undefined ? { providerMetadata: callMetadata } : {}) },
    finish,
  ]);
  if (!result.ok) throw new Error(result.message);
  return result.response;
}

/** An Anthropic Messages stream: a thinking block with `signature`, a redacted one with `data`, a tool_use. */
function anthropicResponse(thinking: string, signature: string, data: string): FinalizedResponse {
  const result = finalizeAnthropicMessagesEvents([
    { type: "message_start", message: { usage: { input_tokens: 10, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature } },
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data } },
    { type: "content_block_stop", index: 1 },
    { type: "content_block_start", index: 2, content_block: { type: "tool_use", id: "toolu_1", name: "read_file", input: {} } },
    { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"path":"src/index.ts"}' } },
    { type: "content_block_stop", index: 2 },
    { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 20 } },
    { type: "message_stop" },
  ]);
  if (!result.ok) throw new Error(result.message);
  return result.response;
}

describe("provider ciphertext in an echo", () => {
  it("records OpenAI's, Google's and Bedrock's ciphertext through the AI SDK whole, whatever its bytes", () => {
    fc.assert(
      fc.property(blob, blob, (encrypted, signature) => {
        const reasoning = aiSdkResponse(
          "The caller wants the entry point; read it first.",
          { openai: { itemId: "rs_1", reasoningEncryptedContent: `gAAAAA${encrypted.toString("base64url")}` }, bedrock: { signature: signature.toString("base64") } },
          { google: { thoughtSignature: signature.toString("base64") } },
        );
        const { event } = responseEvent(turn, reasoning, redactor);
        expect(event.type).toBe("turn.provider.responded");
        expect(event.data).not.toHaveProperty("echoDropped");
        expect(event.data).toHaveProperty("echo", reasoning.echo);
      }),
      { numRuns: 300, endOnFailure: true },
    );
  });

  it("records Anthropic's signatures and redacted thinking whole, whatever their bytes", () => {
    fc.assert(
      fc.property(blob, blob, (signature, data) => {
        const thinking = anthropicResponse("Read the entry point first.", signature.toString("base64"), data.toString("base64"));
        const { event } = responseEvent(turn, thinking, redactor);
        expect(event.data).not.toHaveProperty("echoDropped");
        expect(event.data).toHaveProperty("echo", thinking.echo);
      }),
      { numRuns: 300, endOnFailure: true },
    );
  });

  it("still drops the echo when the readable reasoning beside the ciphertext holds a key", () => {
    fc.assert(
      fc.property(blob, fc.constantFrom("ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "AKIAIOSFODNN7EXAMPLF", "turnlog-host-known-secret-value"), (encrypted, key) => {
        const reasoning = aiSdkResponse(`The token in .env is ${key}; use it.`, { openai: { reasoningEncryptedContent: encrypted.toString("base64url") } });
        const thinking = anthropicResponse(`The token in .env is ${key}.`, encrypted.toString("base64"), "");
        for (const response of [reasoning, thinking]) {
          const { event } = responseEvent(turn, response, redactor);
          expect(event.data).toMatchObject({ echoDropped: "echo_secret" });
          expect(JSON.stringify(event)).not.toContain(key);
        }
      }),
      { numRuns: 40 },
    );
  });
});

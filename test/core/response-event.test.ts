import { describe, expect, it } from "vitest";
import { maxEchoChars, responseEvent } from "../../src/core/response-event.js";
import { createSecretRedactor } from "../../src/policy/secrets/secret-detector.js";

const turn = { turnId: "turn-1", attempt: 1 };
const key = "sk-live-0123456789abcdefghijklmnop";
const redactor = createSecretRedactor({ secrets: [key] });

describe("responseEvent: what a provider response is recorded as", () => {
  it("records tool calls cut off by the length limit as a failed, retryable attempt, without their arguments", () => {
    const { event, secretArguments } = responseEvent(turn, { content: "", toolCalls: [{ id: "a", name: "read_file", arguments: '{"path":"a.t' }], finishReason: "length" }, redactor);
    expect(event).toEqual({
      type: "turn.provider.failed",
      data: { turnId: "turn-1", attempt: 1, kind: "truncated-tool-calls", retryable: true, message: "the response hit the length limit inside 1 tool call(s); they were discarded" },
    });
    expect(JSON.stringify(event)).not.toContain("a.t");
    expect(secretArguments.size).toBe(0);
  });

  it("logs arguments holding a secret redacted, keeps their real text apart, and drops the echo beside them", () => {
    const real = JSON.stringify({ token: key });
    const { event, secretArguments } = responseEvent(turn, { content: "ok", toolCalls: [{ id: "a", name: "login", arguments: real }], echo: { raw: "x" } }, redactor);
    expect(event.type).toBe("turn.provider.responded");
    expect(JSON.stringify(event)).not.toContain(key);
    expect(event.data).toMatchObject({ toolCalls: [{ index: 0, id: "a", name: "login", argumentsRedacted: true }], finishReason: "tool_calls", echoDropped: "unsafe_arguments" });
    expect(secretArguments).toEqual(new Map([[0, real]]));
  });

  it("keeps an echo only within its bound", () => {
    const small = responseEvent(turn, { content: "done", toolCalls: [], echo: { id: "resp_1" } }, redactor).event;
    expect(small.data).toMatchObject({ echo: { id: "resp_1" }, finishReason: "stop" });
    const big = responseEvent(turn, { content: "done", toolCalls: [], echo: { blob: "x".repeat(maxEchoChars) } }, redactor).event;
    expect(big.data).toMatchObject({ echoDropped: "echo_oversized" });
    expect(big.data).not.toHaveProperty("echo");
  });

  it("keeps a long thinking echo whole, up to the bound of a stored tool output", () => {
    const thinking = "Check the imports before the call sites. ".repeat(7_000);
    const kept = responseEvent(turn, { content: "done", toolCalls: [], echo: { thinking: [{ type: "thinking", thinking, signature: "c2ln" }] } }, redactor).event;
    expect(kept.data).toMatchObject({ echo: { thinking: [{ thinking }] } });
    expect(maxEchoChars).toBe(1_000_000);
  });

  it("records the provider's ciphertext whole even where it looks like a key, and still drops a key in readable text", () => {
    // Random base64url holds a stretch that reads as an OpenAI project key about once in a hundred
    // blobs of this size (property-tests/provider-ciphertext.test.ts); this one does on purpose.
    const encrypted = `gAAAAABp${"Xy0_".repeat(50)}sk-proj-${"A1b2C3d4".repeat(6)}${"_Qz9".repeat(50)}`;
    const echo = { parts: [{ type: "reasoning", text: "Read the file first.", providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: encrypted } } }] };
    const named = responseEvent(turn, { content: "", toolCalls: [], echo, echoCiphertext: [encrypted] }, redactor).event;
    expect(named.data).toMatchObject({ echo });
    expect(named.data).not.toHaveProperty("echoDropped");
    const unnamed = responseEvent(turn, { content: "", toolCalls: [], echo }, redactor).event;
    expect(unnamed.data).toMatchObject({ echoDropped: "echo_secret" });
    const leaky = { parts: [{ ...echo.parts[0], text: `The key is ${key}.` }] };
    const readable = responseEvent(turn, { content: "", toolCalls: [], echo: leaky, echoCiphertext: [encrypted] }, redactor).event;
    expect(readable.data).toMatchObject({ echoDropped: "echo_secret" });
    expect(JSON.stringify(readable)).not.toContain(key);
  });

  it("records a response the event catalogue refuses as the provider's failed attempt", () => {
    const { event } = responseEvent(turn, { content: 42 as unknown as string, toolCalls: [] }, redactor);
    expect(event).toMatchObject({ type: "turn.provider.failed", data: { kind: "transport", retryable: true } });
  });
});

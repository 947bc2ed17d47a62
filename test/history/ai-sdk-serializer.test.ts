import { describe, expect, it } from "vitest";
import { buildHistoryUnits, type HistoryUnit } from "../../src/history/history-units.js";
import { aiSdkEmptyResultText, aiSdkEmptyUserText, serializeAiSdk } from "../../src/providers/ai-sdk/ai-sdk-serializer.js";
import { aiSdkViolations } from "../support/history-validators.js";
import { HistorySession } from "../support/history-sessions.js";

/* The AI SDK prompt as turnlog writes it from history units (docs/providers.md, "The AI SDK bridge"). */

const gpt = { id: "ai-sdk:openai.responses:gpt-5", format: "ai-sdk" as const };

function unitsOf(session: HistorySession): HistoryUnit[] {
  return buildHistoryUnits(session.state()).units;
}

const echo = {
  parts: [
    { type: "reasoning", text: "two files", providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: "gAAAA" } } },
    { type: "text", text: "let me look", providerMetadata: { openai: { itemId: "msg_1" } } },
    { type: "tool-call", call: 1, providerMetadata: { openai: { itemId: "fc_b" } } },
    { type: "tool-call", call: 0, providerMetadata: { google: { thoughtSignature: "sig-a" } } },
  ],
};

function readSession(options: { content?: string; echo?: Record<string, unknown> } = {}) {
  return new HistorySession({ provider: gpt })
    .user("read both")
    .toolTurn({
      ...(options.content !== undefined ? { content: options.content } : {}),
      ...(options.echo !== undefined ? { echo: options.echo } : {}),
      calls: [{ id: "call_a" }, { id: "call_b", arguments: '{"path":"b.txt"}' }],
      results: [{ content: "alpha" }, { ok: false, errorCode: "tool-exception", content: "" }],
    })
    .answer("alpha, and b failed")
    .user("thanks");
}

describe("serializeAiSdk", () => {
  it("writes the system message, user text, a safe group as an assistant message and one tool message, failed results as error-text", () => {
    const { messages, report } = serializeAiSdk(unitsOf(readSession()), { system: "Be brief." });
    expect(messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "read both" }] },
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "call_a", toolName: "read_file", input: { path: "a.txt" } },
          { type: "tool-call", toolCallId: "call_b", toolName: "read_file", input: { path: "b.txt" } },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "call_a", toolName: "read_file", output: { type: "text", value: "alpha" } },
          { type: "tool-result", toolCallId: "call_b", toolName: "read_file", output: { type: "error-text", value: aiSdkEmptyResultText } },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "alpha, and b failed" }] },
      { role: "user", content: [{ type: "text", text: "thanks" }] },
    ]);
    expect(report.repairs).toEqual({ empty_content: 1 });
    expect(aiSdkViolations(messages)).toEqual([]);
  });

  it("sends the echo back part for part, in the model's order, each providerMetadata as providerOptions — to the provider it came from only", () => {
    const units = unitsOf(readSession({ content: "let me look", echo }));
    expect(serializeAiSdk(units, { provider: gpt }).messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "two files", providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: "gAAAA" } } },
        { type: "text", text: "let me look", providerOptions: { openai: { itemId: "msg_1" } } },
        { type: "tool-call", toolCallId: "call_b", toolName: "read_file", input: { path: "b.txt" }, providerOptions: { openai: { itemId: "fc_b" } } },
        { type: "tool-call", toolCallId: "call_a", toolName: "read_file", input: { path: "a.txt" }, providerOptions: { google: { thoughtSignature: "sig-a" } } },
      ],
    });
    const other = serializeAiSdk(units, { provider: { id: "ai-sdk:anthropic.messages:claude", format: "ai-sdk" } });
    expect(other.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "let me look" },
        { type: "tool-call", toolCallId: "call_a", toolName: "read_file", input: { path: "a.txt" } },
        { type: "tool-call", toolCallId: "call_b", toolName: "read_file", input: { path: "b.txt" } },
      ],
    });
    expect(other.report.echoStripped).toBe(1);
  });

  it("an echo that does not describe its group (a call missing, text that does not add up) is not sent", () => {
    const missingCall = { parts: echo.parts.slice(0, 3) };
    const otherText = { parts: echo.parts.map((part) => (part.type === "text" ? { ...part, text: "something else" } : part)) };
    for (const bad of [missingCall, otherText]) {
      const [, assistant] = serializeAiSdk(unitsOf(readSession({ content: "let me look", echo: bad })), { provider: gpt }).messages;
      expect(assistant).toEqual({ role: "assistant", content: [{ type: "text", text: "let me look" }, expect.objectContaining({ toolCallId: "call_a" }), expect.objectContaining({ toolCallId: "call_b" })] });
    }
  });

  it("writes a flat group as its text and a user note, and replaces an empty user message", () => {
    const session = new HistorySession({ provider: gpt }).user(" ").toolTurn({ content: "trying", calls: [{ id: "call_a", redacted: true }], results: [{ content: "done" }] });
    const { messages } = serializeAiSdk(unitsOf(session), { provider: gpt });
    expect(messages).toEqual([
      { role: "user", content: [{ type: "text", text: aiSdkEmptyUserText }] },
      { role: "assistant", content: [{ type: "text", text: "trying" }] },
      { role: "user", content: [{ type: "text", text: "Earlier tool activity (not replayable as tool calls):\n- read_file (arguments withheld) → ok: done" }] },
    ]);
    expect(aiSdkViolations(messages)).toEqual([]);
  });
});

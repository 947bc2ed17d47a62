import { describe, expect, it } from "vitest";
import { buildHistoryUnits, type HistoryUnit } from "../../src/history/history-units.js";
import { emptyResultText, emptyUserText, prefaceText, serializeAnthropicMessages } from "../../src/providers/anthropic-messages/anthropic-messages-serializer.js";
import { serializeOpenAiChat } from "../../src/providers/openai-chat/openai-chat-serializer.js";
import { assertValidAnthropicMessages, assertValidOpenAiChat } from "../support/history-validators.js";
import { HistorySession } from "../support/history-sessions.js";

const deepseek = { id: "deepseek", format: "openai-chat" as const };
const claude = { id: "claude", format: "anthropic-messages" as const };

function unitsOf(session: HistorySession): HistoryUnit[] {
  return buildHistoryUnits(session.state()).units;
}

function readSession(options: { content?: string; echo?: Record<string, unknown>; provider?: { id: string; format: "openai-chat" | "anthropic-messages" } } = {}) {
  return new HistorySession(options.provider ? { provider: options.provider } : {})
    .user("read both")
    .toolTurn({
      ...(options.content !== undefined ? { content: options.content } : {}),
      ...(options.echo !== undefined ? { echo: options.echo } : {}),
      calls: [{ id: "call_a" }, { id: "call_b", arguments: '{"path":"b.txt"}' }],
      results: [{ content: "alpha" }, { ok: false, errorCode: "tool-exception", content: "Error: boom" }],
    })
    .answer("alpha, and b failed")
    .user("thanks");
}

describe("serializeOpenAiChat", () => {
  it("writes the system message, user and assistant messages, and a safe group as tool_calls + one tool message per call", () => {
    const { messages } = serializeOpenAiChat(unitsOf(readSession()), { system: "Be brief." });
    expect(messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "read both" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
          { id: "call_b", type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "alpha" },
      { role: "tool", tool_call_id: "call_b", content: "Error: boom" },
      { role: "assistant", content: "alpha, and b failed" },
      { role: "user", content: "thanks" },
    ]);
    assertValidOpenAiChat(messages);
  });

  it("keeps the assistant text that came with the calls", () => {
    const { messages } = serializeOpenAiChat(unitsOf(readSession({ content: "let me look" })));
    expect(messages[1]).toMatchObject({ role: "assistant", content: "let me look" });
  });

  it("writes a flat group as its text and a user note, never as tool calls", () => {
    const session = new HistorySession().user("go").toolTurn({ content: "trying", calls: [{ id: "call_a", redacted: true }], results: [{ content: "done" }] });
    const { messages } = serializeOpenAiChat(unitsOf(session));
    expect(messages).toEqual([
      { role: "user", content: "go" },
      { role: "assistant", content: "trying" },
      { role: "user", content: "Earlier tool activity (not replayable as tool calls):\n- read_file (arguments withheld) → ok: done" },
    ]);
    assertValidOpenAiChat(messages);
  });

  it("writes a summary as a user message (context, not system authority)", () => {
    const session = new HistorySession().user("first").answer("one");
    session.push({ type: "session.history.compacted", data: { beforePosition: session.nextPosition, summary: "S", unitsSummarized: 2, compressor: "deterministic" } });
    const { messages } = serializeOpenAiChat(unitsOf(session.user("next")), { system: "sys" });
    expect(messages.slice(0, 2)).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "Summary of the earlier conversation (older messages were compacted):\nS" },
    ]);
  });

  it("sends blank arguments as {}", () => {
    const { messages, report } = serializeOpenAiChat(unitsOf(new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a", arguments: "" }] })));
    expect(messages[1]).toMatchObject({ tool_calls: [{ function: { arguments: "{}" } }] });
    expect(report.repairs.empty_arguments).toBe(1);
  });

  it("replays reasoning_content only to the provider id and format it came from", () => {
    const units = unitsOf(readSession({ provider: deepseek, echo: { reasoning_content: "I should read both." } }));
    const same = serializeOpenAiChat(units, { provider: deepseek });
    expect(same.messages[1]).toMatchObject({ role: "assistant", reasoning_content: "I should read both." });
    expect(same.report.echoStripped).toBe(0);
    for (const other of [{ id: "openai", format: "openai-chat" as const }, { id: "deepseek", format: "anthropic-messages" as const }, undefined]) {
      const { messages, report } = serializeOpenAiChat(units, other ? { provider: other } : {});
      expect(JSON.stringify(messages)).not.toContain("I should read both.");
      expect(report.echoStripped).toBe(1);
    }
  });

  it("never replays the echo of a flat group", () => {
    const session = new HistorySession({ provider: deepseek }).user("go").toolTurn({ calls: [{ id: "call_a", redacted: true }], echo: { reasoning_content: "hidden thoughts" } });
    expect(JSON.stringify(serializeOpenAiChat(unitsOf(session), { provider: deepseek }).messages)).not.toContain("hidden thoughts");
  });
});

describe("serializeAnthropicMessages", () => {
  it("writes tool_use blocks with parsed input, then one user message whose tool_result blocks come first", () => {
    const { system, messages } = serializeAnthropicMessages(unitsOf(readSession({ content: "let me look" })), { system: "Be brief." });
    expect(system).toBe("Be brief.");
    expect(messages).toEqual([
      { role: "user", content: [{ type: "text", text: "read both" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "let me look" },
          { type: "tool_use", id: "call_a", name: "read_file", input: { path: "a.txt" } },
          { type: "tool_use", id: "call_b", name: "read_file", input: { path: "b.txt" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_a", content: "alpha" },
          { type: "tool_result", tool_use_id: "call_b", content: "Error: boom", is_error: true },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "alpha, and b failed" }] },
      { role: "user", content: [{ type: "text", text: "thanks" }] },
    ]);
    assertValidAnthropicMessages({ system, messages });
  });

  it("merges a user message after tool results into the results' message, after the tool_result blocks", () => {
    const session = new HistorySession().user("go").toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "A" }] }).user("and then?");
    const { messages, report } = serializeAnthropicMessages(unitsOf(session));
    expect(messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_a", content: "A" },
        { type: "text", text: "and then?" },
      ],
    });
    expect(report.repairs.merged_consecutive_roles).toBe(1);
    assertValidAnthropicMessages({ messages });
  });

  it("writes a flat group as assistant text and a user note, keeping roles alternating", () => {
    const session = new HistorySession()
      .user("go")
      .toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "A" }] })
      .toolTurn({ calls: [{ id: "call_b", redacted: true }], results: [{ content: "B" }] })
      .toolTurn({ content: "once more", calls: [{ id: "call_c", redacted: true }], results: [{ content: "C" }] });
    const { messages } = serializeAnthropicMessages(unitsOf(session));
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    expect(messages[2]?.content.map((block) => block.type)).toEqual(["tool_result", "text"]);
    expect(messages[3]?.content).toEqual([{ type: "text", text: "once more" }]);
    assertValidAnthropicMessages({ messages });
  });

  it("opens with a short user preface when the history would begin with the assistant", () => {
    const units: HistoryUnit[] = [{ kind: "assistant", position: 3, content: "hello" }];
    const { messages, report } = serializeAnthropicMessages(units);
    expect(messages[0]).toEqual({ role: "user", content: [{ type: "text", text: prefaceText }] });
    expect(report.repairs.inserted_preface).toBe(1);
    assertValidAnthropicMessages({ messages });
  });

  it("replaces empty text Anthropic rejects, or leaves it out", () => {
    const session = new HistorySession().user("").toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "" }] }).answer("  ").user("next");
    const { messages, report } = serializeAnthropicMessages(unitsOf(session));
    expect(messages[0]?.content).toEqual([{ type: "text", text: emptyUserText }]);
    expect(messages[2]?.content[0]).toEqual({ type: "tool_result", tool_use_id: "call_a", content: emptyResultText });
    expect(messages.filter((message) => message.role === "assistant")).toHaveLength(1);
    expect(report.repairs.empty_content).toBe(3);
    assertValidAnthropicMessages({ messages });
  });

  it("puts thinking blocks first in the assistant message, only for the provider they came from", () => {
    const thinking = [
      { type: "thinking", thinking: "Let me check both files.", signature: "sig-1" },
      { type: "redacted_thinking", data: "opaque" },
    ];
    const units = unitsOf(readSession({ provider: claude, content: "looking", echo: { thinking } }));
    const same = serializeAnthropicMessages(units, { provider: claude });
    expect(same.messages[1]?.content.map((block) => block.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use", "tool_use"]);
    expect(same.messages[1]?.content[0]).toEqual(thinking[0]);
    assertValidAnthropicMessages({ messages: same.messages });
    const other = serializeAnthropicMessages(units, { provider: { id: "claude-proxy", format: "anthropic-messages" } });
    expect(JSON.stringify(other.messages)).not.toContain("Let me check");
    expect(other.report.echoStripped).toBe(1);
  });

  it("leaves thinking out of a group whose assistant message merges after other assistant content", () => {
    const units: HistoryUnit[] = [
      { kind: "user", position: 1, content: "go" },
      { kind: "assistant", position: 2, content: "an answer" },
      {
        kind: "tool-group",
        position: 3,
        turnId: "turn-2",
        content: "",
        calls: [{ id: "call_a", name: "read_file", argumentsText: "{}", argumentsRedacted: false, input: {} }],
        results: [{ callId: "call_a", content: "A", ok: true }],
        echo: { source: claude, value: { thinking: [{ type: "thinking", thinking: "t", signature: "s" }] } },
      },
    ];
    const { messages, report } = serializeAnthropicMessages(units, { provider: claude });
    expect(messages[1]?.content.map((block) => block.type)).toEqual(["text", "tool_use"]);
    expect(report.repairs.echo_stripped_on_merge).toBe(1);
    assertValidAnthropicMessages({ messages });
  });
});

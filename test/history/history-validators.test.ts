import { describe, expect, it } from "vitest";
import { anthropicMessagesViolations, openAiChatViolations } from "../support/history-validators.js";

// The validators guard every other history test: each rule must catch its violation.
const call = (id: string, name = "read_file") => ({ id, type: "function", function: { name, arguments: "{}" } });
const toolUse = (id: string) => ({ type: "tool_use", id, name: "read_file", input: {} });
const toolResult = (id: string, content = "ok") => ({ type: "tool_result", tool_use_id: id, content });
const text = (value: string) => ({ type: "text", text: value });

describe("openAiChatViolations", () => {
  const valid = [
    { role: "system", content: "s" },
    { role: "user", content: "u" },
    { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
    { role: "tool", tool_call_id: "a", content: "A" },
    { role: "tool", tool_call_id: "b", content: "B" },
    { role: "assistant", content: "done" },
  ];

  it("accepts a valid request", () => {
    expect(openAiChatViolations(valid)).toEqual([]);
  });

  it.each([
    ["a call left unanswered", [valid[1], { role: "assistant", content: null, tool_calls: [call("a"), call("b")] }, { role: "tool", tool_call_id: "a", content: "A" }, { role: "user", content: "u" }]],
    ["a message between a call and its result", [valid[1], { role: "assistant", content: null, tool_calls: [call("a")] }, { role: "user", content: "u" }, { role: "tool", tool_call_id: "a", content: "A" }]],
    ["a result without a call", [valid[1], { role: "tool", tool_call_id: "a", content: "A" }]],
    ["a call answered twice", [valid[1], { role: "assistant", content: null, tool_calls: [call("a")] }, { role: "tool", tool_call_id: "a", content: "A" }, { role: "tool", tool_call_id: "a", content: "A" }]],
    ["results out of call order", [valid[1], valid[2], valid[4], valid[3]]],
    ["an ID over 40 characters", [valid[1], { role: "assistant", content: null, tool_calls: [call("x".repeat(41))] }, { role: "tool", tool_call_id: "x".repeat(41), content: "A" }]],
    ["an ID used twice", [valid[1], { role: "assistant", content: null, tool_calls: [call("a")] }, { role: "tool", tool_call_id: "a", content: "A" }, { role: "assistant", content: null, tool_calls: [call("a")] }, { role: "tool", tool_call_id: "a", content: "A" }]],
    ["an invalid tool name", [valid[1], { role: "assistant", content: null, tool_calls: [call("a", "read file")] }, { role: "tool", tool_call_id: "a", content: "A" }]],
    ["an assistant message with nothing", [valid[1], { role: "assistant", content: null }]],
  ])("rejects %s", (_, messages) => {
    expect(openAiChatViolations(messages)).not.toEqual([]);
  });
});

describe("anthropicMessagesViolations", () => {
  const valid = {
    system: "s",
    messages: [
      { role: "user", content: [text("u")] },
      { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "x" }, text("looking"), toolUse("a"), toolUse("b")] },
      { role: "user", content: [toolResult("a"), { ...toolResult("b"), is_error: true }, text("and then")] },
      { role: "assistant", content: "done" },
    ],
  };

  it("accepts a valid request", () => {
    expect(anthropicMessagesViolations(valid)).toEqual([]);
  });

  it.each([
    ["a first message from the assistant", [{ role: "assistant", content: [text("hi")] }]],
    ["two user messages in a row", [{ role: "user", content: [text("a")] }, { role: "user", content: [text("b")] }]],
    ["an empty text block", [{ role: "user", content: [text(" ")] }]],
    ["empty content", [{ role: "user", content: [] }]],
    ["a tool_use not answered in the next message", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a")] }, { role: "user", content: [text("no result")] }]],
    ["a tool_use answered after other content", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a")] }, { role: "user", content: [text("x"), toolResult("a")] }]],
    ["a tool_result without its tool_use", [{ role: "user", content: [toolResult("a")] }]],
    ["a tool_result answered twice", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a")] }, { role: "user", content: [toolResult("a"), toolResult("a")] }]],
    ["an ID outside [a-zA-Z0-9_-]", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a.b")] }, { role: "user", content: [toolResult("a.b")] }]],
    ["an empty tool_result", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a")] }, { role: "user", content: [toolResult("a", "")] }]],
    ["a thinking block after text", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [text("x"), { type: "thinking", thinking: "t", signature: "s" }] }]],
    ["a dangling tool_use at the end", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [toolUse("a")] }]],
    ["a tool_use input that is not an object", [{ role: "user", content: [text("u")] }, { role: "assistant", content: [{ ...toolUse("a"), input: "[]" }] }, { role: "user", content: [toolResult("a")] }]],
  ])("rejects %s", (_, messages) => {
    expect(anthropicMessagesViolations({ messages })).not.toEqual([]);
  });

  it("rejects an empty request", () => {
    expect(anthropicMessagesViolations({ messages: [] })).not.toEqual([]);
  });
});

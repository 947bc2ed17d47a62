import { describe, expect, it } from "vitest";
import { createAnthropicMessagesFinalizer, finalizeAnthropicMessagesEvents, normalizeAnthropicStopReason } from "../../src/providers/anthropic-messages/anthropic-messages-finalizer.js";
import { unwrapFinalization } from "../../src/providers/stream-finalization.js";
import { ProviderError } from "../../src/errors/provider-error.js";
import {
  blockStop,
  jsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  ping,
  readSseFixture,
  textBlock,
  textDelta,
  toolUseBlock,
  toolUseStart,
} from "./stream-builders.js";

function response(events: unknown[]) {
  const result = finalizeAnthropicMessagesEvents(events);
  if (!result.ok) throw new Error(`expected a finalized response, got ${result.kind}: ${result.message}`);
  return result.response;
}

/** A whole, properly ended stream around the given content-block events. */
const stream = (blocks: unknown[], stopReason: string | null = "end_turn") => [messageStart(), ...blocks, messageDelta(stopReason), messageStop];

describe("the Anthropic Messages finalizer", () => {
  it("finalizes the WIRE-FORMATS example: text, a tool_use from input_json_delta pieces, usage", () => {
    const { events } = readSseFixture("anthropic-messages-wire-example.sse");
    expect(finalizeAnthropicMessagesEvents(events)).toEqual({
      ok: true,
      response: {
        content: "Let me look",
        toolCalls: [{ id: "toolu_01", name: "read_file", arguments: '{"path": "a.txt"}' }],
        finishReason: "tool_calls",
        usage: { inputTokens: 120, outputTokens: 31 },
      },
    });
  });

  it("finalizes a text-only stream, passing each text piece to onText as it is read", () => {
    const seen: string[] = [];
    const finalizer = createAnthropicMessagesFinalizer({ onText: (text) => seen.push(text) });
    for (const event of [messageStart(10), ...textBlock(0, ["Hel", "lo."])]) finalizer.push(event);
    expect(seen).toEqual(["Hel", "lo."]);
    finalizer.push(messageDelta("end_turn", 4));
    finalizer.push(messageStop);
    expect(finalizer.finish()).toEqual({ ok: true, response: { content: "Hello.", toolCalls: [], finishReason: "stop", usage: { inputTokens: 10, outputTokens: 4 } } });
  });

  it("ignores ping events wherever they appear", () => {
    const { events } = readSseFixture("anthropic-messages-wire-example.sse");
    const withPings = events.flatMap((event) => [ping, event, ping]);
    expect(finalizeAnthropicMessagesEvents(withPings)).toEqual(finalizeAnthropicMessagesEvents(events));
  });

  it("returns parallel tool_use blocks in block order with text from several blocks", () => {
    const events = stream(
      [
        ...textBlock(0, ["Reading ", "both."]),
        ...toolUseBlock(1, { id: "toolu_a", name: "read_file" }, ['{"path":', '"a.txt"}']),
        ...toolUseBlock(2, { id: "toolu_b", name: "read_file" }, ['{"path":"b.txt"}']),
        ...textBlock(3, [" Done."]),
      ],
      "tool_use",
    );
    expect(response(events)).toMatchObject({
      content: "Reading both. Done.",
      toolCalls: [
        { id: "toolu_a", name: "read_file", arguments: '{"path":"a.txt"}' },
        { id: "toolu_b", name: "read_file", arguments: '{"path":"b.txt"}' },
      ],
      finishReason: "tool_calls",
    });
  });

  describe("tool input", () => {
    it("concatenates input_json_delta pieces split mid-token, inside a \\u escape and between surrogates", () => {
      const emoji = "😀";
      const events = stream(
        toolUseBlock(0, { id: "toolu_1", name: "write_file" }, ['{"pa', 'th":"caf\\u00', 'e9.txt","content":"', emoji.slice(0, 1), `${emoji.slice(1)}日本"}`]),
        "tool_use",
      );
      const [call] = response(events).toolCalls;
      expect(call?.arguments).toBe(`{"path":"caf\\u00e9.txt","content":"${emoji}日本"}`);
      expect(JSON.parse(call?.arguments ?? "")).toEqual({ path: "café.txt", content: "😀日本" });
    });

    it("uses JSON.stringify of a complete input that arrived with content_block_start and no deltas", () => {
      const events = stream([toolUseStart(0, { id: "toolu_1", name: "read_file", input: { path: "a.txt" } }), blockStop(0)], "tool_use");
      expect(response(events).toolCalls).toEqual([{ id: "toolu_1", name: "read_file", arguments: '{"path":"a.txt"}' }]);
    });

    it("gives a tool without parameters the arguments {} (input {} and an empty delta)", () => {
      const events = stream(toolUseBlock(0, { id: "toolu_1", name: "list_skills" }, [""]), "tool_use");
      expect(response(events).toolCalls).toEqual([{ id: "toolu_1", name: "list_skills", arguments: "{}" }]);
    });

    it("prefers the deltas over the start input when both came", () => {
      const events = stream([toolUseStart(0, { id: "toolu_1", name: "read_file", input: { path: "stale" } }), jsonDelta(0, '{"path":"a.txt"}'), blockStop(0)], "tool_use");
      expect(response(events).toolCalls[0]?.arguments).toBe('{"path":"a.txt"}');
    });

    it("never parses arguments: malformed JSON is the planner's business", () => {
      const events = stream(toolUseBlock(0, { id: "toolu_1", name: "read_file" }, ["{bad"]), "tool_use");
      expect(response(events).toolCalls[0]?.arguments).toBe("{bad");
    });

    it("leaves a missing id or name undefined", () => {
      const events = stream(toolUseBlock(0, {}, ['{"path":"a.txt"}']), "tool_use");
      const [call] = response(events).toolCalls;
      expect(call).toEqual({ arguments: '{"path":"a.txt"}' });
    });

    it("does not surface server tools (run by Anthropic) as tool calls", () => {
      const events = stream([
        { type: "content_block_start", index: 0, content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} } },
        jsonDelta(0, '{"query":"x"}'),
        blockStop(0),
        { type: "content_block_start", index: 1, content_block: { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] } },
        blockStop(1),
        ...textBlock(2, ["Found it."]),
      ]);
      expect(response(events)).toEqual({ content: "Found it.", toolCalls: [], finishReason: "stop", usage: { inputTokens: 120, outputTokens: 31 } });
    });
  });

  describe("stop reasons", () => {
    it.each([
      ["end_turn", "stop"],
      ["stop_sequence", "stop"],
      ["tool_use", "tool_calls"],
      ["max_tokens", "length"],
      ["model_context_window_exceeded", "length"],
      ["refusal", "content_filter"],
      ["pause_turn", "incomplete"],
      ["something_new", "unknown"],
    ] as const)("normalizes %s to %s", (wire, normalized) => {
      expect(normalizeAnthropicStopReason(wire)).toBe(normalized);
      expect(response(stream(textBlock(0, ["x"]), wire)).finishReason).toBe(normalized);
    });

    it("finalizes tool calls under max_tokens as length, with the calls (the runtime discards them)", () => {
      const events = stream(toolUseBlock(0, { id: "toolu_1", name: "write_file" }, ['{"path":"a.txt","content":"trunc']), "max_tokens");
      expect(response(events)).toMatchObject({ toolCalls: [{ id: "toolu_1", name: "write_file", arguments: '{"path":"a.txt","content":"trunc' }], finishReason: "length" });
    });

    it("finalizes a refusal as content_filter with the text so far", () => {
      expect(response(stream(textBlock(0, ["I can't help with that."]), "refusal"))).toMatchObject({ content: "I can't help with that.", finishReason: "content_filter" });
    });

    it("finalizes on a stop_reason even when message_stop never came", () => {
      expect(finalizeAnthropicMessagesEvents([messageStart(), ...textBlock(0, ["hi"]), messageDelta("end_turn")])).toMatchObject({ ok: true, response: { content: "hi", finishReason: "stop" } });
    });
  });

  describe("streams without a stop reason", () => {
    it("finalizes text that ended with message_stop as unknown", () => {
      expect(finalizeAnthropicMessagesEvents([messageStart(), ...textBlock(0, ["Hello."]), messageStop])).toEqual({
        ok: true,
        response: { content: "Hello.", toolCalls: [], finishReason: "unknown", usage: { inputTokens: 120, outputTokens: 1 } },
      });
    });

    it("fails tool_use blocks that ended with message_stop but no stop_reason as incomplete-stream", () => {
      const events = [messageStart(), ...textBlock(0, ["Let me look"]), ...toolUseBlock(1, { id: "toolu_1", name: "read_file" }, ['{"path":"a.txt"}']), messageStop];
      const result = finalizeAnthropicMessagesEvents(events);
      expect(result).toEqual({ ok: false, kind: "incomplete-stream", retryable: true, message: expect.stringContaining("stop_reason") });
    });

    it("fails a tool_use block that never stopped, even with a stop reason and message_stop", () => {
      const events = stream([toolUseStart(0, { id: "toolu_1", name: "read_file" }), jsonDelta(0, '{"path":"a.txt"}')], "tool_use");
      expect(finalizeAnthropicMessagesEvents(events)).toEqual({ ok: false, kind: "incomplete-stream", retryable: true, message: expect.stringContaining("never stopped") });
    });

    it("fails a stream that broke off mid tool input", () => {
      const events = [messageStart(), toolUseStart(0, { id: "toolu_1", name: "read_file" }), jsonDelta(0, '{"pa')];
      expect(finalizeAnthropicMessagesEvents(events)).toMatchObject({ ok: false, kind: "incomplete-stream", retryable: true });
    });

    it("fails a text-only stream that broke off before message_stop", () => {
      expect(finalizeAnthropicMessagesEvents([messageStart(), ...textBlock(0, ["Hello, I was say"])])).toMatchObject({ ok: false, kind: "incomplete-stream", retryable: true });
      expect(finalizeAnthropicMessagesEvents([])).toMatchObject({ ok: false, kind: "incomplete-stream" });
    });

    it("fails input_json_delta for a block that never started: its call has no name or id", () => {
      const events = stream([jsonDelta(0, '{"path":"a.txt"}'), blockStop(0)], "tool_use");
      expect(finalizeAnthropicMessagesEvents(events)).toMatchObject({ ok: false, kind: "incomplete-stream" });
    });
  });

  describe("thinking blocks", () => {
    it("keeps thinking and redacted thinking in echo, in order, as request content blocks", () => {
      const seen: string[] = [];
      const events = stream(
        [
          { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
          { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "The user wants " } },
          { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "a.txt." } },
          { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" } },
          blockStop(0),
          { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" } },
          blockStop(1),
          ...textBlock(2, ["Reading it."]),
          ...toolUseBlock(3, { id: "toolu_1", name: "read_file" }, ['{"path":"a.txt"}']),
        ],
        "tool_use",
      );
      expect(finalizeAnthropicMessagesEvents(events, { onText: (text) => seen.push(text) })).toEqual({
        ok: true,
        response: {
          content: "Reading it.",
          toolCalls: [{ id: "toolu_1", name: "read_file", arguments: '{"path":"a.txt"}' }],
          finishReason: "tool_calls",
          usage: { inputTokens: 120, outputTokens: 31 },
          echo: {
            thinking: [
              { type: "thinking", thinking: "The user wants a.txt.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" },
              { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" },
            ],
          },
          echoCiphertext: ["EqQBCgIYAhIM1gbcDa9GJwZA2b3h", "EmwKAhgBEgy3va3pzix"],
        },
      });
      expect(seen).toEqual(["Reading it."]);
    });
  });

  describe("errors and unreadable events", () => {
    it.each([
      ["overloaded_error", true],
      ["api_error", true],
      ["rate_limit_error", true],
      ["invalid_request_error", false],
    ] as const)("turns an %s event into a transport failure (retryable: %s) carrying its message", (type, retryable) => {
      const events = [messageStart(), ...textBlock(0, ["Hel"]), { type: "error", error: { type, message: "Overloaded" } }, messageDelta("end_turn"), messageStop];
      expect(finalizeAnthropicMessagesEvents(events)).toEqual({ ok: false, kind: "transport", retryable, message: `${type}: Overloaded` });
    });

    it.each([["a string", "event: ping"], ["null", null], ["an array", [messageStop]]])("fails on an event that is %s as a transport failure", (_, garbage) => {
      expect(finalizeAnthropicMessagesEvents([messageStart(), garbage, ...textBlock(0, ["x"]), messageDelta("end_turn"), messageStop])).toEqual({
        ok: false,
        kind: "transport",
        retryable: true,
        message: "unreadable chunk",
      });
    });

    it("ignores unknown event types, unknown delta types and unknown fields", () => {
      const events = stream([
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "", citations: null }, extra: 1 },
        textDelta(0, "See "),
        { type: "content_block_delta", index: 0, delta: { type: "citations_delta", citation: { type: "char_location", cited_text: "x" } } },
        textDelta(0, "the docs."),
        blockStop(0),
        { type: "message_annotation", data: {} },
      ]);
      expect(response(events).content).toBe("See the docs.");
    });
  });

  describe("the incremental finalizer", () => {
    it("gives the same result when finished twice, and refuses events after finishing", () => {
      const finalizer = createAnthropicMessagesFinalizer();
      for (const event of stream(textBlock(0, ["hi"]))) finalizer.push(event);
      const first = finalizer.finish();
      expect(finalizer.finish()).toBe(first);
      expect(() => finalizer.push(messageStop)).toThrow(TypeError);
    });

    it("reports a failure as soon as it happens, so an adapter can stop reading", () => {
      const finalizer = createAnthropicMessagesFinalizer();
      finalizer.push(messageStart());
      expect(finalizer.failure).toBeUndefined();
      finalizer.push({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
      expect(finalizer.failure).toMatchObject({ kind: "transport", retryable: true });
    });

    it("throws a ProviderError of the failure's kind when unwrapped", () => {
      const failure = finalizeAnthropicMessagesEvents([messageStart(), toolUseStart(0, { id: "toolu_1", name: "read_file" })]);
      let thrown: unknown;
      try {
        unwrapFinalization(failure);
      } catch (error) {
        thrown = error;
      }
      expect(ProviderError.isInstance(thrown)).toBe(true);
      expect(thrown).toMatchObject({ kind: "incomplete-stream", retryable: true, message: expect.stringContaining("never stopped") });
    });
  });
});

import { describe, expect, it } from "vitest";
import { createOpenAiChatFinalizer, finalizeOpenAiChatChunks, normalizeOpenAiFinishReason } from "../../src/providers/openai-chat/openai-chat-finalizer.js";
import { ProviderError } from "../../src/errors/provider-error.js";
import { asProviderError, unwrapFinalization } from "../../src/providers/stream-finalization.js";
import { chunk, finishChunk, fragment, openAiToolCallChunks, readSseFixture, textChunk, toolChunk, usageChunk } from "./stream-builders.js";

const done = { sawDone: true };

function response(chunks: unknown[], options = done) {
  const result = finalizeOpenAiChatChunks(chunks, options);
  if (!result.ok) throw new Error(`expected a finalized response, got ${result.kind}: ${result.message}`);
  return result.response;
}

describe("the OpenAI Chat Completions finalizer", () => {
  it("finalizes the WIRE-FORMATS example: text, two interleaved tool calls in index order, usage", () => {
    const { events, sawDone } = readSseFixture("openai-chat-wire-example.sse");
    expect(sawDone).toBe(true);
    expect(finalizeOpenAiChatChunks(events, { sawDone })).toEqual({
      ok: true,
      response: {
        content: "Let me look",
        toolCalls: [
          { id: "call_abc", name: "read_file", arguments: '{"path":"a.txt"}' },
          { id: "call_def", name: "list_dir", arguments: '{"path":"."}' },
        ],
        finishReason: "tool_calls",
        usage: { inputTokens: 120, outputTokens: 31 },
      },
    });
  });

  it("orders tool calls by index even when a higher index starts first", () => {
    const chunks = [
      toolChunk(fragment(1, { id: "call_b", name: "list_dir", arguments: "" })),
      toolChunk(fragment(0, { id: "call_a", name: "read_file", arguments: '{"path"' })),
      toolChunk(fragment(1, { arguments: '{"path":"."}' })),
      toolChunk(fragment(0, { arguments: ':"a.txt"}' })),
      finishChunk("tool_calls"),
    ];
    expect(response(chunks).toolCalls).toEqual([
      { id: "call_a", name: "read_file", arguments: '{"path":"a.txt"}' },
      { id: "call_b", name: "list_dir", arguments: '{"path":"."}' },
    ]);
  });

  it("finalizes a text-only stream with stop, passing each text piece to onText as it is read", () => {
    const seen: string[] = [];
    const finalizer = createOpenAiChatFinalizer({ onText: (text) => seen.push(text) });
    finalizer.push(chunk({ role: "assistant", content: "" }));
    finalizer.push(textChunk("Hel"));
    expect(seen).toEqual(["Hel"]);
    finalizer.push(textChunk("lo."));
    finalizer.push(finishChunk("stop"));
    expect(finalizer.finish(done)).toEqual({ ok: true, response: { content: "Hello.", toolCalls: [], finishReason: "stop" } });
    expect(seen).toEqual(["Hel", "lo."]);
  });

  describe("argument fragments", () => {
    it("concatenates arguments split mid-token verbatim", () => {
      const chunks = [...openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ['{"pa', 'th":"a.', 'txt"}']), finishChunk("tool_calls")];
      expect(response(chunks).toolCalls).toEqual([{ id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' }]);
    });

    it("reassembles a \\u escape split in the middle", () => {
      const chunks = [...openAiToolCallChunks(0, { name: "search_text" }, ['{"pattern":"caf\\u00', 'e9"}']), finishChunk("tool_calls")];
      const [call] = response(chunks).toolCalls;
      expect(call?.arguments).toBe('{"pattern":"caf\\u00e9"}');
      expect(JSON.parse(call?.arguments ?? "")).toEqual({ pattern: "café" });
    });

    it("reassembles a character split between its UTF-16 surrogates, and multi-byte text", () => {
      const emoji = "😀";
      const chunks = [
        ...openAiToolCallChunks(0, { name: "write_file" }, ['{"path":"ü.txt","content":"', emoji.slice(0, 1), `${emoji.slice(1)}日本"}`]),
        finishChunk("tool_calls"),
      ];
      expect(JSON.parse(response(chunks).toolCalls[0]?.arguments ?? "")).toEqual({ path: "ü.txt", content: "😀日本" });
    });

    it("never parses arguments: malformed JSON is the planner's business", () => {
      const chunks = [...openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ["{bad", " json"]), finishChunk("tool_calls")];
      expect(response(chunks).toolCalls).toEqual([{ id: "call_1", name: "read_file", arguments: "{bad json" }]);
    });
  });

  describe("what OpenAI-compatible servers do differently", () => {
    it("leaves a missing id undefined (turnlog derives one)", () => {
      const chunks = [
        toolChunk(fragment(0, { name: "read_file", arguments: "" })),
        toolChunk(fragment(0, { arguments: '{"path":"a.txt"}' })),
        finishChunk("tool_calls"),
      ];
      const calls = response(chunks).toolCalls;
      expect(calls).toEqual([{ name: "read_file", arguments: '{"path":"a.txt"}' }]);
      expect(calls[0]).not.toHaveProperty("id");
    });

    it("does not duplicate a name (or id) repeated on every fragment", () => {
      const chunks = [
        toolChunk({ index: 0, id: "call_1", type: "function", function: { name: "read_file", arguments: '{"pa' } }),
        toolChunk({ index: 0, id: "call_1", type: "function", function: { name: "read_file", arguments: 'th":"a.txt"}' } }),
        finishChunk("tool_calls"),
      ];
      expect(response(chunks).toolCalls).toEqual([{ id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' }]);
    });

    it("takes a whole call sent in one fragment, and several in one chunk", () => {
      const chunks = [
        toolChunk(fragment(0, { id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' }), fragment(1, { id: "call_2", name: "read_file", arguments: '{"path":"b.txt"}' })),
        finishChunk("tool_calls"),
      ];
      expect(response(chunks).toolCalls).toEqual([
        { id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' },
        { id: "call_2", name: "read_file", arguments: '{"path":"b.txt"}' },
      ]);
    });

    it("keeps name undefined when it never arrived (the planner rejects it as missing-name)", () => {
      const chunks = [toolChunk(fragment(0, { id: "call_1", arguments: '{"path":"a.txt"}' })), finishChunk("tool_calls")];
      const calls = response(chunks).toolCalls;
      expect(calls).toEqual([{ id: "call_1", arguments: '{"path":"a.txt"}' }]);
      expect(calls[0]).not.toHaveProperty("name");
    });

    it("reads fragments without an index: a named fragment starts a call, a bare one continues it", () => {
      const chunks = [
        toolChunk({ id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":' } }),
        toolChunk({ function: { arguments: '"a.txt"}' } }),
        toolChunk({ id: "call_2", type: "function", function: { name: "list_dir", arguments: '{"path":"."}' } }),
        toolChunk({ id: "call_1", function: { arguments: "" } }),
        finishChunk("tool_calls"),
      ];
      expect(response(chunks).toolCalls).toEqual([
        { id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' },
        { id: "call_2", name: "list_dir", arguments: '{"path":"."}' },
      ]);
    });

    it("reads the legacy delta.function_call, and finish_reason function_call as tool_calls", () => {
      const chunks = [chunk({ function_call: { name: "read_file", arguments: '{"path"' } }), chunk({ function_call: { arguments: ':"a.txt"}' } }), finishChunk("function_call")];
      expect(response(chunks)).toEqual({ content: "", toolCalls: [{ name: "read_file", arguments: '{"path":"a.txt"}' }], finishReason: "tool_calls" });
    });

    it("reads the first choice only when n > 1", () => {
      const chunks = [
        { choices: [{ index: 1, delta: { content: "other" }, finish_reason: null }] },
        { choices: [{ index: 0, delta: { content: "mine" }, finish_reason: null }] },
        { choices: [{ index: 1, delta: {}, finish_reason: "length" }] },
        { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      ];
      expect(response(chunks)).toEqual({ content: "mine", toolCalls: [], finishReason: "stop" });
    });

    it("ignores unknown fields, null values and a usage of null on every chunk", () => {
      const chunks = [
        { ...chunk({ role: "assistant", content: null, tool_calls: null, refusal: null }), usage: null, system_fingerprint: "fp", x_extra: { a: 1 } },
        { ...textChunk("ok"), usage: null, prompt_filter_results: [] },
        { ...finishChunk("stop"), usage: null },
      ];
      expect(response(chunks)).toEqual({ content: "ok", toolCalls: [], finishReason: "stop" });
    });

    it("takes usage from a chunk that also carries the finish reason", () => {
      const chunks = [textChunk("ok"), { ...finishChunk("stop"), usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }];
      expect(response(chunks).usage).toEqual({ inputTokens: 5, outputTokens: 2 });
    });

    it("keeps model-chosen names as plain strings", () => {
      const chunks = [toolChunk(JSON.parse('{"index":0,"id":"call_1","function":{"name":"__proto__","arguments":"{\\"__proto__\\":1}"}}')), finishChunk("tool_calls")];
      expect(response(chunks).toolCalls).toEqual([{ id: "call_1", name: "__proto__", arguments: '{"__proto__":1}' }]);
    });
  });

  describe("finish reasons", () => {
    it.each([
      ["stop", "stop"],
      ["tool_calls", "tool_calls"],
      ["function_call", "tool_calls"],
      ["length", "length"],
      ["content_filter", "content_filter"],
      ["eos", "unknown"],
    ] as const)("normalizes %s to %s", (wire, normalized) => {
      expect(normalizeOpenAiFinishReason(wire)).toBe(normalized);
      expect(response([textChunk("x"), finishChunk(wire)]).finishReason).toBe(normalized);
    });

    it("finalizes tool calls under length with finishReason length (the runtime, not the finalizer, discards them)", () => {
      const chunks = [...openAiToolCallChunks(0, { id: "call_1", name: "write_file" }, ['{"path":"a.txt","content":"trunc']), finishChunk("length")];
      expect(response(chunks)).toEqual({
        content: "",
        toolCalls: [{ id: "call_1", name: "write_file", arguments: '{"path":"a.txt","content":"trunc' }],
        finishReason: "length",
      });
    });

    it("finalizes content_filter with the text read so far", () => {
      expect(response([textChunk("I can"), finishChunk("content_filter")])).toEqual({ content: "I can", toolCalls: [], finishReason: "content_filter" });
    });

    it("finalizes on a finish reason even when [DONE] never came (the usage chunk is optional)", () => {
      expect(finalizeOpenAiChatChunks([textChunk("hi"), finishChunk("stop")], { sawDone: false })).toEqual({
        ok: true,
        response: { content: "hi", toolCalls: [], finishReason: "stop" },
      });
    });
  });

  describe("streams without a finish reason", () => {
    it("finalizes text that ended with [DONE] as unknown", () => {
      expect(finalizeOpenAiChatChunks([textChunk("Hello"), textChunk(".")], { sawDone: true })).toEqual({
        ok: true,
        response: { content: "Hello.", toolCalls: [], finishReason: "unknown" },
      });
    });

    it("fails tool fragments that ended with [DONE] as incomplete-stream, surfacing no tool call", () => {
      const chunks = [textChunk("Let me look"), ...openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ['{"path":"a.txt"}'])];
      const result = finalizeOpenAiChatChunks(chunks, { sawDone: true });
      expect(result).toEqual({ ok: false, kind: "incomplete-stream", retryable: true, message: expect.stringContaining("finish_reason") });
      expect(result).not.toHaveProperty("response");
    });

    it("fails a stream that broke off with tool fragments", () => {
      const chunks = openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ['{"pa']);
      expect(finalizeOpenAiChatChunks(chunks, { sawDone: false })).toMatchObject({ ok: false, kind: "incomplete-stream", retryable: true });
    });

    it("fails a text-only stream that broke off before [DONE]", () => {
      expect(finalizeOpenAiChatChunks([textChunk("Hello, I was say")], { sawDone: false })).toMatchObject({ ok: false, kind: "incomplete-stream", retryable: true });
    });

    it("fails an empty stream that broke off; an empty one that ended properly is an empty unknown answer", () => {
      expect(finalizeOpenAiChatChunks([], { sawDone: false })).toMatchObject({ ok: false, kind: "incomplete-stream" });
      expect(finalizeOpenAiChatChunks([], { sawDone: true })).toEqual({ ok: true, response: { content: "", toolCalls: [], finishReason: "unknown" } });
    });

    it("does not count a usage chunk as a finish", () => {
      expect(finalizeOpenAiChatChunks([textChunk("Hi"), usageChunk(3, 1)], { sawDone: false })).toMatchObject({ ok: false, kind: "incomplete-stream" });
    });
  });

  describe("echo", () => {
    it("collects reasoning_content into echo, apart from the visible text and onText", () => {
      const seen: string[] = [];
      const chunks = [
        chunk({ role: "assistant", content: null, reasoning_content: "The user wants " }),
        chunk({ content: null, reasoning_content: "a.txt." }),
        textChunk("Reading it."),
        ...openAiToolCallChunks(0, { id: "call_1", name: "read_file" }, ['{"path":"a.txt"}']),
        finishChunk("tool_calls"),
      ];
      expect(finalizeOpenAiChatChunks(chunks, { sawDone: true, onText: (text) => seen.push(text) })).toEqual({
        ok: true,
        response: {
          content: "Reading it.",
          toolCalls: [{ id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' }],
          finishReason: "tool_calls",
          echo: { reasoning_content: "The user wants a.txt." },
        },
      });
      expect(seen).toEqual(["Reading it."]);
    });

    it("keeps a refusal in echo", () => {
      expect(response([chunk({ refusal: "I can't " }), chunk({ refusal: "help with that." }), finishChunk("stop")])).toEqual({
        content: "",
        toolCalls: [],
        finishReason: "stop",
        echo: { refusal: "I can't help with that." },
      });
    });
  });

  describe("unreadable and failed streams", () => {
    it.each([["a string", "data: {}"], ["null", null], ["a number", 42], ["an array", [textChunk("x")]], ["the [DONE] sentinel", "[DONE]"]])(
      "fails on a chunk that is %s as a transport failure",
      (_, garbage) => {
        expect(finalizeOpenAiChatChunks([textChunk("hi"), garbage, finishChunk("stop")], done)).toEqual({
          ok: false,
          kind: "transport",
          retryable: true,
          message: "unreadable chunk",
        });
      },
    );

    it("keeps the first failure: later chunks change nothing", () => {
      const finalizer = createOpenAiChatFinalizer();
      for (const piece of openAiToolCallChunks(0, { name: "read_file" }, ['{"path":"a.txt"}'])) finalizer.push(piece);
      finalizer.push(7);
      expect(finalizer.failure).toMatchObject({ kind: "transport" });
      finalizer.push(finishChunk("tool_calls"));
      expect(finalizer.finish(done)).toMatchObject({ ok: false, kind: "transport", message: "unreadable chunk" });
    });

    it("fails on an in-band error chunk, retryable unless the server calls it a client error", () => {
      expect(finalizeOpenAiChatChunks([textChunk("hi"), { error: { message: "upstream overloaded", type: "server_error", code: null } }], done)).toEqual({
        ok: false,
        kind: "transport",
        retryable: true,
        message: "upstream overloaded",
      });
      expect(finalizeOpenAiChatChunks([{ error: { object: "error", message: "context too long", type: "BadRequestError", code: 400 } }], done)).toMatchObject({
        kind: "transport",
        retryable: false,
      });
    });
  });

  describe("the incremental finalizer", () => {
    it("gives the same result when finished twice, and refuses chunks after finishing", () => {
      const finalizer = createOpenAiChatFinalizer();
      finalizer.push(textChunk("hi"));
      finalizer.push(finishChunk("stop"));
      const first = finalizer.finish(done);
      expect(finalizer.finish({ sawDone: false })).toBe(first);
      expect(() => finalizer.push(textChunk("more"))).toThrow(TypeError);
    });

    it("equals the one-shot finalizer chunk by chunk", () => {
      const { events } = readSseFixture("openai-chat-wire-example.sse");
      const finalizer = createOpenAiChatFinalizer();
      for (const event of events) finalizer.push(event);
      expect(finalizer.finish(done)).toEqual(finalizeOpenAiChatChunks(events, done));
    });
  });

  describe("as a ProviderError", () => {
    it("unwraps a finalized response and throws the failure's kind otherwise", () => {
      expect(unwrapFinalization(finalizeOpenAiChatChunks([textChunk("hi")], done))).toEqual({ content: "hi", toolCalls: [], finishReason: "unknown" });
      const failure = finalizeOpenAiChatChunks([textChunk("hi")], { sawDone: false });
      if (failure.ok) throw new Error("expected a failure");
      const error = asProviderError(failure);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ kind: "incomplete-stream", retryable: true, message: failure.message });
      expect(() => unwrapFinalization(failure)).toThrow(ProviderError);
    });
  });
});

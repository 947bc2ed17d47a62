import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finalizeAnthropicMessagesEvents } from "../src/providers/anthropic-messages/anthropic-messages-finalizer.js";
import { finalizeOpenAiChatChunks } from "../src/providers/openai-chat/openai-chat-finalizer.js";
import {
  blockStop,
  finishChunk,
  fragment,
  jsonDelta,
  messageDelta,
  messageStart,
  messageStop,
  textChunk,
  textDelta,
  toolChunk,
  toolUseStart,
  usageChunk,
} from "../test/providers/stream-builders.js";

interface ToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/** Any text, including astral characters, so splits land between surrogates too. */
const text = fc.string({ unit: "binary", maxLength: 40 });

const toolCall: fc.Arbitrary<ToolCall> = fc.record(
  {
    id: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
    name: fc.oneof(fc.constantFrom("read_file", "list_dir", "__proto__", "constructor"), fc.string({ unit: "binary", minLength: 1, maxLength: 20 })),
    arguments: fc.oneof(fc.json({ maxDepth: 2 }), text),
  },
  { requiredKeys: ["name", "arguments"] },
);

/** A string cut at random points (in UTF-16 code units) into pieces that join back to it. */
function pieces(value: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (value.length + 1)))].sort((left, right) => left - right);
  const result: string[] = [];
  let start = 0;
  for (const point of [...points, value.length]) {
    result.push(value.slice(start, point));
    start = point;
  }
  return result;
}

const cuts = fc.array(fc.nat({ max: 10_000 }), { maxLength: 6 });
/** Sort keys: each sequence's items get ascending keys, and merging by key interleaves sequences. */
const keys = fc.array(fc.nat({ max: 1_000_000 }), { minLength: 16, maxLength: 16 });

interface Keyed<T> {
  key: number;
  sequence: number;
  item: T;
}

/** Interleaves sequences at random while keeping each sequence's own order. */
function interleave<T>(sequences: readonly (readonly T[])[], keysOf: readonly (readonly number[])[]): T[] {
  const keyed: Keyed<T>[] = [];
  sequences.forEach((items, sequence) => {
    const sorted = [...(keysOf[sequence] ?? [])].sort((left, right) => left - right);
    items.forEach((item, position) => keyed.push({ key: sorted[position] ?? Number.MAX_SAFE_INTEGER, sequence, item }));
  });
  // Ties keep a stable, per-sequence order: Array.prototype.sort is stable and sequences are pushed in order.
  return keyed.sort((left, right) => left.key - right.key).map((entry) => entry.item);
}

/** A streamed answer: text pieces and tool calls, each call's arguments cut into fragments. */
const streamed = fc.record({
  text,
  textCuts: cuts,
  textKeys: keys,
  calls: fc.array(fc.record({ call: toolCall, cuts, keys, repeatName: fc.boolean() }), { maxLength: 4 }),
});
type Streamed = typeof streamed extends fc.Arbitrary<infer T> ? T : never;

/** The OpenAI chunks of an answer, fragments of different calls interleaved, without the finish chunk. */
function openAiChunks(answer: Streamed): unknown[] {
  const textChunks = pieces(answer.text, answer.textCuts).filter((piece) => piece !== "").map((piece) => textChunk(piece));
  const callChunks = answer.calls.map(({ call, cuts: argumentCuts, repeatName }, index) =>
    pieces(call.arguments, argumentCuts).map((piece, position) =>
      toolChunk(
        position === 0
          ? fragment(index, { ...(call.id !== undefined ? { id: call.id } : {}), name: call.name, arguments: piece })
          : fragment(index, { ...(repeatName ? { name: call.name } : {}), arguments: piece }),
      ),
    ),
  );
  return interleave([textChunks, ...callChunks], [answer.textKeys, ...answer.calls.map((call) => call.keys)]);
}

/** The Anthropic events of an answer: a text block and tool_use blocks, deltas interleaved across blocks. */
function anthropicEvents(answer: Streamed): { blocks: unknown[]; all: unknown[] } {
  const textPieces = pieces(answer.text, answer.textCuts).filter((piece) => piece !== "");
  const textEvents = textPieces.length === 0 ? [] : [{ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, ...textPieces.map((piece) => textDelta(0, piece)), blockStop(0)];
  const toolEvents = answer.calls.map(({ call, cuts: argumentCuts }, position) => {
    const index = position + 1;
    return [toolUseStart(index, { ...(call.id !== undefined ? { id: call.id } : {}), name: call.name }), ...pieces(call.arguments, argumentCuts).map((piece) => jsonDelta(index, piece)), blockStop(index)];
  });
  const blocks = interleave([textEvents, ...toolEvents], [answer.textKeys, ...answer.calls.map((call) => call.keys)]);
  return { blocks, all: [messageStart(), ...blocks, messageDelta(answer.calls.length > 0 ? "tool_use" : "end_turn"), messageStop] };
}

/** Whether an OpenAI chunk carries tool-call fragments. */
function isToolChunk(chunk: unknown): boolean {
  const [choice] = (chunk as { choices: { delta: Record<string, unknown> }[] }).choices;
  return choice !== undefined && Object.hasOwn(choice.delta, "tool_calls");
}

const expectedCalls = (answer: Streamed, emptyArguments = "") =>
  answer.calls.map(({ call }) => ({ ...(call.id !== undefined ? { id: call.id } : {}), name: call.name, arguments: call.arguments === "" ? emptyArguments : call.arguments }));

describe("the OpenAI Chat Completions finalizer, for any interleaving of fragments", () => {
  it("reassembles exactly the original calls, in index order, and the text", () => {
    fc.assert(
      fc.property(streamed, fc.boolean(), fc.boolean(), (answer, withUsage, sawDone) => {
        const seen: string[] = [];
        const finishReason = answer.calls.length > 0 ? "tool_calls" : "stop";
        const chunks = [...openAiChunks(answer), finishChunk(finishReason), ...(withUsage ? [usageChunk(10, 5)] : [])];
        expect(finalizeOpenAiChatChunks(chunks, { sawDone, onText: (piece) => seen.push(piece) })).toEqual({
          ok: true,
          response: { content: answer.text, toolCalls: expectedCalls(answer), finishReason, ...(withUsage ? { usage: { inputTokens: 10, outputTokens: 5 } } : {}) },
        });
        expect(seen.join("")).toBe(answer.text);
      }),
    );
  });

  it("fails as incomplete-stream, surfacing no call, whenever tool fragments come without a finish reason", () => {
    fc.assert(
      fc.property(
        streamed.filter((answer) => answer.calls.length > 0),
        fc.nat(),
        fc.boolean(),
        (answer, cut, sawDone) => {
          const chunks = openAiChunks(answer);
          // Any prefix that holds at least one tool fragment, ended by [DONE] or broken off.
          const firstTool = chunks.findIndex(isToolChunk);
          const prefix = chunks.slice(0, firstTool + 1 + (cut % (chunks.length - firstTool)));
          expect(finalizeOpenAiChatChunks(prefix, { sawDone })).toEqual({ ok: false, kind: "incomplete-stream", retryable: true, message: expect.any(String) });
        },
      ),
    );
  });

  it("fails any stream that breaks off before its finish reason, and finalizes text ended by [DONE] as unknown", () => {
    fc.assert(
      fc.property(streamed, fc.nat(), (answer, cut) => {
        const chunks = openAiChunks(answer);
        const prefix = chunks.slice(0, cut % (chunks.length + 1));
        expect(finalizeOpenAiChatChunks(prefix, { sawDone: false })).toMatchObject({ ok: false, kind: "incomplete-stream" });
        if (answer.calls.length === 0) {
          expect(finalizeOpenAiChatChunks(chunks, { sawDone: true })).toEqual({ ok: true, response: { content: answer.text, toolCalls: [], finishReason: "unknown" } });
        }
      }),
    );
  });
});

describe("the Anthropic Messages finalizer, for any split of input_json_delta", () => {
  it("reassembles exactly the original calls, in block order, and the text", () => {
    fc.assert(
      fc.property(streamed, (answer) => {
        const seen: string[] = [];
        expect(finalizeAnthropicMessagesEvents(anthropicEvents(answer).all, { onText: (piece) => seen.push(piece) })).toEqual({
          ok: true,
          response: {
            content: answer.text,
            // A tool_use whose deltas were all empty keeps its start `input: {}`.
            toolCalls: expectedCalls(answer, "{}"),
            finishReason: answer.calls.length > 0 ? "tool_calls" : "stop",
            usage: { inputTokens: 120, outputTokens: 31 },
          },
        });
        expect(seen.join("")).toBe(answer.text);
      }),
    );
  });

  it("fails as incomplete-stream whenever the stream breaks off before its stop reason", () => {
    fc.assert(
      fc.property(streamed, fc.nat(), (answer, cut) => {
        const { blocks } = anthropicEvents(answer);
        const prefix = [messageStart(), ...blocks].slice(0, cut % (blocks.length + 2));
        expect(finalizeAnthropicMessagesEvents(prefix)).toMatchObject({ ok: false, kind: "incomplete-stream", retryable: true });
      }),
    );
  });

  it("fails tool calls as incomplete-stream when the stop reason is dropped or a tool_use block never stops", () => {
    fc.assert(
      fc.property(
        streamed.filter((answer) => answer.calls.length > 0),
        fc.nat(),
        (answer, which) => {
          const { blocks } = anthropicEvents(answer);
          expect(finalizeAnthropicMessagesEvents([messageStart(), ...blocks, messageStop])).toMatchObject({ ok: false, kind: "incomplete-stream" });
          const toolIndex = 1 + (which % answer.calls.length);
          const stop = JSON.stringify(blockStop(toolIndex));
          const unstopped = blocks.filter((event) => JSON.stringify(event) !== stop);
          expect(finalizeAnthropicMessagesEvents([messageStart(), ...unstopped, messageDelta("tool_use"), messageStop])).toMatchObject({ ok: false, kind: "incomplete-stream" });
        },
      ),
    );
  });
});

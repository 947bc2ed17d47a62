import type { ProviderFormat } from "../../../src/contracts/provider.js";
import type { FinalizedToolCall } from "../../../src/providers/provider.js";
import type { FuzzCall, FuzzStream } from "./fuzz-case.js";

/**
 * A fuzzed stream rendered as its provider sends it: OpenAI `chat.completion.chunk` objects or
 * Anthropic stream events (the parsed `data:` of each SSE event, which is what the finalizers
 * read), with whether an OpenAI stream ended with `data: [DONE]`. For a stream without faults,
 * `expected` is what finalizing it must give.
 */
export interface WireStream {
  chunks: unknown[];
  done: boolean;
  expected?: { content: string; toolCalls: FinalizedToolCall[] };
}

/** The pieces of a string cut at the given UTF-16 offsets: a surrogate pair may fall apart. */
export function pieces(value: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (value.length + 1)))].sort((left, right) => left - right);
  const result: string[] = [];
  let start = 0;
  for (const point of [...points, value.length]) {
    if (point > start) result.push(value.slice(start, point));
    start = point;
  }
  return result;
}

/** Interleaves sequences by sort keys, keeping each sequence's own order. */
function interleave<T>(sequences: readonly (readonly T[])[], keysOf: readonly (readonly number[])[]): T[] {
  const keyed: { key: number; item: T }[] = [];
  sequences.forEach((items, sequence) => {
    const sorted = [...(keysOf[sequence] ?? [])].sort((left, right) => left - right);
    items.forEach((item, position) => keyed.push({ key: sorted[position] ?? Number.MAX_SAFE_INTEGER, item }));
  });
  // Array.prototype.sort is stable: ties keep the order sequences were pushed in.
  return keyed.sort((left, right) => left.key - right.key).map((entry) => entry.item);
}

/** Inserts `item` after the first `at` chunks (at most all of them). */
function insertAt(chunks: unknown[], at: number, item: unknown): unknown[] {
  const position = Math.min(at, chunks.length);
  return [...chunks.slice(0, position), item, ...chunks.slice(position)];
}

/** Whether a stream carries no fault: finalizing it must give back exactly what was sent. */
function isClean(stream: FuzzStream, format: ProviderFormat): boolean {
  return (
    stream.ending.kind === "done" &&
    stream.finish === "consistent" &&
    stream.calls.every((call) => call.indexFault === "none" && (format === "openai-chat" || !call.unstopped))
  );
}

/**
 * The stream as the finalizer reads it: each chunk went through JSON text and back, as an SSE
 * `data:` line does (lone surrogates travel as `\ud800`–`\udfff` escapes and come back as they were).
 */
export function renderStream(stream: FuzzStream, format: ProviderFormat): WireStream {
  const wire = format === "openai-chat" ? openAiStream(stream) : anthropicStream(stream);
  return { ...wire, chunks: wire.chunks.map((chunk) => JSON.parse(JSON.stringify(chunk)) as unknown) };
}

// --- OpenAI Chat Completions -------------------------------------------------------------------

function openAiChunk(delta: Record<string, unknown>, finishReason: string | null = null, choiceIndex = 0): Record<string, unknown> {
  return { id: "chatcmpl-fuzz", object: "chat.completion.chunk", created: 1_767_225_600, model: "fuzz", choices: [{ index: choiceIndex, delta, logprobs: null, finish_reason: finishReason }] };
}

function openAiFragment(call: FuzzCall, position: number, wireIndex: number | undefined, argumentsPiece: string, first: boolean): Record<string, unknown> {
  const fn: Record<string, unknown> = { arguments: argumentsPiece };
  if (call.name !== undefined && (first || call.repeatName)) fn.name = call.name;
  return {
    ...(wireIndex !== undefined ? { index: wireIndex } : {}),
    ...(first && call.id !== undefined ? { id: call.id, type: "function" } : {}),
    function: fn,
  };
}

function openAiWireIndex(call: FuzzCall, position: number): number | undefined {
  switch (call.indexFault) {
    case "missing":
      return undefined;
    case "duplicate":
      return 0;
    case "shifted":
      return position + 7;
    default:
      return position;
  }
}

function openAiStream(stream: FuzzStream): WireStream {
  const textChunks = pieces(stream.text, stream.textCuts).map((piece) => openAiChunk({ content: piece }));
  const callChunks = stream.calls.map((call, position) => {
    const wireIndex = openAiWireIndex(call, position);
    const argumentPieces = call.whole ? [call.arguments] : ["", ...pieces(call.arguments, call.cuts)];
    return argumentPieces.map((piece, at) => openAiChunk({ tool_calls: [openAiFragment(call, position, wireIndex, piece, at === 0)] }));
  });
  let chunks: unknown[] = [
    openAiChunk({ role: "assistant", content: "" }),
    ...pieces(stream.reasoning, [3, 9]).map((piece) => openAiChunk({ reasoning_content: piece })),
    ...interleave([textChunks, ...callChunks], [stream.textKeys, ...stream.calls.map((call) => call.keys)]),
  ];
  // Another choice of an `n > 1` request: the response is choice 0 only.
  if (stream.noise) chunks = insertAt(chunks, 1, openAiChunk({ content: "other choice", tool_calls: [{ index: 0, id: "call_other", function: { name: "drop_table", arguments: "{}" } }] }, null, 1));
  const finish = stream.finish === "consistent" ? (stream.calls.length > 0 ? "tool_calls" : "stop") : stream.finish;
  if (finish !== "missing") chunks.push(openAiChunk({}, finish));
  if (stream.usage) chunks.push({ id: "chatcmpl-fuzz", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 120, completion_tokens: 31, total_tokens: 151 } });
  let done = stream.ending.kind === "done";
  const ending = stream.ending;
  if (ending.kind === "cut") chunks = chunks.slice(0, ending.at);
  if (ending.kind === "error") {
    chunks = insertAt(chunks, ending.at, { error: { message: `fuzzed error ${ending.code}`, code: ending.code } });
    done = false;
  }
  if (ending.kind === "garbage") chunks = insertAt(chunks, ending.at, ending.value);
  const wire: WireStream = { chunks, done };
  if (isClean(stream, "openai-chat")) {
    wire.expected = {
      content: stream.text,
      toolCalls: stream.calls.map((call) => ({
        ...(call.id !== undefined && call.id !== "" ? { id: call.id } : {}),
        ...(call.name !== undefined && call.name !== "" ? { name: call.name } : {}),
        arguments: call.arguments,
      })),
    };
  }
  return wire;
}

// --- Anthropic Messages ------------------------------------------------------------------------

function anthropicWireIndex(call: FuzzCall, position: number): number {
  switch (call.indexFault) {
    case "duplicate":
      return 1;
    case "shifted":
      return position + 20;
    default:
      return position + 1;
  }
}

/** The input an Anthropic block start carries up front: the parsed arguments when they are an object. */
function upfrontInput(call: FuzzCall): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(call.arguments);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function anthropicStream(stream: FuzzStream): WireStream {
  const textPieces = pieces(stream.text, stream.textCuts);
  // Block 0 is the text block; tool blocks follow from 1, a thinking block last (its index only orders it).
  const textEvents =
    textPieces.length === 0
      ? []
      : [
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          ...textPieces.map((piece) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } })),
          { type: "content_block_stop", index: 0 },
        ];
  const upfront = stream.calls.map((call) => (call.whole ? upfrontInput(call) : undefined));
  const callEvents = stream.calls.map((call, position) => {
    const index = anthropicWireIndex(call, position);
    const input = upfront[position];
    const start = {
      type: "content_block_start",
      // "missing": the start names no index, so the block never starts and its deltas dangle.
      ...(call.indexFault === "missing" ? {} : { index }),
      content_block: { type: "tool_use", ...(call.id !== undefined ? { id: call.id } : {}), ...(call.name !== undefined ? { name: call.name } : {}), input: input ?? {} },
    };
    const deltas = input !== undefined ? [] : pieces(call.arguments, call.cuts).map((piece) => ({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } }));
    return [start, ...deltas, ...(call.unstopped ? [] : [{ type: "content_block_stop", index }])];
  });
  const thinking =
    stream.reasoning === ""
      ? []
      : [
          { type: "content_block_start", index: 90, content_block: { type: "thinking", thinking: "", signature: "" } },
          ...pieces(stream.reasoning, [5]).map((piece) => ({ type: "content_block_delta", index: 90, delta: { type: "thinking_delta", thinking: piece } })),
          { type: "content_block_delta", index: 90, delta: { type: "signature_delta", signature: "c2lnbmF0dXJl" } },
          { type: "content_block_stop", index: 90 },
        ];
  let events: unknown[] = [
    { type: "message_start", message: { id: "msg_fuzz", type: "message", role: "assistant", model: "fuzz", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 120, output_tokens: 1 } } },
    ...thinking,
    ...interleave([textEvents, ...callEvents], [stream.textKeys, ...stream.calls.map((call) => call.keys)]),
  ];
  if (stream.noise) {
    events = insertAt(events, 1, { type: "ping" });
    events = insertAt(events, events.length - 1, { type: "ping" });
  }
  const finish = stream.finish === "consistent" ? (stream.calls.length > 0 ? "tool_use" : "end_turn") : stream.finish;
  events.push({ type: "message_delta", delta: finish === "missing" ? { stop_sequence: null } : { stop_reason: finish, stop_sequence: null }, ...(stream.usage ? { usage: { output_tokens: 31 } } : {}) });
  const ending = stream.ending;
  if (ending.kind === "done") events.push({ type: "message_stop" });
  if (ending.kind === "cut") events = events.slice(0, ending.at);
  if (ending.kind === "error") {
    const type = typeof ending.code === "string" ? ending.code : "api_error";
    events = insertAt(events, ending.at, { type: "error", error: { type, message: `fuzzed error ${ending.code}` } });
  }
  if (ending.kind === "garbage") events = insertAt(events, ending.at, ending.value);
  const wire: WireStream = { chunks: events, done: true };
  if (isClean(stream, "anthropic-messages")) {
    wire.expected = {
      content: stream.text,
      toolCalls: stream.calls.map((call, position) => {
        const input = upfront[position];
        return {
          ...(call.id !== undefined && call.id !== "" ? { id: call.id } : {}),
          ...(call.name !== undefined && call.name !== "" ? { name: call.name } : {}),
          // Without deltas the block's input is the arguments: `{}` when there were none.
          arguments: input !== undefined ? JSON.stringify(input) : call.arguments === "" ? "{}" : call.arguments,
        };
      }),
    };
  }
  return wire;
}

import { readFileSync } from "node:fs";

/**
 * Builders for real-shaped provider stream chunks (as the official SDK types describe them), so
 * tests spell out only what varies.
 */

/** Reads an SSE fixture: the parsed `data:` payloads, and whether it ended with `data: [DONE]`. */
export function readSseFixture(name: string): { events: unknown[]; sawDone: boolean } {
  const text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");
  const events: unknown[] = [];
  let sawDone = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    const payload = line.slice("data: ".length);
    if (payload === "[DONE]") sawDone = true;
    else events.push(JSON.parse(payload));
  }
  return { events, sawDone };
}

// --- OpenAI Chat Completions -------------------------------------------------------------------

/** One `chat.completion.chunk` with a single choice. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1_767_225_600,
    model: "gpt-test",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** A text delta chunk. */
export const textChunk = (text: string) => chunk({ content: text });

/** A chunk carrying tool-call fragments. */
export const toolChunk = (...fragments: Record<string, unknown>[]) => chunk({ tool_calls: fragments });

/** One tool-call fragment, as OpenAI sends it (`function.name` only when given). */
export function fragment(index: number, parts: { id?: string; name?: string; arguments?: string }): Record<string, unknown> {
  const fn: Record<string, unknown> = {};
  if (parts.name !== undefined) fn.name = parts.name;
  if (parts.arguments !== undefined) fn.arguments = parts.arguments;
  return { index, ...(parts.id !== undefined ? { id: parts.id, type: "function" } : {}), function: fn };
}

/** The chunk that carries only the finish reason. */
export const finishChunk = (reason: string) => chunk({}, reason);

/** The usage chunk sent with `stream_options: { include_usage: true }`. */
export function usageChunk(promptTokens: number, completionTokens: number): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

/** The chunks of one tool call sent OpenAI's usual way: id and name first, then argument pieces. */
export function openAiToolCallChunks(index: number, call: { id?: string; name?: string }, argumentPieces: readonly string[]): Record<string, unknown>[] {
  return [toolChunk(fragment(index, { ...call, arguments: "" })), ...argumentPieces.map((piece) => toolChunk(fragment(index, { arguments: piece })))];
}

// --- Anthropic Messages ------------------------------------------------------------------------

export function messageStart(inputTokens = 120): Record<string, unknown> {
  return {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  };
}

/** A whole text block: start, one delta per piece, stop. */
export function textBlock(index: number, pieces: readonly string[]): Record<string, unknown>[] {
  return [
    { type: "content_block_start", index, content_block: { type: "text", text: "" } },
    ...pieces.map((text) => textDelta(index, text)),
    { type: "content_block_stop", index },
  ];
}

export const textDelta = (index: number, text: string) => ({ type: "content_block_delta", index, delta: { type: "text_delta", text } });

export function toolUseStart(index: number, block: { id?: string; name?: string; input?: unknown }): Record<string, unknown> {
  return { type: "content_block_start", index, content_block: { type: "tool_use", input: {}, ...block } };
}

export const jsonDelta = (index: number, partialJson: string) => ({
  type: "content_block_delta",
  index,
  delta: { type: "input_json_delta", partial_json: partialJson },
});

export const blockStop = (index: number) => ({ type: "content_block_stop", index });

/** A whole tool_use block: start with `input: {}`, one input_json_delta per piece, stop. */
export function toolUseBlock(index: number, block: { id?: string; name?: string }, pieces: readonly string[]): Record<string, unknown>[] {
  return [toolUseStart(index, block), ...pieces.map((piece) => jsonDelta(index, piece)), blockStop(index)];
}

export function messageDelta(stopReason: string | null, outputTokens = 31): Record<string, unknown> {
  return { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } };
}

export const messageStop = { type: "message_stop" } as const;

export const ping = { type: "ping" } as const;

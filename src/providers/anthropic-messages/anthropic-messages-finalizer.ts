import type { FinishReason, Usage } from "../../contracts/provider.js";
import type { FinalizedResponse, FinalizedToolCall } from "../provider.js";
import type { FinalizationFailure, FinalizationResult, StreamFinalizerOptions } from "../stream-finalization.js";
import {
  countField,
  field,
  incompleteStream,
  mergeUsage,
  nonEmptyStringField,
  recordField,
  stringField,
  transportFailure,
} from "../stream-finalization.js";
import { isRecord } from "../../util/json-value.js";

/**
 * Assembles Anthropic Messages stream events (the JSON-parsed `data:` of each SSE event) into one
 * finalized response. Pure: no I/O, no clock.
 */
export interface AnthropicMessagesFinalizer {
  /** Reads one event. After a failure further events are ignored: the failure stands. */
  push(event: unknown): void;
  /** The failure so far, if any — a streaming adapter may stop reading early. */
  readonly failure: FinalizationFailure | undefined;
  /**
   * Finalizes. The stream says itself whether it ended properly (`message_stop`), so there is no
   * option. Calling it again returns the same result.
   */
  finish(): FinalizationResult;
}

/**
 * A thinking block kept for echo, in the request's own content-block shape so the history
 * serializer can send it back unchanged (the API requires that when extended thinking is on).
 */
export type AnthropicThinkingEcho =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };

type Block =
  | { kind: "text"; stopped: boolean }
  | { kind: "tool_use"; id?: string; name?: string; input: unknown; json: string; stopped: boolean }
  | { kind: "thinking"; echo: AnthropicThinkingEcho & { type: "thinking" }; stopped: boolean }
  | { kind: "redacted_thinking"; echo: AnthropicThinkingEcho & { type: "redacted_thinking" }; stopped: boolean }
  // server_tool_use, web search results, …: run by Anthropic, nothing for turnlog to execute.
  | { kind: "other"; stopped: boolean };

const STOP_REASONS: ReadonlyMap<string, FinishReason> = new Map([
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["tool_use", "tool_calls"],
  ["max_tokens", "length"],
  // Also a truncation: the output hit the context window rather than `max_tokens`.
  ["model_context_window_exceeded", "length"],
  ["refusal", "content_filter"],
  ["pause_turn", "incomplete"],
]);

/** Error types the API itself documents as worth retrying. */
const RETRYABLE_ERRORS = new Set(["overloaded_error", "api_error", "rate_limit_error"]);

/**
 * The turnlog finish reason for an Anthropic `stop_reason`; one it does not know is `unknown`,
 * but still final.
 *
 * @example
 * normalizeAnthropicStopReason("max_tokens") // "length"
 */
export function normalizeAnthropicStopReason(reason: string): FinishReason {
  return STOP_REASONS.get(reason) ?? "unknown";
}

/**
 * An incremental finalizer for one Anthropic Messages stream (docs/design.md#10-providers-and-formats).
 *
 * - `text` blocks and `text_delta`s are the visible text (each piece also goes to `onText`).
 * - A `tool_use` block's arguments are its `input_json_delta.partial_json` pieces concatenated
 *   verbatim (never parsed); when none arrived they are `JSON.stringify` of the block's `input`
 *   (`{}` for a tool without parameters, or a complete input sent up front). Missing `id`/`name`
 *   stay undefined. Calls come out ordered by block index.
 * - `thinking` (with `thinking_delta`, `signature_delta`) and `redacted_thinking` blocks are kept
 *   in `echo.thinking` as request content blocks, in order.
 * - `message_delta.delta.stop_reason` finalizes. Without one, text that ended with `message_stop`
 *   finalizes as `unknown`; tool blocks, a `tool_use` block never stopped, or a stream that broke
 *   off before `message_stop` are an `incomplete-stream` failure and are never surfaced.
 * - `message_start.message.usage.input_tokens` → `inputTokens`, `message_delta.usage.output_tokens`
 *   → `outputTokens`; `ping` is ignored; an `error` event is a `transport` failure, retryable for
 *   `overloaded_error`, `api_error` and `rate_limit_error`. A non-object event is a `transport`
 *   failure; unknown event types and fields are ignored.
 *
 * @example
 * const finalizer = createAnthropicMessagesFinalizer({ onText: (text) => process.stdout.write(text) });
 * for await (const event of stream) finalizer.push(event);
 * const result = finalizer.finish();
 */
export function createAnthropicMessagesFinalizer(options: StreamFinalizerOptions = {}): AnthropicMessagesFinalizer {
  const { onText } = options;
  let content = "";
  // Keyed by block index in a Map: indexes come from the wire, never a prototype key.
  const blocks = new Map<number, Block>();
  let stopReason: FinishReason | undefined;
  let sawMessageStop = false;
  let usage: Usage | undefined;
  let failure: FinalizationFailure | undefined;
  let result: FinalizationResult | undefined;

  function appendText(text: string | undefined): void {
    if (text === undefined || text === "") return;
    content += text;
    onText?.(text);
  }

  function startBlock(index: number, block: Record<string, unknown>): void {
    switch (stringField(block, "type")) {
      case "text":
        blocks.set(index, { kind: "text", stopped: false });
        appendText(stringField(block, "text"));
        return;
      case "tool_use": {
        const id = nonEmptyStringField(block, "id");
        const name = nonEmptyStringField(block, "name");
        blocks.set(index, { kind: "tool_use", ...(id !== undefined ? { id } : {}), ...(name !== undefined ? { name } : {}), input: field(block, "input"), json: "", stopped: false });
        return;
      }
      case "thinking":
        blocks.set(index, {
          kind: "thinking",
          echo: { type: "thinking", thinking: stringField(block, "thinking") ?? "", signature: stringField(block, "signature") ?? "" },
          stopped: false,
        });
        return;
      case "redacted_thinking":
        blocks.set(index, { kind: "redacted_thinking", echo: { type: "redacted_thinking", data: stringField(block, "data") ?? "" }, stopped: false });
        return;
      default:
        blocks.set(index, { kind: "other", stopped: false });
    }
  }

  function readDelta(index: number, delta: Record<string, unknown>): void {
    const block = blocks.get(index);
    switch (stringField(delta, "type")) {
      case "text_delta":
        // Text is visible whatever block it claims; a delta without its block start is still text.
        if (block === undefined || block.kind === "text") appendText(stringField(delta, "text"));
        return;
      case "input_json_delta":
        if (block === undefined) {
          failure = incompleteStream(`anthropic-messages stream: input_json_delta for content block ${index}, which never started`);
        } else if (block.kind === "tool_use") {
          block.json += stringField(delta, "partial_json") ?? "";
        }
        return;
      case "thinking_delta":
        if (block?.kind === "thinking") block.echo.thinking += stringField(delta, "thinking") ?? "";
        return;
      case "signature_delta":
        if (block?.kind === "thinking") block.echo.signature += stringField(delta, "signature") ?? "";
        return;
      default:
      // citations_delta and deltas yet to be invented carry nothing turnlog needs.
    }
  }

  function readEvent(event: Record<string, unknown>): void {
    switch (stringField(event, "type")) {
      case "message_start": {
        const reported = recordField(recordField(event, "message") ?? {}, "usage");
        if (reported !== undefined) usage = mergeUsage(usage, countField(reported, "input_tokens"), countField(reported, "output_tokens"));
        return;
      }
      case "content_block_start": {
        const index = countField(event, "index");
        const block = recordField(event, "content_block");
        if (index !== undefined && block !== undefined) startBlock(index, block);
        return;
      }
      case "content_block_delta": {
        const index = countField(event, "index");
        const delta = recordField(event, "delta");
        if (index !== undefined && delta !== undefined) readDelta(index, delta);
        return;
      }
      case "content_block_stop": {
        const index = countField(event, "index");
        const block = index === undefined ? undefined : blocks.get(index);
        if (block !== undefined) block.stopped = true;
        return;
      }
      case "message_delta": {
        const reason = nonEmptyStringField(recordField(event, "delta") ?? {}, "stop_reason");
        if (reason !== undefined) stopReason = normalizeAnthropicStopReason(reason);
        const reported = recordField(event, "usage");
        if (reported !== undefined) usage = mergeUsage(usage, countField(reported, "input_tokens"), countField(reported, "output_tokens"));
        return;
      }
      case "message_stop":
        sawMessageStop = true;
        return;
      case "error": {
        const error = recordField(event, "error") ?? {};
        const type = nonEmptyStringField(error, "type");
        const message = nonEmptyStringField(error, "message");
        failure = transportFailure(
          [type, message].filter((part) => part !== undefined).join(": ") || "anthropic-messages stream: error event",
          type !== undefined && RETRYABLE_ERRORS.has(type),
        );
        return;
      }
      default:
      // ping, and event types yet to be invented.
    }
  }

  function finalize(): FinalizationResult {
    if (failure !== undefined) return failure;
    const ordered = [...blocks.entries()].sort(([left], [right]) => left - right).map(([, block]) => block);
    const toolBlocks = ordered.filter((block) => block.kind === "tool_use");
    const unstopped = [...blocks.entries()].find(([, block]) => block.kind === "tool_use" && !block.stopped);
    if (unstopped !== undefined) return incompleteStream(`anthropic-messages stream: tool_use block ${unstopped[0]} never stopped`);
    if (stopReason === undefined) {
      if (toolBlocks.length > 0) return incompleteStream("anthropic-messages stream: tool_use blocks without a stop_reason");
      if (!sawMessageStop) return incompleteStream("anthropic-messages stream: ended before message_stop without a stop_reason");
    }
    const toolCalls: FinalizedToolCall[] = toolBlocks.map((block) => ({
      ...(block.id !== undefined ? { id: block.id } : {}),
      ...(block.name !== undefined ? { name: block.name } : {}),
      arguments: block.json !== "" ? block.json : block.input === undefined ? "" : JSON.stringify(block.input),
    }));
    const response: FinalizedResponse = { content, toolCalls, finishReason: stopReason ?? "unknown" };
    if (usage !== undefined) response.usage = usage;
    const thinking = ordered.flatMap((block) => (block.kind === "thinking" || block.kind === "redacted_thinking" ? [block.echo] : []));
    if (thinking.length > 0) {
      response.echo = { thinking };
      // Signatures and redacted thinking are Anthropic's ciphertext; the thinking text is not.
      const ciphertext = thinking.map((block) => (block.type === "thinking" ? block.signature : block.data)).filter((text) => text !== "");
      if (ciphertext.length > 0) response.echoCiphertext = ciphertext;
    }
    return { ok: true, response };
  }

  return {
    push(event) {
      if (result !== undefined) throw new TypeError("anthropic-messages finalizer: push after finish");
      if (failure !== undefined) return;
      if (!isRecord(event)) failure = transportFailure("unreadable chunk", true);
      else readEvent(event);
    },
    get failure() {
      return failure;
    },
    finish() {
      result ??= finalize();
      return result;
    },
  };
}

/**
 * Finalizes a whole Anthropic Messages stream at once; see `createAnthropicMessagesFinalizer`.
 * Returns a result rather than throwing; `unwrapFinalization` turns a failure into a `ProviderError`.
 *
 * @example
 * finalizeAnthropicMessagesEvents([
 *   { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
 *   { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
 *   { type: "message_delta", delta: { stop_reason: "end_turn" } },
 *   { type: "message_stop" },
 * ]) // { ok: true, response: { content: "hi", toolCalls: [], finishReason: "stop" } }
 */
export function finalizeAnthropicMessagesEvents(events: Iterable<unknown>, options: StreamFinalizerOptions = {}): FinalizationResult {
  const finalizer = createAnthropicMessagesFinalizer(options);
  for (const event of events) {
    finalizer.push(event);
    if (finalizer.failure !== undefined) break;
  }
  return finalizer.finish();
}

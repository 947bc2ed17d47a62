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
 * Assembles OpenAI Chat Completions stream chunks (`chat.completion.chunk`, already JSON-parsed,
 * without the `[DONE]` sentinel) into one finalized response. Pure: no I/O, no clock.
 */
export interface OpenAiChatFinalizer {
  /** Reads one chunk. After a failure further chunks are ignored: the failure stands. */
  push(chunk: unknown): void;
  /** The failure so far, if any — a streaming adapter may stop reading early. */
  readonly failure: FinalizationFailure | undefined;
  /**
   * Finalizes. `sawDone` tells whether the stream ended properly with `data: [DONE]`; it decides
   * between `unknown` and `incomplete-stream` for text that ends without a finish reason.
   * Calling it again returns the same result.
   */
  finish(options: { sawDone: boolean }): FinalizationResult;
}

interface ToolCallDraft {
  /** The wire `index`, which orders the calls. */
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

const FINISH_REASONS: ReadonlyMap<string, FinishReason> = new Map([
  ["stop", "stop"],
  ["tool_calls", "tool_calls"],
  // The legacy functions API names the same ending `function_call`.
  ["function_call", "tool_calls"],
  ["length", "length"],
  ["content_filter", "content_filter"],
]);

/**
 * The turnlog finish reason for an OpenAI `finish_reason`; one it does not know (`eos`, `abort`,
 * …) is `unknown`, but still final.
 *
 * @example
 * normalizeOpenAiFinishReason("function_call") // "tool_calls"
 */
export function normalizeOpenAiFinishReason(reason: string): FinishReason {
  return FINISH_REASONS.get(reason) ?? "unknown";
}

/**
 * An incremental finalizer for one OpenAI Chat Completions stream (docs/design.md#10-providers-and-formats).
 *
 * - `delta.content` is the visible text (each piece also goes to `onText`); `delta.reasoning_content`
 *   and `delta.refusal` are kept in `echo` for native replay.
 * - `delta.tool_calls[]` fragments are merged by `index`: the first `id` and the first `function.name`
 *   stick (a name repeated on every fragment is not duplicated), `function.arguments` pieces are
 *   concatenated verbatim and never parsed. A call whose name never arrived keeps `name`
 *   undefined; a missing id stays undefined. Calls come out ordered by index.
 * - A final `finish_reason` finalizes. Without one, text that ended with `[DONE]` finalizes as
 *   `unknown`; tool fragments, or a stream that broke off before `[DONE]`, are an
 *   `incomplete-stream` failure and their fragments are never surfaced.
 * - `usage` (usually a last chunk with empty `choices`) maps `prompt_tokens` → `inputTokens`,
 *   `completion_tokens` → `outputTokens`.
 * - A chunk that is not a JSON object, or that carries an `error` object (what OpenAI-compatible
 *   servers send when they fail mid-stream), is a `transport` failure. Unknown fields are ignored.
 *
 * @example
 * const finalizer = createOpenAiChatFinalizer({ onText: (text) => process.stdout.write(text) });
 * for await (const chunk of stream) finalizer.push(chunk);
 * const result = finalizer.finish({ sawDone: true });
 */
export function createOpenAiChatFinalizer(options: StreamFinalizerOptions = {}): OpenAiChatFinalizer {
  const { onText } = options;
  let content = "";
  let reasoning = "";
  let refusal = "";
  // Keyed by wire index in a Map: indexes come from the model's server, never a prototype key.
  const calls = new Map<number, ToolCallDraft>();
  let lastCall: ToolCallDraft | undefined;
  let finishReason: FinishReason | undefined;
  let usage: Usage | undefined;
  let failure: FinalizationFailure | undefined;
  let result: FinalizationResult | undefined;

  /** The draft a fragment belongs to. Servers that omit `index` are read leniently. */
  function draftFor(fragment: Record<string, unknown>, id: string | undefined, name: string | undefined): ToolCallDraft {
    let index = countField(fragment, "index");
    if (index === undefined) {
      const sameId = id === undefined ? undefined : [...calls.values()].find((call) => call.id === id);
      if (sameId !== undefined) return sameId;
      // Without an index, a fragment that names a call starts one; a bare arguments piece continues the last.
      if (id === undefined && name === undefined && lastCall !== undefined) return lastCall;
      index = calls.size === 0 ? 0 : Math.max(...calls.keys()) + 1;
    }
    let draft = calls.get(index);
    if (draft === undefined) {
      draft = { index, arguments: "" };
      calls.set(index, draft);
    }
    return draft;
  }

  function readToolFragment(fragment: unknown): void {
    if (!isRecord(fragment)) return;
    const fn = recordField(fragment, "function");
    const id = nonEmptyStringField(fragment, "id");
    const name = fn === undefined ? undefined : nonEmptyStringField(fn, "name");
    const draft = draftFor(fragment, id, name);
    lastCall = draft;
    if (draft.id === undefined && id !== undefined) draft.id = id;
    if (draft.name === undefined && name !== undefined) draft.name = name;
    const piece = fn === undefined ? undefined : stringField(fn, "arguments");
    if (piece !== undefined) draft.arguments += piece;
  }

  function readDelta(delta: Record<string, unknown>): void {
    const text = stringField(delta, "content");
    if (text !== undefined && text !== "") {
      content += text;
      onText?.(text);
    }
    reasoning += stringField(delta, "reasoning_content") ?? "";
    refusal += stringField(delta, "refusal") ?? "";
    const toolCalls = field(delta, "tool_calls");
    if (Array.isArray(toolCalls)) for (const fragment of toolCalls) readToolFragment(fragment);
    // The legacy functions API streams one unindexed call as `delta.function_call`.
    const legacyCall = recordField(delta, "function_call");
    if (legacyCall !== undefined) readToolFragment({ function: legacyCall });
  }

  function readChunk(chunk: Record<string, unknown>): void {
    const error = recordField(chunk, "error");
    if (error !== undefined) {
      failure = streamError(error);
      return;
    }
    const reported = recordField(chunk, "usage");
    if (reported !== undefined) usage = mergeUsage(usage, countField(reported, "prompt_tokens"), countField(reported, "completion_tokens"));
    const choices = field(chunk, "choices");
    if (!Array.isArray(choices)) return;
    // Only the first choice is the response; with `n > 1` other choices arrive with other indexes.
    const choice = choices.find((candidate) => isRecord(candidate) && (countField(candidate, "index") ?? 0) === 0);
    if (!isRecord(choice)) return;
    const delta = recordField(choice, "delta");
    if (delta !== undefined) readDelta(delta);
    const reason = nonEmptyStringField(choice, "finish_reason");
    if (reason !== undefined) finishReason = normalizeOpenAiFinishReason(reason);
  }

  function finalize(sawDone: boolean): FinalizationResult {
    if (failure !== undefined) return failure;
    if (finishReason === undefined) {
      if (calls.size > 0) return incompleteStream("openai-chat stream: tool call fragments without a finish_reason");
      if (!sawDone) return incompleteStream("openai-chat stream: ended before [DONE] without a finish_reason");
    }
    const toolCalls: FinalizedToolCall[] = [...calls.values()]
      .sort((left, right) => left.index - right.index)
      .map((draft) => ({
        ...(draft.id !== undefined ? { id: draft.id } : {}),
        ...(draft.name !== undefined ? { name: draft.name } : {}),
        arguments: draft.arguments,
      }));
    const response: FinalizedResponse = { content, toolCalls, finishReason: finishReason ?? "unknown" };
    if (usage !== undefined) response.usage = usage;
    const echo: Record<string, unknown> = {};
    if (reasoning !== "") echo.reasoning_content = reasoning;
    if (refusal !== "") echo.refusal = refusal;
    if (Object.keys(echo).length > 0) response.echo = echo;
    return { ok: true, response };
  }

  return {
    push(chunk) {
      if (result !== undefined) throw new TypeError("openai-chat finalizer: push after finish");
      if (failure !== undefined) return;
      if (!isRecord(chunk)) failure = transportFailure("unreadable chunk", true);
      else readChunk(chunk);
    },
    get failure() {
      return failure;
    },
    finish({ sawDone }) {
      result ??= finalize(sawDone);
      return result;
    },
  };
}

/**
 * Finalizes a whole OpenAI Chat Completions stream at once; see `createOpenAiChatFinalizer`.
 * Returns a result rather than throwing; `unwrapFinalization` turns a failure into a `ProviderError`.
 *
 * @example
 * finalizeOpenAiChatChunks(
 *   [{ choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] }],
 *   { sawDone: true },
 * ) // { ok: true, response: { content: "hi", toolCalls: [], finishReason: "stop" } }
 */
export function finalizeOpenAiChatChunks(chunks: Iterable<unknown>, options: { sawDone: boolean } & StreamFinalizerOptions): FinalizationResult {
  const finalizer = createOpenAiChatFinalizer(options.onText ? { onText: options.onText } : {});
  for (const chunk of chunks) {
    finalizer.push(chunk);
    if (finalizer.failure !== undefined) break;
  }
  return finalizer.finish({ sawDone: options.sawDone });
}

/** An in-band `{ error: { message, code } }`: retryable unless the server calls it a client error. */
function streamError(error: Record<string, unknown>): FinalizationFailure {
  const code = field(error, "code") ?? field(error, "status");
  const clientError = typeof code === "number" && code >= 400 && code < 500 && code !== 408 && code !== 429;
  return transportFailure(nonEmptyStringField(error, "message") ?? "openai-chat stream: error chunk", !clientError);
}

import type { FinishReason, Usage } from "../../contracts/provider.js";
import type { FinalizedResponse, FinalizedToolCall } from "../provider.js";
import type { FinalizationFailure, FinalizationResult, StreamFinalizerOptions } from "../stream-finalization.js";
import { countField, field, incompleteStream, nonEmptyStringField, recordField, stringField, transportFailure } from "../stream-finalization.js";
import { isRecord } from "../../util/json-value.js";
import { aiSdkErrorFailure } from "./ai-sdk-errors.js";

/**
 * Assembles the stream parts of an AI SDK language model (`LanguageModelV3StreamPart`, what
 * `model.doStream()` yields) into one finalized response. Pure: no I/O, no clock.
 */
export interface AiSdkFinalizer {
  /** Reads one stream part. After a failure further parts are ignored: the failure stands. */
  push(part: unknown): void;
  /** The failure so far, if any — the adapter may stop reading early. */
  readonly failure: FinalizationFailure | undefined;
  /** Finalizes. Calling it again returns the same result. */
  finish(): FinalizationResult;
}

/**
 * One part of the assistant message as the model produced it, in stream order: what the AI SDK's
 * own loop sends back on the next request (reasoning with its `providerMetadata`, text with its
 * metadata, each tool call with its metadata), recorded in `turn.provider.responded`'s `echo` as
 * `{ parts }`. A tool call is named by its index among the response's calls: its ID, name and
 * arguments are recorded once, in `toolCalls`, and its ID may be normalized (docs/providers.md).
 */
export type AiSdkEchoPart =
  | { type: "reasoning"; text: string; providerMetadata?: Record<string, unknown> }
  | { type: "text"; text: string; providerMetadata?: Record<string, unknown> }
  | { type: "tool-call"; call: number; providerMetadata?: Record<string, unknown> };

type OpenPart = { type: "reasoning" | "text"; text: string; providerMetadata?: Record<string, unknown> };

const FINISH_REASONS: ReadonlyMap<string, FinishReason> = new Map([
  ["stop", "stop"],
  ["tool-calls", "tool_calls"],
  ["length", "length"],
  ["content-filter", "content_filter"],
  ["other", "unknown"],
]);

/**
 * An incremental finalizer for one AI SDK model stream (docs/providers.md, "The AI SDK bridge").
 *
 * - `text-delta`s are the visible text (each piece also goes to `onText`); `reasoning-*` parts are
 *   never visible. Text and reasoning parts are kept in order, each with the last
 *   `providerMetadata` its start, deltas or end carried (as the AI SDK keeps it).
 * - A tool call is finished when its `tool-call` part arrives (`input` is the JSON text, kept
 *   verbatim). A call started (`tool-input-start` / `-delta`) and never finished is never
 *   surfaced: under a `length` finish the stream is a `truncated-tool-calls` failure (retried once,
 *   then refused, like a finished call cut by the limit), otherwise an `incomplete-stream` failure.
 *   Calls the provider ran itself (`providerExecuted`) are not turnlog's to run and are left out.
 * - The `finish` part finalizes: its unified reason maps onto turnlog's (`other` → `unknown`;
 *   `error` is a retryable `transport` failure), its usage totals onto `inputTokens` /
 *   `outputTokens`. A stream without one is an `incomplete-stream` failure.
 * - An `error` part is a `transport` failure (retryable unless the error says otherwise); a part
 *   that is not an object is a `transport` failure. Other part types are ignored.
 * - The echo (`{ parts }`, see `AiSdkEchoPart`) is kept when there is anything a provider needs
 *   back: a reasoning part, or a part with `providerMetadata`. The provider's ciphertext in that
 *   metadata (`ciphertextKeys`) is named in `echoCiphertext`.
 *
 * @example
 * const finalizer = createAiSdkFinalizer({ onText: (text) => process.stdout.write(text) });
 * for await (const part of result.stream) finalizer.push(part);
 * const outcome = finalizer.finish();
 */
export function createAiSdkFinalizer(options: StreamFinalizerOptions = {}): AiSdkFinalizer {
  const { onText } = options;
  let content = "";
  // Every part in order; tool calls by their index in `calls`.
  const parts: (OpenPart | { type: "tool-call"; call: number; providerMetadata?: Record<string, unknown> })[] = [];
  // Keyed by the stream's part IDs in Maps: they come from the model's server, never a prototype key.
  const open = new Map<string, OpenPart>();
  const calls: FinalizedToolCall[] = [];
  const started = new Set<string>();
  const finished = new Set<string>();
  let finishReason: FinishReason | undefined;
  let finishedWithError = false;
  let usage: Usage | undefined;
  let failure: FinalizationFailure | undefined;
  let result: FinalizationResult | undefined;

  /**
   * The open part of a type and stream ID: a start opens a new one (a provider may reuse an ID
   * after its end), a delta or end without a start opens one too (read leniently), an end closes it.
   */
  function openPart(type: OpenPart["type"], id: string, moment: "start" | "delta" | "end"): OpenPart {
    const key = `${type}\u0000${id}`;
    let part = moment === "start" ? undefined : open.get(key);
    if (part === undefined) {
      part = { type, text: "" };
      open.set(key, part);
      parts.push(part);
    }
    if (moment === "end") open.delete(key);
    return part;
  }

  function keepMetadata(part: OpenPart, record: Record<string, unknown>): void {
    const metadata = recordField(record, "providerMetadata");
    if (metadata !== undefined) part.providerMetadata = metadata;
  }

  function readToolCall(record: Record<string, unknown>): void {
    const id = nonEmptyStringField(record, "toolCallId");
    if (id !== undefined) finished.add(id);
    if (field(record, "providerExecuted") === true) return;
    const name = nonEmptyStringField(record, "toolName");
    const input = field(record, "input");
    const call: FinalizedToolCall = {
      ...(id !== undefined ? { id } : {}),
      ...(name !== undefined ? { name } : {}),
      // The V3 interface says JSON text; a provider that sends the object itself is read leniently.
      arguments: typeof input === "string" ? input : input === undefined ? "" : (JSON.stringify(input) ?? ""),
    };
    calls.push(call);
    const metadata = recordField(record, "providerMetadata");
    parts.push({ type: "tool-call", call: calls.length - 1, ...(metadata !== undefined ? { providerMetadata: metadata } : {}) });
  }

  function readFinish(record: Record<string, unknown>): void {
    const reason = field(record, "finishReason");
    // V3 reports `{ unified, raw }`; a V2-shaped plain string is read the same way.
    const unified = typeof reason === "string" ? reason : isRecord(reason) ? stringField(reason, "unified") : undefined;
    if (unified === "error") finishedWithError = true;
    finishReason = unified === undefined ? "unknown" : (FINISH_REASONS.get(unified) ?? "unknown");
    const reported = recordField(record, "usage");
    if (reported !== undefined) {
      const inputTokens = totalOf(reported, "inputTokens");
      const outputTokens = totalOf(reported, "outputTokens");
      if (inputTokens !== undefined || outputTokens !== undefined) {
        usage = { ...(inputTokens !== undefined ? { inputTokens } : {}), ...(outputTokens !== undefined ? { outputTokens } : {}) };
      }
    }
  }

  function readPart(record: Record<string, unknown>): void {
    const type = stringField(record, "type");
    const id = stringField(record, "id") ?? "";
    switch (type) {
      case "text-start":
        keepMetadata(openPart("text", id, "start"), record);
        return;
      case "text-end":
        keepMetadata(openPart("text", id, "end"), record);
        return;
      case "text-delta": {
        const part = openPart("text", id, "delta");
        const delta = stringField(record, "delta") ?? "";
        part.text += delta;
        keepMetadata(part, record);
        if (delta !== "") {
          content += delta;
          onText?.(delta);
        }
        return;
      }
      case "reasoning-start":
        keepMetadata(openPart("reasoning", id, "start"), record);
        return;
      case "reasoning-end":
        keepMetadata(openPart("reasoning", id, "end"), record);
        return;
      case "reasoning-delta": {
        const part = openPart("reasoning", id, "delta");
        part.text += stringField(record, "delta") ?? "";
        keepMetadata(part, record);
        return;
      }
      case "tool-input-start":
      case "tool-input-delta":
        if (field(record, "providerExecuted") !== true) started.add(id);
        else finished.add(id);
        return;
      case "tool-call":
        readToolCall(record);
        return;
      case "finish":
        readFinish(record);
        return;
      case "error":
        failure = aiSdkErrorFailure(field(record, "error"), "stream error");
        return;
      default:
      // stream-start, response-metadata, tool-input-end, tool-result, source, file, raw, and
      // part types yet to be invented carry nothing turnlog needs.
    }
  }

  function finalize(): FinalizationResult {
    if (failure !== undefined) return failure;
    const unfinished = [...started].filter((id) => !finished.has(id));
    if (finishReason === undefined) return incompleteStream(`ai-sdk stream: ended without a finish part${calls.length + unfinished.length > 0 ? ", inside tool calls" : ""}`);
    if (finishedWithError) return transportFailure("ai-sdk stream: the model stopped because of an error (finish reason \"error\")", true);
    if (unfinished.length > 0) {
      if (finishReason === "length") {
        return { ok: false, kind: "truncated-tool-calls", retryable: true, message: `ai-sdk stream: the response hit the length limit inside ${unfinished.length} unfinished tool call(s); they were discarded` };
      }
      return incompleteStream(`ai-sdk stream: ${unfinished.length} tool call(s) started and never finished`);
    }
    const response: FinalizedResponse = { content, toolCalls: calls, finishReason };
    if (usage !== undefined) response.usage = usage;
    const echo = echoParts(parts);
    if (echo !== undefined) {
      response.echo = { parts: echo };
      const ciphertext = echo.flatMap((part) => ciphertextIn(part.providerMetadata));
      if (ciphertext.length > 0) response.echoCiphertext = ciphertext;
    }
    return { ok: true, response };
  }

  return {
    push(part) {
      if (result !== undefined) throw new TypeError("ai-sdk finalizer: push after finish");
      if (failure !== undefined) return;
      if (!isRecord(part)) failure = transportFailure("ai-sdk stream: a part that is not an object", true);
      else readPart(part);
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
 * Finalizes a whole AI SDK stream at once; see `createAiSdkFinalizer`. Returns a result rather than
 * throwing; `unwrapFinalization` turns a failure into a `ProviderError`.
 *
 * @example
 * finalizeAiSdkStreamParts([
 *   { type: "text-start", id: "0" },
 *   { type: "text-delta", id: "0", delta: "hi" },
 *   { type: "text-end", id: "0" },
 *   { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
 * ]) // { ok: true, response: { content: "hi", toolCalls: [], finishReason: "stop", usage: … } }
 */
export function finalizeAiSdkStreamParts(parts: Iterable<unknown>, options: StreamFinalizerOptions = {}): FinalizationResult {
  const finalizer = createAiSdkFinalizer(options);
  for (const part of parts) {
    finalizer.push(part);
    if (finalizer.failure !== undefined) break;
  }
  return finalizer.finish();
}

/** `usage[key].total` (V3), or `usage[key]` when it is a plain count (V2). */
function totalOf(usage: Record<string, unknown>, key: string): number | undefined {
  const value = recordField(usage, key);
  return value !== undefined ? countField(value, "total") : countField(usage, key);
}

/**
 * The `providerMetadata` fields (under each provider's name) that hold the provider's ciphertext:
 * OpenAI's encrypted reasoning, Anthropic's and Bedrock's thinking signatures and redacted
 * thinking, Google's thought signatures — as @ai-sdk/openai, anthropic, amazon-bedrock and google
 * 3.x name them.
 */
const ciphertextKeys: ReadonlySet<string> = new Set(["reasoningEncryptedContent", "encryptedContent", "signature", "thoughtSignature", "redactedData"]);

/** The ciphertext strings in one part's `providerMetadata` (`{ [provider]: { [key]: value } }`). */
function ciphertextIn(metadata: Record<string, unknown> | undefined): string[] {
  if (metadata === undefined) return [];
  return Object.values(metadata).flatMap((fields) =>
    isRecord(fields) ? Object.entries(fields).flatMap(([key, value]) => (ciphertextKeys.has(key) && typeof value === "string" && value !== "" ? [value] : [])) : [],
  );
}

/**
 * The echo's parts, or `undefined` when nothing in them needs sending back. Empty text parts are
 * left out, as the AI SDK leaves them out of its response messages; reasoning parts stay even when
 * empty (an OpenAI reasoning item may carry only its encrypted content).
 */
function echoParts(parts: readonly (OpenPart | { type: "tool-call"; call: number; providerMetadata?: Record<string, unknown> })[]): AiSdkEchoPart[] | undefined {
  const kept = parts.filter((part) => !(part.type === "text" && part.text === ""));
  if (!kept.some((part) => part.type === "reasoning" || part.providerMetadata !== undefined)) return undefined;
  return kept.map((part): AiSdkEchoPart => {
    const metadata = part.providerMetadata !== undefined ? { providerMetadata: part.providerMetadata } : {};
    return part.type === "tool-call" ? { type: "tool-call", call: part.call, ...metadata } : { type: part.type, text: part.text, ...metadata };
  });
}

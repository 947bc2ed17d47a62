import type { Usage } from "../contracts/provider.js";
import type { FinalizedResponse } from "./provider.js";
import { ProviderError } from "../errors/provider-error.js";
import { isRecord } from "../util/json-value.js";

/**
 * Why a stream could not be finalized. `truncated-tool-calls`: the stream hit the length limit inside a
 * tool call it never finished (a format whose stream says which calls finished, docs/providers.md);
 * the loop retries it once, then refuses, as it does a finished call cut by the limit.
 */
export type FinalizationFailureKind = "incomplete-stream" | "transport" | "truncated-tool-calls";

/**
 * A stream that did not finalize: it broke off, left tool fragments without final metadata, sent
 * an unreadable chunk, or reported an error in-band. Its tool fragments are never surfaced.
 */
export interface FinalizationFailure {
  ok: false;
  kind: FinalizationFailureKind;
  retryable: boolean;
  message: string;
}

/**
 * The outcome of finalizing one provider stream: the finalized response, or why there is none.
 *
 * @example
 * const result = finalizeOpenAiChatChunks(chunks, { sawDone: true });
 * if (result.ok) console.log(result.response.toolCalls);
 * else console.log(result.kind, result.message); // "incomplete-stream", "…"
 */
export type FinalizationResult = { ok: true; response: FinalizedResponse } | FinalizationFailure;

/** Options shared by the stream finalizers. */
export interface StreamFinalizerOptions {
  /** Called with each visible text delta as it is read (never with reasoning or thinking text). */
  onText?: (text: string) => void;
}

/**
 * The `ProviderError` a failed finalization becomes, with the failure's kind, retryability and
 * message — what a streaming adapter throws so the turn records `turn.provider.failed`.
 *
 * @example
 * const result = finalizeAnthropicMessagesEvents(events);
 * if (!result.ok) throw asProviderError(result); // kind "incomplete-stream", retryable true
 */
export function asProviderError(failure: FinalizationFailure): ProviderError {
  return new ProviderError({ kind: failure.kind, retryable: failure.retryable, message: failure.message });
}

/**
 * The finalized response of a successful finalization; throws `asProviderError(result)` otherwise.
 *
 * @example
 * const response = unwrapFinalization(finalizeOpenAiChatChunks(chunks, { sawDone }));
 */
export function unwrapFinalization(result: FinalizationResult): FinalizedResponse {
  if (!result.ok) throw asProviderError(result);
  return result.response;
}

/** An `incomplete-stream` failure: always retryable, since asking again may well succeed. */
export function incompleteStream(message: string): FinalizationFailure {
  return { ok: false, kind: "incomplete-stream", retryable: true, message };
}

/** A `transport` failure (unreadable chunk, in-band error event). */
export function transportFailure(message: string, retryable: boolean): FinalizationFailure {
  return { ok: false, kind: "transport", retryable, message };
}

/**
 * An own property of a chunk. Provider payloads never reach a prototype: a chunk that lacks a
 * field reads as `undefined` even if `Object.prototype` was tampered with.
 */
export function field(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A string field, or `undefined` when absent, `null` or of another type. */
export function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = field(record, key);
  return typeof value === "string" ? value : undefined;
}

/** A string field that carries something: empty strings count as not sent. */
export function nonEmptyStringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = stringField(record, key);
  return value === undefined || value === "" ? undefined : value;
}

/** An object field, or `undefined`. */
export function recordField(record: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const value = field(record, key);
  return isRecord(value) ? value : undefined;
}

/** A non-negative integer field (an index or a token count), or `undefined`. */
export function countField(record: Record<string, unknown>, key: string): number | undefined {
  const value = field(record, key);
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** Merges the token counts one chunk reports into what earlier chunks reported (later wins). */
export function mergeUsage(usage: Usage | undefined, inputTokens: number | undefined, outputTokens: number | undefined): Usage | undefined {
  if (inputTokens === undefined && outputTokens === undefined) return usage;
  const merged: Usage = { ...usage };
  if (inputTokens !== undefined) merged.inputTokens = inputTokens;
  if (outputTokens !== undefined) merged.outputTokens = outputTokens;
  return merged;
}

import { ProviderRespondedSchema, type EventOf } from "../contracts/events.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { FinalizedResponse } from "../providers/provider.js";
import type { z } from "zod";
import { wellFormedJsonText, wellFormedText, wellFormedValue } from "../util/well-formed-text.js";
import { describeThrown, isRecord } from "../util/json-value.js";

/**
 * The largest provider replay echo (as JSON text) kept for native replay: the bound of a stored
 * tool output, since a turn's thinking text or encrypted reasoning under a large budget (64 000
 * tokens is some 250 000 characters) must come back whole or the turn goes flat.
 */
export const maxEchoChars = 1_000_000;

/** What a provider's finalized response is recorded as. */
export interface ResponseEvent {
  /** `turn.provider.responded`, or `turn.provider.failed` for a response that cannot be used. */
  event: EventOf<"turn.provider.responded"> | EventOf<"turn.provider.failed">;
  /**
   * The real argument text of each call whose logged arguments were redacted, by call index: kept
   * in memory only (the runtime's `SecretVault`), so the call can be planned and run with it.
   */
  secretArguments: Map<number, string>;
}

/**
 * The event a finalized provider response becomes, for the attempt `turn` (its turn and attempt
 * number). Pure; every path through it ends in an event:
 * - tool calls cut off by the length limit (`finishReason: "length"` with calls) are never
 *   executed and their partial arguments are written nowhere: a failed, retryable attempt of kind
 *   `truncated-tool-calls`;
 * - secrets never reach the log: arguments, IDs, names and text are redacted, and the real text
 *   of redacted arguments is returned in `secretArguments`;
 * - the echo (the provider's own replay data) is kept only where it can be replayed: never beside
 *   redacted arguments, never past `maxEchoChars`, never holding a secret in anything but the
 *   provider's own ciphertext (`echoCiphertext`) — what was dropped, and why, is recorded;
 * - a response that does not fit the event catalogue is the provider's failure (kind `transport`,
 *   retryable), not the loop's crash;
 * - lone UTF-16 surrogates in text, IDs, names, arguments (raw or as JSON `\\uD800` escapes) and
 *   the echo become U+FFFD (src/util/well-formed-text.ts): the log cannot hash them, and half an
 *   emoji is no reason to lose the rest of the response.
 */
export function responseEvent(turn: { turnId: string; attempt: number }, response: FinalizedResponse, redactor: SecretRedactor): ResponseEvent {
  const failed = (kind: "truncated-tool-calls" | "transport", message: string): ResponseEvent => ({
    event: { type: "turn.provider.failed", data: { turnId: turn.turnId, attempt: turn.attempt, kind, retryable: true, message: redactor.redactText(message).text } },
    secretArguments: new Map(),
  });
  try {
    return recordResponse(turn, response, redactor, failed);
  } catch (error) {
    // A provider (a host's own adapter, untyped JavaScript) can resolve with anything: a value
    // that is not a FinalizedResponse at all (a number for text) is its failure too.
    return failed("transport", wellFormedText(describeThrown(error)));
  }
}

function recordResponse(
  turn: { turnId: string; attempt: number },
  response: FinalizedResponse,
  redactor: SecretRedactor,
  failed: (kind: "truncated-tool-calls" | "transport", message: string) => ResponseEvent,
): ResponseEvent {
  const secretArguments = new Map<number, string>();
  if (response.finishReason === "length" && response.toolCalls.length > 0) {
    return failed("truncated-tool-calls", `the response hit the length limit inside ${response.toolCalls.length} tool call(s); they were discarded`);
  }
  const toolCalls = response.toolCalls.map((call, index) => {
    const argumentsText = wellFormedJsonText(call.arguments);
    const redacted = redactor.redactJsonText(argumentsText);
    if (redacted.redacted) secretArguments.set(index, argumentsText);
    return {
      index,
      // A model can put anything in an ID or a tool name, a key it saw included.
      ...(call.id !== undefined ? { id: redactor.redactText(wellFormedText(call.id)).text } : {}),
      ...(call.name !== undefined ? { name: redactor.redactText(wellFormedText(call.name)).text } : {}),
      argumentsText: redacted.text,
      ...(redacted.redacted ? { argumentsRedacted: true } : {}),
    };
  });
  const data: z.input<typeof ProviderRespondedSchema>["data"] = {
    turnId: turn.turnId,
    attempt: turn.attempt,
    content: redactor.redactText(wellFormedText(response.content)).text,
    toolCalls,
    finishReason: response.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
  };
  if (response.usage !== undefined) data.usage = response.usage;
  if (response.echo !== undefined) {
    const echo = wellFormedValue(response.echo);
    const echoText = JSON.stringify(echo) ?? "";
    if (toolCalls.some((call) => call.argumentsRedacted)) data.echoDropped = "unsafe_arguments";
    else if (echoText.length > maxEchoChars) data.echoDropped = "echo_oversized";
    else if (redactor.containsSecret(readableEcho(echo, response.echoCiphertext))) data.echoDropped = "echo_secret";
    else data.echo = echo;
  }
  const parsed = ProviderRespondedSchema.safeParse({ type: "turn.provider.responded", data });
  if (!parsed.success) return failed("transport", parsed.error.message);
  return { event: parsed.data, secretArguments };
}

/**
 * The echo as its secret scan reads it: each of the provider's ciphertext strings blanked, since
 * random base64 is no text the model wrote (docs/security.md, "Provider ciphertext").
 */
function readableEcho(echo: unknown, ciphertext: readonly string[] | undefined): unknown {
  if (ciphertext === undefined || ciphertext.length === 0) return echo;
  const opaque = new Set(ciphertext);
  const blank = (value: unknown): unknown => {
    if (typeof value === "string") return opaque.has(value) ? "" : value;
    if (Array.isArray(value)) return value.map(blank);
    if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, blank(inner)]));
    return value;
  };
  return blank(echo);
}

import { summaryUnitText } from "../../history/history-compressor.js";
import type { SerializedCountKey } from "../../history/history-diagnostics.js";
import type { HistoryUnit, ToolGroupUnit } from "../../history/history-units.js";
import {
  addToReport,
  cachedUnitSerialization,
  countRepair,
  echoFor,
  isBlank,
  newReport,
  type SerializationReport,
  type SerializeOptions,
  type TargetProvider,
  type UnitSerialization,
} from "../../history/serializers.js";
import { isRecord } from "../../util/json-value.js";

/*
 * The AI SDK's prompt (`LanguageModelV3Prompt` of @ai-sdk/provider), written as turnlog's own
 * structural types: the history and the registry are part of the root import, which must compile
 * and load without the SDK (an optional peer). The shapes are assignable to the SDK's
 * (ai-sdk-provider.ts hands them to `doStream` as they are).
 */

/** Provider options of a prompt part: per provider, what the provider needs back (`providerMetadata` as received). */
export type AiSdkProviderOptions = Record<string, Record<string, unknown>>;

/** A part of an assistant message of the AI SDK prompt, as turnlog writes them. */
export type AiSdkAssistantPart =
  | { type: "text"; text: string; providerOptions?: AiSdkProviderOptions }
  | { type: "reasoning"; text: string; providerOptions?: AiSdkProviderOptions }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: Record<string, unknown>; providerOptions?: AiSdkProviderOptions };

/** A tool result of the AI SDK prompt: its text, marked as an error when the call failed. */
export interface AiSdkToolResultPart {
  type: "tool-result";
  toolCallId: string;
  toolName: string;
  output: { type: "text" | "error-text"; value: string };
}

/** An AI SDK prompt message (`LanguageModelV3Message`), as turnlog writes them. */
export type AiSdkMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: { type: "text"; text: string }[] }
  | { role: "assistant"; content: AiSdkAssistantPart[] }
  | { role: "tool"; content: AiSdkToolResultPart[] };

export interface AiSdkSerialization {
  messages: AiSdkMessage[];
  report: SerializationReport;
}

/** Text sent in place of an empty user message, which some providers (Anthropic) reject. */
export const aiSdkEmptyUserText = "(empty message)";
/** Text sent in place of an empty tool result. */
export const aiSdkEmptyResultText = "(empty result)";

/**
 * Serializes history units, in order, as the AI SDK's prompt: an optional system message first; a
 * user message or summary as a `user` message with one text part; a final answer as an
 * `assistant` text part; a safe tool group as one `assistant` message and one `tool` message
 * with a `tool-result` per call, in call order (`error-text` for a call that failed); a flat
 * group as its assistant text and a `user` note. The assistant message of a tool group is the
 * recorded echo when the target is the provider it came from: its reasoning, text and tool-call
 * parts in the order the model produced them, each with the `providerMetadata` it carried sent
 * back as `providerOptions` — what the AI SDK's own loop would send (encrypted reasoning, thinking
 * signatures, thought signatures). Without an echo it is the text, then the calls. The AI SDK's
 * providers merge or split messages for their own APIs, so nothing is merged here; empty text,
 * which some of them reject, is replaced (user, tool result) or left out (assistant).
 *
 * @example
 * const { messages } = serializeAiSdk([...history, current], { system: "Be brief.", provider });
 */
export function serializeAiSdk(units: readonly HistoryUnit[], options: SerializeOptions = {}): AiSdkSerialization {
  const report = newReport();
  const messages: AiSdkMessage[] = options.system !== undefined ? [{ role: "system", content: options.system }] : [];
  for (const unit of units) {
    const serialized = aiSdkUnitSerialization(unit, options.provider);
    for (const message of serialized.messages) messages.push(message);
    addToReport(report, serialized);
  }
  return { messages, report };
}

/*
 * A unit's AI SDK messages are cached per unit object and target provider (`cachedUnitSerialization`).
 * They are shared between requests: nothing may change them (the adapter sends them as they are).
 */
const aiSdkCache = new WeakMap<HistoryUnit, Map<string, AiSdkUnitSerialization>>();

/** One unit serialized on its own for the AI SDK: its messages and what was repaired. */
export type AiSdkUnitSerialization = UnitSerialization<AiSdkMessage>;

/**
 * A unit's AI SDK prompt messages, as `serializeAiSdk` writes them (nothing is merged, so a
 * history's messages are its units' messages one after the other). Cached per unit and target;
 * shared: never change them.
 *
 * @example
 * aiSdkUnitSerialization({ kind: "user", position: 2, content: "hi" }, undefined).messages; // [{ role: "user", content: [{ type: "text", text: "hi" }] }]
 */
export function aiSdkUnitSerialization(unit: HistoryUnit, provider: TargetProvider | undefined): AiSdkUnitSerialization {
  return cachedUnitSerialization(aiSdkCache, unit, provider, aiSdkMessagesOf);
}

/**
 * Counts one AI SDK prompt message for `structured-tool-history-serialized`, from the message as
 * it is: its role, its tool calls and results (and failed ones), text and reasoning parts.
 *
 * @example
 * countAiSdkMessage({ role: "tool", content: [{ type: "tool-result", toolCallId: "a", toolName: "n", output: { type: "text", value: "ok" } }] }, count);
 */
export function countAiSdkMessage(message: unknown, count: (key: SerializedCountKey, by?: number) => void): void {
  // Read as a record: the count describes the message as it is, even one a serializer got wrong.
  const record = isRecord(message) ? message : {};
  const role = record.role;
  if (role === "system") count("system_messages");
  else if (role === "user") count("user_messages");
  else if (role === "assistant") count("assistant_messages");
  else if (role === "tool") count("tool_messages");
  if (!Array.isArray(record.content)) return;
  for (const part of record.content) {
    const fields = isRecord(part) ? part : {};
    if (fields.type === "text") count("text_blocks");
    else if (fields.type === "tool-call") count("tool_calls");
    else if (fields.type === "reasoning") count("reasoning_fields");
    else if (fields.type === "tool-result") {
      count("tool_results");
      if (isRecord(fields.output) && fields.output.type === "error-text") count("error_results");
    }
  }
}

function aiSdkMessagesOf(unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport): AiSdkMessage[] {
  switch (unit.kind) {
    case "user": {
      if (!isBlank(unit.content)) return [userText(unit.content)];
      countRepair(report, "empty_content");
      return [userText(aiSdkEmptyUserText)];
    }
    case "summary":
      return [userText(summaryUnitText(unit))];
    case "assistant":
      if (isBlank(unit.content)) {
        countRepair(report, "empty_content");
        return [];
      }
      return [{ role: "assistant", content: [{ type: "text", text: unit.content }] }];
    case "flat":
      return [...(isBlank(unit.content) ? [] : [{ role: "assistant" as const, content: [{ type: "text" as const, text: unit.content }] }]), userText(unit.note)];
    case "tool-group": {
      const echo = echoFor(unit, provider, report);
      const assistant = (echo === undefined ? undefined : echoedAssistant(unit, echo.value)) ?? plainAssistant(unit);
      const names = new Map(unit.calls.map((call) => [call.id, call.name]));
      const results: AiSdkToolResultPart[] = unit.results.map((result) => {
        const value = isBlank(result.content) ? (countRepair(report, "empty_content"), aiSdkEmptyResultText) : result.content;
        return { type: "tool-result", toolCallId: result.callId, toolName: names.get(result.callId) ?? "", output: { type: result.ok ? "text" : "error-text", value } };
      });
      return [
        { role: "assistant", content: assistant },
        { role: "tool", content: results },
      ];
    }
  }
}

function userText(text: string): AiSdkMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

/** A tool group's assistant parts without an echo: its text (if any), then its calls. */
function plainAssistant(unit: ToolGroupUnit): AiSdkAssistantPart[] {
  return [...(isBlank(unit.content) ? [] : [{ type: "text" as const, text: unit.content }]), ...unit.calls.map((call) => toolCallPart(unit, call))];
}

function toolCallPart(unit: ToolGroupUnit, call: ToolGroupUnit["calls"][number], providerOptions?: AiSdkProviderOptions): AiSdkAssistantPart {
  return { type: "tool-call", toolCallId: call.id, toolName: call.name, input: call.input, ...(providerOptions !== undefined ? { providerOptions } : {}) };
}

/**
 * A tool group's assistant parts from its recorded echo (`{ parts }`, ai-sdk-finalizer.ts), or
 * `undefined` when the echo does not describe this group — every call exactly once, text parts that
 * add up to the recorded text — in which case the group is sent without it.
 */
function echoedAssistant(unit: ToolGroupUnit, echo: Record<string, unknown>): AiSdkAssistantPart[] | undefined {
  const parts = echo.parts;
  if (!Array.isArray(parts)) return undefined;
  const seen = new Set<number>();
  let text = "";
  const assistant: AiSdkAssistantPart[] = [];
  for (const part of parts) {
    if (!isRecord(part)) return undefined;
    const providerOptions = optionsOf(part.providerMetadata);
    const options = providerOptions !== undefined ? { providerOptions } : {};
    if ((part.type === "text" || part.type === "reasoning") && typeof part.text === "string") {
      if (part.type === "text") text += part.text;
      assistant.push({ type: part.type, text: part.text, ...options });
    } else if (part.type === "tool-call" && typeof part.call === "number") {
      const call = unit.calls[part.call];
      if (call === undefined || seen.has(part.call)) return undefined;
      seen.add(part.call);
      assistant.push(toolCallPart(unit, call, providerOptions));
    } else {
      return undefined;
    }
  }
  if (seen.size !== unit.calls.length || text !== unit.content) return undefined;
  return assistant;
}

/** Recorded `providerMetadata` as prompt `providerOptions`: per provider, an object; anything else is not sent. */
function optionsOf(metadata: unknown): AiSdkProviderOptions | undefined {
  if (!isRecord(metadata)) return undefined;
  const entries = Object.entries(metadata).filter((entry): entry is [string, Record<string, unknown>] => isRecord(entry[1]));
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

import { summaryUnitText } from "../../history/history-compressor.js";
import type { SerializedCountKey } from "../../history/history-diagnostics.js";
import type { HistoryUnit } from "../../history/history-units.js";
import {
  addToReport,
  argumentsFor,
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

/** An OpenAI Chat Completions request message, as turnlog writes them. */
export type OpenAiChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: OpenAiToolCall[]; reasoning_content?: string }
  | { role: "tool"; tool_call_id: string; content: string };

export interface OpenAiToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface OpenAiChatSerialization {
  messages: OpenAiChatMessage[];
  report: SerializationReport;
}

/**
 * Serializes history units, in order, as OpenAI Chat Completions request messages: an optional
 * system message first; a user message or summary as a `user` message; a final answer as an
 * `assistant` message; a safe tool group as one assistant message with `tool_calls` (`content:
 * null` when it had no text) followed by exactly one `tool` message per call, in call order; a flat
 * group as its assistant text (if any) and then a `user` message with its note. The note is a user
 * message — not an assistant one — so the model never reads tool calls written as its own prose
 * (it would learn to imitate them instead of calling tools), and the results read as what the
 * environment reported. OpenAI accepts consecutive messages of one role, so nothing is merged.
 *
 * @example
 * const { messages } = serializeOpenAiChat([...history, current], { system: "Be brief." });
 */
export function serializeOpenAiChat(units: readonly HistoryUnit[], options: SerializeOptions = {}): OpenAiChatSerialization {
  const report = newReport();
  const messages: OpenAiChatMessage[] = options.system !== undefined ? [{ role: "system", content: options.system }] : [];
  for (const unit of units) {
    const serialized = openAiUnitSerialization(unit, options.provider);
    for (const message of serialized.messages) messages.push(message);
    addToReport(report, serialized);
  }
  return { messages, report };
}

/*
 * A unit's OpenAI messages are cached per unit object and target provider (`cachedUnitSerialization`).
 * The cached messages are shared between requests: nothing may change them (the OpenAI adapter
 * sends them as they are).
 */
const openAiCache = new WeakMap<HistoryUnit, Map<string, OpenAiUnitSerialization>>();

/** One unit serialized on its own for OpenAI Chat Completions: its messages and what was repaired. */
export type OpenAiUnitSerialization = UnitSerialization<OpenAiChatMessage>;

/**
 * A unit's OpenAI Chat Completions messages, as `serializeOpenAiChat` writes them (OpenAI merges
 * nothing, so a history's messages are its units' messages one after the other). Cached per unit
 * and target; shared: never change them.
 *
 * @example
 * openAiUnitSerialization({ kind: "user", position: 2, content: "hi" }, undefined).messages; // [{ role: "user", content: "hi" }]
 */
export function openAiUnitSerialization(unit: HistoryUnit, provider: TargetProvider | undefined): OpenAiUnitSerialization {
  return cachedUnitSerialization(openAiCache, unit, provider, openAiMessagesOf);
}

/**
 * Counts one OpenAI Chat message for `structured-tool-history-serialized`, from the message as it
 * is: its role (a `tool` message is a tool result), its `tool_calls`, its `reasoning_content`.
 *
 * @example
 * countOpenAiChatMessage({ role: "tool", tool_call_id: "call_a", content: "ok" }, count); // tool_messages, tool_results
 */
export function countOpenAiChatMessage(message: unknown, count: (key: SerializedCountKey, by?: number) => void): void {
  // Read as a record: the count describes the message as it is, even one a serializer got wrong.
  const record = (typeof message === "object" && message !== null ? message : {}) as Record<string, unknown>;
  const role = record.role;
  if (role === "system") count("system_messages");
  else if (role === "user") count("user_messages");
  else if (role === "assistant") count("assistant_messages");
  else if (role === "tool") {
    count("tool_messages");
    count("tool_results");
  }
  if (Array.isArray(record.tool_calls)) count("tool_calls", record.tool_calls.length);
  if (typeof record.reasoning_content === "string") count("reasoning_fields");
}

function openAiMessagesOf(unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport): OpenAiChatMessage[] {
  switch (unit.kind) {
    case "user":
      return [{ role: "user", content: unit.content }];
    case "summary":
      return [{ role: "user", content: summaryUnitText(unit) }];
    case "assistant":
      if (unit.content === "") {
        countRepair(report, "empty_content");
        return [];
      }
      return [{ role: "assistant", content: unit.content }];
    case "flat":
      return [...(isBlank(unit.content) ? [] : [{ role: "assistant" as const, content: unit.content }]), { role: "user", content: unit.note }];
    case "tool-group": {
      const echo = echoFor(unit, provider, report);
      const reasoning = echo?.value.reasoning_content;
      const assistant: OpenAiChatMessage = {
        role: "assistant",
        content: unit.content === "" ? null : unit.content,
        tool_calls: unit.calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: argumentsFor(call.argumentsText, report) } })),
        ...(typeof reasoning === "string" ? { reasoning_content: reasoning } : {}),
      };
      return [assistant, ...unit.results.map((result) => ({ role: "tool" as const, tool_call_id: result.callId, content: result.content }))];
    }
  }
}

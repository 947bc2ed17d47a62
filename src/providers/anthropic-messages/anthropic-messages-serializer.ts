import { summaryUnitText } from "../../history/history-compressor.js";
import type { SerializedCountKey } from "../../history/history-diagnostics.js";
import type { HistoryUnit } from "../../history/history-units.js";
import {
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

/** An Anthropic Messages content block, as turnlog writes them. */
export type AnthropicContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string; is_error?: true };

export interface AnthropicMessage {
  role: "user" | "assistant";
  content: AnthropicContentBlock[];
}

export interface AnthropicMessagesSerialization {
  system?: string;
  messages: AnthropicMessage[];
  report: SerializationReport;
}

/** Text sent in place of an empty user message, which Anthropic rejects. */
export const emptyUserText = "(empty message)";
/** Text sent in place of an empty tool result. */
export const emptyResultText = "(empty result)";
/** The user message put first when an Anthropic history would begin with the assistant. */
export const prefaceText = "(The earlier conversation is not shown.)";

/**
 * Serializes history units, in order, as Anthropic Messages: `system` apart; a user message or
 * summary as user text; a final answer as assistant text; a safe tool group as an assistant
 * message (thinking echo first, then text, then `tool_use` blocks with the parsed arguments) and
 * then one user message whose `tool_result` blocks (`is_error: true` for a result that is not ok)
 * come first; a flat group as its assistant text and a user note. Roles strictly alternate:
 * consecutive content of one role merges into one message (a user message after tool results
 * lands after the `tool_result` blocks). A history that would begin with the assistant gets a short
 * user preface. Empty text, which Anthropic rejects, is replaced or left out.
 *
 * @example
 * const { system, messages } = serializeAnthropicMessages([...history, current], { system: "Be brief." });
 */
export function serializeAnthropicMessages(units: readonly HistoryUnit[], options: SerializeOptions = {}): AnthropicMessagesSerialization {
  const report = newReport();
  const messages: AnthropicMessage[] = [];
  for (const unit of units) {
    for (const message of anthropicMessagesOf(unit, options.provider, report)) {
      const last = messages.at(-1);
      if (last?.role !== message.role) {
        messages.push(message);
        continue;
      }
      countRepair(report, "merged_consecutive_roles");
      // Thinking blocks must open an assistant message; after other content they cannot stay.
      const blocks = message.content.filter((block) => !isThinkingBlock(block));
      if (blocks.length < message.content.length) countRepair(report, "echo_stripped_on_merge");
      last.content.push(...blocks);
    }
  }
  if (messages[0]?.role === "assistant") {
    messages.unshift({ role: "user", content: [{ type: "text", text: prefaceText }] });
    countRepair(report, "inserted_preface");
  }
  return { ...(options.system !== undefined ? { system: options.system } : {}), messages, report };
}

/*
 * A unit's Anthropic messages, cached per unit and target (`cachedUnitSerialization`). Merging
 * consecutive roles happens after, between units, and never changes these (see `anthropicRun`).
 */
const anthropicCache = new WeakMap<HistoryUnit, Map<string, AnthropicUnitSerialization>>();

/** One unit serialized on its own for Anthropic Messages, before consecutive roles are merged. */
export type AnthropicUnitSerialization = UnitSerialization<AnthropicMessage>;

/**
 * A unit's Anthropic Messages messages, as `serializeAnthropicMessages` writes them before it
 * merges consecutive messages of one role. Cached per unit and target; shared: never change them.
 *
 * @example
 * anthropicUnitSerialization({ kind: "user", position: 2, content: "hi" }, undefined).messages; // [{ role: "user", content: [{ type: "text", text: "hi" }] }]
 */
export function anthropicUnitSerialization(unit: HistoryUnit, provider: TargetProvider | undefined): AnthropicUnitSerialization {
  return cachedUnitSerialization(anthropicCache, unit, provider, anthropicMessagesOf);
}

/**
 * The one message a run of consecutive messages of one role becomes in `serializeAnthropicMessages`:
 * the first as it is, each next one's blocks after it, without thinking blocks (they must open an
 * assistant message). Also how many were merged and how many lost thinking blocks. A run of one
 * is its message itself; a longer run is a new message (the run's messages are not changed).
 *
 * @example
 * anthropicRun([toolResults, userText]).message.content; // the tool_result blocks, then the text
 */
export function anthropicRun(messages: readonly AnthropicMessage[]): { message: AnthropicMessage; merged: number; echoStrippedOnMerge: number } {
  const first = messages[0];
  if (first === undefined) throw new TypeError("anthropicRun: a run has at least one message");
  if (messages.length === 1) return { message: first, merged: 0, echoStrippedOnMerge: 0 };
  const content = [...first.content];
  let echoStrippedOnMerge = 0;
  for (let index = 1; index < messages.length; index += 1) {
    const blocks = (messages[index] as AnthropicMessage).content;
    let stripped = false;
    for (const block of blocks) {
      if (isThinkingBlock(block)) stripped = true;
      else content.push(block);
    }
    if (stripped) echoStrippedOnMerge += 1;
  }
  return { message: { role: first.role, content }, merged: messages.length - 1, echoStrippedOnMerge };
}

/**
 * Counts one Anthropic message for `structured-tool-history-serialized`, from the message as it
 * is: its role and its blocks (text, `tool_use`, `tool_result` and their errors, thinking).
 *
 * @example
 * countAnthropicMessage({ role: "assistant", content: [{ type: "tool_use", id: "a", name: "n", input: {} }] }, count); // assistant_messages, tool_calls
 */
export function countAnthropicMessage(message: unknown, count: (key: SerializedCountKey, by?: number) => void): void {
  // Read as a record: the count describes the message as it is, even one a serializer got wrong.
  const record = (typeof message === "object" && message !== null ? message : {}) as Record<string, unknown>;
  const role = record.role;
  if (role === "user") count("user_messages");
  else if (role === "assistant") count("assistant_messages");
  if (!Array.isArray(record.content)) return;
  for (const block of record.content) {
    const fields = (typeof block === "object" && block !== null ? block : {}) as Record<string, unknown>;
    const type = fields.type;
    if (type === "text") count("text_blocks");
    else if (type === "tool_use") count("tool_calls");
    else if (type === "tool_result") {
      count("tool_results");
      if (fields.is_error === true) count("error_results");
    } else if (type === "thinking" || type === "redacted_thinking") count("thinking_blocks");
  }
}

function anthropicMessagesOf(unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport): AnthropicMessage[] {
  switch (unit.kind) {
    case "user": {
      if (!isBlank(unit.content)) return [userText(unit.content)];
      countRepair(report, "empty_content");
      return [userText(emptyUserText)];
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
      const thinking = echo === undefined ? [] : thinkingBlocks(echo.value.thinking);
      const assistant: AnthropicContentBlock[] = [
        ...thinking,
        ...(isBlank(unit.content) ? [] : [{ type: "text" as const, text: unit.content }]),
        ...unit.calls.map((call) => ({ type: "tool_use" as const, id: call.id, name: call.name, input: call.input })),
      ];
      const results: AnthropicContentBlock[] = unit.results.map((result) => {
        const content = isBlank(result.content) ? (countRepair(report, "empty_content"), emptyResultText) : result.content;
        return { type: "tool_result", tool_use_id: result.callId, content, ...(result.ok ? {} : { is_error: true as const }) };
      });
      return [
        { role: "assistant", content: assistant },
        { role: "user", content: results },
      ];
    }
  }
}

function isThinkingBlock(block: AnthropicContentBlock): boolean {
  return block.type === "thinking" || block.type === "redacted_thinking";
}

function userText(text: string): AnthropicMessage {
  return { role: "user", content: [{ type: "text", text }] };
}

/** Anthropic thinking blocks from an echo, exactly as received; anything else in it is not sent. */
function thinkingBlocks(value: unknown): AnthropicContentBlock[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((block: unknown): AnthropicContentBlock[] => {
    if (typeof block !== "object" || block === null) return [];
    const record = block as Record<string, unknown>;
    if (record.type === "thinking" && typeof record.thinking === "string" && typeof record.signature === "string") {
      return [{ type: "thinking", thinking: record.thinking, signature: record.signature }];
    }
    if (record.type === "redacted_thinking" && typeof record.data === "string") return [{ type: "redacted_thinking", data: record.data }];
    return [];
  });
}

import type { ProviderFormat } from "../contracts/provider.js";
import { summaryUnitText } from "./history-compressor.js";
import type { HistoryEcho, HistoryUnit, ToolGroupUnit } from "./history-units.js";

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

/** The provider a request is for: an echo is replayed only to the provider and format it came from. */
export interface TargetProvider {
  id: string;
  format: ProviderFormat;
}

export interface SerializeOptions {
  /** System text: OpenAI's first message; Anthropic's `system` field. */
  system?: string;
  /** Where the request goes. Without it, no echo is replayed. */
  provider?: TargetProvider;
}

/** What a serializer changed to make the output valid (reason enums, for diagnostics). */
export type RepairReason =
  /** Anthropic: consecutive content of one role merged into one message. */
  | "merged_consecutive_roles"
  /** Anthropic: a short user message put first because the history began with the assistant. */
  | "inserted_preface"
  /** Empty text that a provider rejects was replaced (user, tool result) or left out (assistant). */
  | "empty_content"
  /** Blank arguments sent as `{}` (how the planner read them). */
  | "empty_arguments"
  /** Anthropic: thinking blocks left out of an assistant message merged after other assistant content. */
  | "echo_stripped_on_merge"
  /** A tool result whose call is in no group was not sent. */
  | "orphan_result_dropped"
  /** A second result for the same call was not sent. */
  | "duplicate_result_dropped";

export interface SerializationReport {
  repairs: Partial<Record<RepairReason, number>>;
  /** Safe groups whose echo was left out because the target is another provider or format. */
  echoStripped: number;
}

export interface OpenAiChatSerialization {
  messages: OpenAiChatMessage[];
  report: SerializationReport;
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
    for (const [reason, times] of serialized.repairs) report.repairs[reason] = (report.repairs[reason] ?? 0) + times;
    report.echoStripped += serialized.echoStripped;
  }
  return { messages, report };
}

/*
 * A unit's OpenAI messages are cached per unit object and target provider (units are cached per
 * message, see history-units): a request built after one more turn serializes only the units
 * that changed, instead of writing every call of the session again. The same unit always gives
 * the same messages and repairs, so the cache changes no result. The cached messages are shared
 * between requests: nothing may change them (the OpenAI adapter sends them as they are).
 */
const openAiCache = new WeakMap<HistoryUnit, Map<string, OpenAiUnitSerialization>>();

/** One unit serialized on its own for one provider format: its messages and what was repaired. */
interface UnitSerialization<Message> {
  readonly messages: readonly Message[];
  readonly repairs: readonly (readonly [RepairReason, number])[];
  readonly echoStripped: number;
}

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

/** A unit's serialization for one target from `cache`, made by `messagesOf` the first time. */
function cachedUnitSerialization<Message>(
  cache: WeakMap<HistoryUnit, Map<string, UnitSerialization<Message>>>,
  unit: HistoryUnit,
  provider: TargetProvider | undefined,
  messagesOf: (unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport) => readonly Message[],
): UnitSerialization<Message> {
  const key = provider === undefined ? "" : `${provider.id}\u0000${provider.format}`;
  let byProvider = cache.get(unit);
  const cached = byProvider?.get(key);
  if (cached !== undefined) return cached;
  const report = newReport();
  const messages = messagesOf(unit, provider, report);
  const entry = { messages, repairs: Object.entries(report.repairs) as [RepairReason, number][], echoStripped: report.echoStripped };
  if (byProvider === undefined) {
    byProvider = new Map();
    cache.set(unit, byProvider);
  }
  byProvider.set(key, entry);
  return entry;
}

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
      count(report, "merged_consecutive_roles");
      // Thinking blocks must open an assistant message; after other content they cannot stay.
      const blocks = message.content.filter((block) => !isThinkingBlock(block));
      if (blocks.length < message.content.length) count(report, "echo_stripped_on_merge");
      last.content.push(...blocks);
    }
  }
  if (messages[0]?.role === "assistant") {
    messages.unshift({ role: "user", content: [{ type: "text", text: prefaceText }] });
    count(report, "inserted_preface");
  }
  return { ...(options.system !== undefined ? { system: options.system } : {}), messages, report };
}

/*
 * A unit's Anthropic messages, cached like its OpenAI ones. Merging consecutive roles happens
 * after, between units, and never changes these (see `anthropicRun`).
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
 * The messages one unit becomes on its own, in a format (for token estimates: no merging, no
 * preface, no report).
 *
 * @example
 * unitMessages({ kind: "user", position: 2, content: "hi" }, "anthropic-messages"); // [{ role: "user", content: [{ type: "text", text: "hi" }] }]
 */
export function unitMessages(unit: HistoryUnit, format: ProviderFormat, provider?: TargetProvider): (OpenAiChatMessage | AnthropicMessage)[] {
  return format === "openai-chat" ? openAiMessagesOf(unit, provider, newReport()) : anthropicMessagesOf(unit, provider, newReport());
}

function openAiMessagesOf(unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport): OpenAiChatMessage[] {
  switch (unit.kind) {
    case "user":
      return [{ role: "user", content: unit.content }];
    case "summary":
      return [{ role: "user", content: summaryUnitText(unit) }];
    case "assistant":
      if (unit.content === "") {
        count(report, "empty_content");
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

function anthropicMessagesOf(unit: HistoryUnit, provider: TargetProvider | undefined, report: SerializationReport): AnthropicMessage[] {
  switch (unit.kind) {
    case "user": {
      if (!isBlank(unit.content)) return [userText(unit.content)];
      count(report, "empty_content");
      return [userText(emptyUserText)];
    }
    case "summary":
      return [userText(summaryUnitText(unit))];
    case "assistant":
      if (isBlank(unit.content)) {
        count(report, "empty_content");
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
        const content = isBlank(result.content) ? (count(report, "empty_content"), emptyResultText) : result.content;
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

/** The group's echo when the target is the provider and format it came from; otherwise none. */
function echoFor(unit: ToolGroupUnit, provider: TargetProvider | undefined, report: SerializationReport): HistoryEcho | undefined {
  const echo = unit.echo;
  if (echo === undefined) return undefined;
  if (provider !== undefined && provider.id === echo.source.id && provider.format === echo.source.format) return echo;
  report.echoStripped += 1;
  return undefined;
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

function argumentsFor(argumentsText: string, report: SerializationReport): string {
  if (argumentsText.trim() !== "") return argumentsText;
  count(report, "empty_arguments");
  return "{}";
}

function isBlank(text: string): boolean {
  return text.trim() === "";
}

function newReport(): SerializationReport {
  return { repairs: {}, echoStripped: 0 };
}

function count(report: SerializationReport, reason: RepairReason): void {
  report.repairs[reason] = (report.repairs[reason] ?? 0) + 1;
}

import type { ProviderFormat } from "../contracts/provider.js";
import type { HistoryEcho, HistoryUnit, ToolGroupUnit } from "./history-units.js";

/*
 * What every format's serializer shares (docs/providers.md, "Adding a provider format"): the
 * target a request is for, the report of what was repaired, the per-unit cache, the echo rule and
 * the small repairs both formats make. The message shapes themselves are each format's own, in
 * the format's folder under src/providers/ (src/providers/openai-chat/, src/providers/anthropic-messages/).
 */

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

/** One unit serialized on its own for one provider format: its messages and what was repaired. */
export interface UnitSerialization<Message> {
  readonly messages: readonly Message[];
  readonly repairs: readonly (readonly [RepairReason, number])[];
  readonly echoStripped: number;
}

/**
 * A unit's serialization for one target from `cache`, made by `messagesOf` the first time. Units
 * are cached per message (see history-units), so a request built after one more turn serializes
 * only the units that changed. The same unit always gives the same messages and repairs, so the
 * cache changes no result. The cached messages are shared between requests: nothing may change them.
 *
 * @example
 * const cache = new WeakMap<HistoryUnit, Map<string, UnitSerialization<MyMessage>>>();
 * cachedUnitSerialization(cache, unit, provider, myMessagesOf).messages;
 */
export function cachedUnitSerialization<Message>(
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
 * Adds one unit's repairs and stripped echoes to a whole history's report.
 *
 * @example
 * for (const unit of units) addToReport(report, openAiUnitSerialization(unit, provider));
 */
export function addToReport(report: SerializationReport, serialized: UnitSerialization<unknown>): void {
  for (const [reason, times] of serialized.repairs) report.repairs[reason] = (report.repairs[reason] ?? 0) + times;
  report.echoStripped += serialized.echoStripped;
}

/**
 * The group's echo when the target is the provider and format it came from; otherwise none (and
 * the report counts a stripped echo).
 *
 * @example
 * const reasoning = echoFor(unit, provider, report)?.value.reasoning_content;
 */
export function echoFor(unit: ToolGroupUnit, provider: TargetProvider | undefined, report: SerializationReport): HistoryEcho | undefined {
  const echo = unit.echo;
  if (echo === undefined) return undefined;
  if (provider !== undefined && provider.id === echo.source.id && provider.format === echo.source.format) return echo;
  report.echoStripped += 1;
  return undefined;
}

/**
 * A call's arguments as sent: blank arguments go as `{}` (how the planner read them), counted as a repair.
 *
 * @example
 * argumentsFor("  ", report); // "{}"
 */
export function argumentsFor(argumentsText: string, report: SerializationReport): string {
  if (argumentsText.trim() !== "") return argumentsText;
  countRepair(report, "empty_arguments");
  return "{}";
}

/**
 * True for text that is empty or only white space.
 *
 * @example
 * isBlank(" \n"); // true
 */
export function isBlank(text: string): boolean {
  return text.trim() === "";
}

/**
 * A report of nothing repaired.
 *
 * @example
 * const report = newReport();
 */
export function newReport(): SerializationReport {
  return { repairs: {}, echoStripped: 0 };
}

/**
 * Counts one repair in a report.
 *
 * @example
 * countRepair(report, "empty_content");
 */
export function countRepair(report: SerializationReport, reason: RepairReason): void {
  report.repairs[reason] = (report.repairs[reason] ?? 0) + 1;
}

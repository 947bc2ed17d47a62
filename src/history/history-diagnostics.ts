import type { EventOf } from "../contracts/events.js";
import type { HistoryFormat } from "./history-format.js";
import type { FlatReason, HistoryUnit } from "./history-units.js";
import type { RepairReason, SerializationReport } from "./serializers.js";

/**
 * A history diagnostic, the payload of `session.diagnostic.recorded`: a name, counts and reason
 * enums — never arguments, results, content, paths, IDs, hashes or echo text.
 */
export type HistoryDiagnostic = EventOf<"session.diagnostic.recorded">["data"];

/** What the selection did, in numbers. */
export interface SelectionFacts {
  /** History units before the current user message (a summary unit excluded). */
  historyUnits: number;
  selectedUnits: number;
  droppedUnits: number;
  workingSetUnits: number;
  hasCurrent: boolean;
  /** A recorded summary was in the history. */
  summaryApplied: boolean;
  /** A new compaction is proposed. */
  compactionProposed: boolean;
  /** The budget, when it is finite. */
  budgetTokens?: number;
  reservedTokens: number;
  selectedTokens: number;
}

/**
 * The diagnostics of one history build (docs/history.md#diagnostics): `-selected` always; `-skipped` when a group
 * went flat or an echo was stripped; `-repaired` when anything was repaired; `-serialized` always,
 * counted from the messages the serializer produced, not from its input.
 *
 * @example
 * const diagnostics = historyDiagnostics({ format, units, selection, report, output });
 */
export function historyDiagnostics<Message>(input: {
  format: DiagnosedFormat<Message>;
  /** The units that were serialized, in order. */
  units: readonly HistoryUnit[];
  selection: SelectionFacts;
  report: SerializationReport;
  /** Repairs made while cutting units (results without a call, second results). */
  ignoredResults: { orphan: number; duplicate: number };
  output: { system?: string; messages: readonly Message[] };
}): HistoryDiagnostic[] {
  const tallies = newTallies();
  for (const unit of input.units) tallyUnit(tallies, unit);
  tallyReport(tallies, input.report);
  tallyOutput(tallies, input.format.countMessage, input.output);
  return historyDiagnosticsFromTallies({ format: input.format, selection: input.selection, tallies, ignoredResults: input.ignoredResults });
}

/**
 * The same diagnostics as `historyDiagnostics`, from the tallies of the serialized units, the
 * serializer's report and the output messages: a build that keeps running tallies of its units
 * gets them without walking every unit and message (docs/performance.md#what-makes-a-tool-call-cheap-issue-15).
 *
 * @example
 * const diagnostics = historyDiagnosticsFromTallies({ format, selection, tallies, ignoredResults });
 */
export function historyDiagnosticsFromTallies(input: {
  format: Pick<HistoryFormat, "serializedReason">;
  selection: SelectionFacts;
  tallies: HistoryTallies;
  ignoredResults: { orphan: number; duplicate: number };
}): HistoryDiagnostic[] {
  const { selection, tallies } = input;
  const flatUnits = tallies[flatAt] ?? 0;
  const echoStripped = tallies[echoStrippedAt] ?? 0;
  const diagnostics: HistoryDiagnostic[] = [];

  const selectedReasons: string[] = [];
  if (selection.droppedUnits > 0) selectedReasons.push("budget_fallback");
  if (selection.compactionProposed) selectedReasons.push("compaction_proposed");
  if (selection.summaryApplied) selectedReasons.push("summary_applied");
  const estimated = selection.reservedTokens + selection.selectedTokens;
  if (selection.budgetTokens !== undefined && estimated > selection.budgetTokens) selectedReasons.push("over_budget");
  diagnostics.push({
    name: "structured-tool-history-selected",
    counts: {
      units_total: selection.historyUnits + selection.workingSetUnits + (selection.hasCurrent ? 1 : 0),
      history_units: selection.historyUnits,
      units_selected: selection.selectedUnits,
      units_dropped: selection.droppedUnits,
      working_set_units: selection.workingSetUnits,
      summary_units: (tallies[summaryAt] ?? 0) > 0 ? 1 : 0,
      groups_native: tallies[nativeAt] ?? 0,
      groups_flat: flatUnits,
      ...(selection.budgetTokens !== undefined ? { budget_tokens: selection.budgetTokens } : {}),
      reserved_tokens: selection.reservedTokens,
      selected_tokens: selection.selectedTokens,
      estimated_tokens: estimated,
    },
    reasons: selectedReasons.sort(),
  });

  if (flatUnits > 0 || echoStripped > 0) {
    const byReason = new Map<FlatReason | "provider_unsupported", number>();
    for (const [index, reason] of flatReasons.entries()) {
      const times = tallies[flatReasonsAt + index] ?? 0;
      if (times > 0) byReason.set(reason, times);
    }
    if (echoStripped > 0) byReason.set("provider_unsupported", echoStripped);
    const reasons = [...byReason.keys()].sort();
    diagnostics.push({
      name: "structured-tool-history-skipped",
      counts: {
        groups_flat: flatUnits,
        calls_flat: tallies[callsFlatAt] ?? 0,
        echo_stripped: echoStripped,
        ...Object.fromEntries(reasons.map((reason) => [reason, byReason.get(reason) ?? 0])),
      },
      reasons,
    });
  }

  const repairs = new Map<string, number>();
  for (const [index, reason] of repairReasons.entries()) {
    const times = tallies[repairsAt + index] ?? 0;
    if (times > 0) repairs.set(reason, times);
  }
  if (input.ignoredResults.orphan > 0) repairs.set("orphan_result_dropped", input.ignoredResults.orphan);
  if (input.ignoredResults.duplicate > 0) repairs.set("duplicate_result_dropped", input.ignoredResults.duplicate);
  if (repairs.size > 0) {
    const reasons = [...repairs.keys()].sort();
    diagnostics.push({ name: "structured-tool-history-repaired", counts: Object.fromEntries(reasons.map((reason) => [reason, repairs.get(reason) ?? 0])), reasons });
  }

  diagnostics.push(serializedFromTallies(input.format.serializedReason, tallies));
  return diagnostics;
}

/**
 * `structured-tool-history-serialized`: counted from the messages as they are, so it describes what
 * the provider receives even if a serializer has a bug.
 *
 * @example
 * serializedDiagnostic(providerFormat(name), { messages }).counts.tool_calls;
 */
export function serializedDiagnostic<Message>(format: DiagnosedFormat<Message>, output: { system?: string; messages: readonly Message[] }): HistoryDiagnostic {
  const tallies = newTallies();
  tallyOutput(tallies, format.countMessage, output);
  return serializedFromTallies(format.serializedReason, tallies);
}

/** What the diagnostics need of a format: the `-serialized` reason and how its messages count. */
export type DiagnosedFormat<Message> = Pick<HistoryFormat<Message>, "serializedReason" | "countMessage">;

function serializedFromTallies(reason: string, tallies: HistoryTallies): HistoryDiagnostic {
  const counts: Record<string, number> = {};
  for (const [index, key] of serializedKeys.entries()) counts[key] = tallies[serializedAt + index] ?? 0;
  return { name: "structured-tool-history-serialized", counts, reasons: [reason] };
}

/**
 * The counts a build's diagnostics are made of — units native, flat and summary, the flat groups'
 * calls and reasons, the serializer's repairs and stripped echoes, and the `-serialized` counts of
 * the output messages — at fixed indexes. Each is a sum over units or messages, so the tallies of
 * a run of units are the difference of two running tallies.
 */
export type HistoryTallies = number[];

// Records, not lists, so the compiler checks that every reason has its place.
const flatReasons = Object.keys({
  unsafe_arguments: null,
  length_truncated: null,
  invalid_id: null,
  invalid_name: null,
  invalid_arguments: null,
  incomplete_group: null,
  missing_echo: null,
  echo_oversized: null,
  marked_unsafe: null,
} satisfies Record<FlatReason, null>) as FlatReason[];
const repairReasons = Object.keys({
  merged_consecutive_roles: null,
  inserted_preface: null,
  empty_content: null,
  empty_arguments: null,
  echo_stripped_on_merge: null,
  orphan_result_dropped: null,
  duplicate_result_dropped: null,
} satisfies Record<RepairReason, null>) as RepairReason[];
/** The `-serialized` counts, in the order the diagnostic lists them. */
const serializedKeys = [
  "messages",
  "system_messages",
  "user_messages",
  "assistant_messages",
  "tool_messages",
  "tool_calls",
  "tool_results",
  "error_results",
  "text_blocks",
  "thinking_blocks",
  "reasoning_fields",
] as const;
/** A count of `structured-tool-history-serialized`, which a format's `countMessage` adds to. */
export type SerializedCountKey = (typeof serializedKeys)[number];
type SerializedKey = SerializedCountKey;

/** A format's way of counting one of its messages (`HistoryFormat.countMessage`). */
export type MessageCounter<Message> = (message: Message, count: (key: SerializedCountKey, by?: number) => void) => void;

const nativeAt = 0;
const flatAt = 1;
const summaryAt = 2;
const callsFlatAt = 3;
const echoStrippedAt = 4;
const flatReasonsAt = 5;
const repairsAt = flatReasonsAt + flatReasons.length;
const serializedAt = repairsAt + repairReasons.length;
const talliesLength = serializedAt + serializedKeys.length;

const flatReasonIndex = new Map(flatReasons.map((reason, index) => [reason, flatReasonsAt + index]));
const repairIndex = new Map(repairReasons.map((reason, index) => [reason, repairsAt + index]));
const serializedIndex = Object.fromEntries(serializedKeys.map((key, index) => [key, serializedAt + index])) as Record<SerializedKey, number>;

/** Tallies of nothing. */
export function newTallies(): HistoryTallies {
  return new Array<number>(talliesLength).fill(0);
}

/** `into` plus `times` × `tallies`, in place (`times` −1 takes them away). */
export function addTallies(into: HistoryTallies, tallies: HistoryTallies, times = 1): void {
  for (let index = 0; index < talliesLength; index += 1) into[index] = (into[index] ?? 0) + times * (tallies[index] ?? 0);
}

/** Counts a serialized unit: its kind, and a flat group's calls and reasons. */
export function tallyUnit(tallies: HistoryTallies, unit: HistoryUnit): void {
  if (unit.kind === "tool-group") bump(tallies, nativeAt);
  else if (unit.kind === "summary") bump(tallies, summaryAt);
  else if (unit.kind === "flat") {
    bump(tallies, flatAt);
    bump(tallies, callsFlatAt, unit.calls.length);
    for (const reason of unit.reasons) bump(tallies, flatReasonIndex.get(reason) as number);
  }
}

/** Counts a serializer's repairs and stripped echoes. */
export function tallyReport(tallies: HistoryTallies, report: SerializationReport): void {
  for (const [reason, times] of Object.entries(report.repairs) as [RepairReason, number][]) {
    const index = repairIndex.get(reason);
    if (index !== undefined) bump(tallies, index, times);
  }
  bump(tallies, echoStrippedAt, report.echoStripped);
}

/** Counts output messages as they are (and a `system` field beside them, when there is one). */
export function tallyOutput<Message>(tallies: HistoryTallies, countMessage: MessageCounter<Message>, output: { system?: string; messages: readonly Message[] }): void {
  if (output.system !== undefined) bumpSerialized(tallies, "system_messages");
  for (const message of output.messages) tallyMessage(tallies, countMessage, message);
}

/**
 * Counts one output message for `-serialized`: one message, and what its format's counter finds
 * in it, from the message as it is — so the diagnostic describes what the provider receives even
 * if a serializer has a bug.
 */
export function tallyMessage<Message>(tallies: HistoryTallies, countMessage: MessageCounter<Message>, message: Message): void {
  bumpSerialized(tallies, "messages");
  countMessage(message, (key, by = 1) => bumpSerialized(tallies, key, by));
}

function bump(tallies: HistoryTallies, index: number, by = 1): void {
  tallies[index] = (tallies[index] ?? 0) + by;
}

function bumpSerialized(tallies: HistoryTallies, key: SerializedKey, by = 1): void {
  bump(tallies, serializedIndex[key], by);
}

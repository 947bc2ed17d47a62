import type { EventOf } from "../contracts/events.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { FlatReason, HistoryUnit } from "./history-units.js";
import type { AnthropicMessage, OpenAiChatMessage, SerializationReport } from "./serializers.js";

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
 * The diagnostics of one history build (DESIGN.md §7): `-selected` always; `-skipped` when a group
 * went flat or an echo was stripped; `-repaired` when anything was repaired; `-serialized` always,
 * counted from the messages the serializer produced, not from its input.
 *
 * @example
 * const diagnostics = historyDiagnostics({ format, units, selection, report, output });
 */
export function historyDiagnostics(input: {
  format: ProviderFormat;
  /** The units that were serialized, in order. */
  units: readonly HistoryUnit[];
  selection: SelectionFacts;
  report: SerializationReport;
  /** Repairs made while cutting units (results without a call, second results). */
  ignoredResults: { orphan: number; duplicate: number };
  output: { system?: string; messages: readonly (OpenAiChatMessage | AnthropicMessage)[] };
}): HistoryDiagnostic[] {
  const { units, selection, report } = input;
  const flat = units.filter((unit) => unit.kind === "flat");
  const native = units.filter((unit) => unit.kind === "tool-group");
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
      summary_units: units.some((unit) => unit.kind === "summary") ? 1 : 0,
      groups_native: native.length,
      groups_flat: flat.length,
      ...(selection.budgetTokens !== undefined ? { budget_tokens: selection.budgetTokens } : {}),
      reserved_tokens: selection.reservedTokens,
      selected_tokens: selection.selectedTokens,
      estimated_tokens: estimated,
    },
    reasons: selectedReasons.sort(),
  });

  if (flat.length > 0 || report.echoStripped > 0) {
    const byReason = new Map<FlatReason | "provider_unsupported", number>();
    for (const unit of flat) for (const reason of unit.reasons) byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
    if (report.echoStripped > 0) byReason.set("provider_unsupported", report.echoStripped);
    const reasons = [...byReason.keys()].sort();
    diagnostics.push({
      name: "structured-tool-history-skipped",
      counts: {
        groups_flat: flat.length,
        calls_flat: flat.reduce((sum, unit) => sum + (unit.kind === "flat" ? unit.calls.length : 0), 0),
        echo_stripped: report.echoStripped,
        ...Object.fromEntries(reasons.map((reason) => [reason, byReason.get(reason) ?? 0])),
      },
      reasons,
    });
  }

  const repairs = new Map<string, number>(Object.entries(report.repairs));
  if (input.ignoredResults.orphan > 0) repairs.set("orphan_result_dropped", input.ignoredResults.orphan);
  if (input.ignoredResults.duplicate > 0) repairs.set("duplicate_result_dropped", input.ignoredResults.duplicate);
  if (repairs.size > 0) {
    const reasons = [...repairs.keys()].sort();
    diagnostics.push({ name: "structured-tool-history-repaired", counts: Object.fromEntries(reasons.map((reason) => [reason, repairs.get(reason) ?? 0])), reasons });
  }

  diagnostics.push(serializedDiagnostic(input.format, input.output));
  return diagnostics;
}

/**
 * `structured-tool-history-serialized`: counted from the messages as they are, so it describes what
 * the provider receives even if a serializer has a bug.
 *
 * @example
 * serializedDiagnostic("openai-chat", { messages }).counts.tool_calls;
 */
export function serializedDiagnostic(format: ProviderFormat, output: { system?: string; messages: readonly unknown[] }): HistoryDiagnostic {
  const counts: Record<string, number> = {
    messages: output.messages.length,
    system_messages: 0,
    user_messages: 0,
    assistant_messages: 0,
    tool_messages: 0,
    tool_calls: 0,
    tool_results: 0,
    error_results: 0,
    text_blocks: 0,
    thinking_blocks: 0,
    reasoning_fields: 0,
  };
  const add = (key: string, by = 1) => {
    counts[key] = (counts[key] ?? 0) + by;
  };
  if (output.system !== undefined) add("system_messages");
  for (const message of output.messages) {
    const record = (typeof message === "object" && message !== null ? message : {}) as Record<string, unknown>;
    const role = record.role;
    if (role === "system") add("system_messages");
    else if (role === "user") add("user_messages");
    else if (role === "assistant") add("assistant_messages");
    else if (role === "tool") {
      add("tool_messages");
      add("tool_results");
    }
    if (Array.isArray(record.tool_calls)) add("tool_calls", record.tool_calls.length);
    if (typeof record.reasoning_content === "string") add("reasoning_fields");
    if (Array.isArray(record.content)) {
      for (const block of record.content) {
        const type = typeof block === "object" && block !== null ? (block as Record<string, unknown>).type : undefined;
        if (type === "text") add("text_blocks");
        else if (type === "tool_use") add("tool_calls");
        else if (type === "tool_result") {
          add("tool_results");
          if ((block as Record<string, unknown>).is_error === true) add("error_results");
        } else if (type === "thinking" || type === "redacted_thinking") add("thinking_blocks");
      }
    }
  }
  return { name: "structured-tool-history-serialized", counts, reasons: [format === "openai-chat" ? "openai_chat" : "anthropic_messages"] };
}

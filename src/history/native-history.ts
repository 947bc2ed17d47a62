import type { ProviderFormat } from "../contracts/provider.js";
import { deterministicCompressor, type HistoryCompressor } from "./history-compressor.js";
import { historyDiagnostics, type HistoryDiagnostic } from "./history-diagnostics.js";
import { selectSuffix } from "./history-selector.js";
import { buildHistoryUnits, summaryUnit, type HistorySource, type HistoryUnit, type SummaryUnit } from "./history-units.js";
import {
  serializeAnthropicMessages,
  serializeOpenAiChat,
  unitMessages,
  type AnthropicMessage,
  type OpenAiChatMessage,
  type SerializationReport,
  type TargetProvider,
} from "./serializers.js";
import { defaultTokenEstimator, estimateMessageTokens, messageOverheadTokens, truncateToTokens, type TokenEstimator } from "./token-estimator.js";

export interface NativeHistoryOptions {
  /** The wire format to write. */
  format: ProviderFormat;
  /** The provider the request is for: an echo is replayed only to the one (id and format) it came from. */
  provider: TargetProvider;
  /** Token budget for the whole request history: system text, summary, messages. */
  maxTokens: number;
  system?: string;
  /** Default: `defaultTokenEstimator` (o200k_base). */
  estimator?: TokenEstimator;
  /** Default: `deterministicCompressor`. */
  compressor?: HistoryCompressor;
  /**
   * Tokens set aside for the summary whenever there is (or will be) one. Default: an eighth of the
   * budget, between 32 and 1 024.
   */
  summaryTokens?: number;
}

/** A compaction the builder proposes: record it as `session.history.compacted`. */
export interface HistoryCompaction {
  beforePosition: number;
  summary: string;
  unitsSummarized: number;
  compressor: string;
}

export interface NativeHistory {
  messages: OpenAiChatMessage[] | AnthropicMessage[];
  /** Anthropic's `system` (OpenAI's system text is the first message instead). */
  system?: string;
  diagnostics: HistoryDiagnostic[];
  /** Present when units were dropped: the messages are already built as if it were applied. */
  compaction?: HistoryCompaction;
}

/**
 * Builds a provider request history from the session-state projection (DESIGN.md §7): cuts it
 * into atomic units, keeps the largest chronological suffix of earlier units that fits the budget
 * left after the system text, the summary, the current user message and the working set, and
 * serializes summary, suffix, current message (once) and working set in the provider's format.
 *
 * When units are dropped it proposes a compaction — a summary of every dropped unit and the
 * previous summary, whole units only — and returns the messages as if it were applied. Contract:
 * building again from the state with that compaction folded in gives byte-identical messages and
 * proposes nothing; building twice from one state gives byte-identical output. (Whenever a summary
 * exists or is proposed, the same `summaryTokens` are reserved, and a proposed summary never
 * exceeds them, so the kept suffix fits the second build exactly as it fitted the first.)
 *
 * Pure: no clock, no I/O; the compressor must be pure too.
 *
 * @example
 * const { messages, diagnostics, compaction } = buildNativeHistory(session.state(), {
 *   format: "openai-chat", provider: { id: "openai", format: "openai-chat" }, maxTokens: 8_000,
 * });
 */
export function buildNativeHistory(source: HistorySource, options: NativeHistoryOptions): NativeHistory {
  const estimator = options.estimator ?? defaultTokenEstimator;
  const compressor = options.compressor ?? deterministicCompressor;
  const { format, provider, maxTokens } = options;
  if (!(maxTokens > 0)) throw new TypeError(`maxTokens must be a positive number (or Infinity), not ${String(maxTokens)}`);
  if (options.summaryTokens !== undefined && !(options.summaryTokens >= 0)) throw new TypeError(`summaryTokens must be a number ≥ 0, not ${String(options.summaryTokens)}`);
  const layout = buildHistoryUnits(source);
  const estimateUnit = unitEstimator(estimator, format, provider);

  const recordedSummary = layout.history[0]?.kind === "summary" ? layout.history[0] : undefined;
  const candidates = layout.history.filter((unit) => unit.kind !== "summary");
  const systemTokens = options.system === undefined ? 0 : estimator.count(options.system) + messageOverheadTokens;
  const reservedTokens =
    systemTokens + (layout.current ? estimateUnit(layout.current) : 0) + layout.workingSet.reduce((sum, unit) => sum + estimateUnit(unit), 0);
  // Never less than an empty summary costs, so a proposed summary always fits its room.
  const emptySummaryTokens = estimateUnit(summaryUnit({ beforePosition: 1, summary: "", unitsSummarized: 0, compressor: compressor.name }));
  const summaryTokens = Math.max(emptySummaryTokens, options.summaryTokens ?? Math.max(32, Math.min(1024, Math.floor(maxTokens / 8))));
  const finite = Number.isFinite(maxTokens);

  // Without a summary, try to keep everything first; a summary's room is reserved only when one
  // exists or will be proposed — always the same room, so a rebuild selects the same suffix.
  const summaryRoom = (summary: SummaryUnit | undefined) => (summary === undefined ? 0 : Math.max(summaryTokens, estimateUnit(summary)));
  let reservedForSummary = summaryRoom(recordedSummary);
  let selection = selectSuffix(candidates, finite ? maxTokens - reservedTokens - reservedForSummary : Infinity, estimateUnit);
  if (selection.dropped.length > 0 && recordedSummary === undefined) {
    reservedForSummary = summaryTokens;
    selection = selectSuffix(candidates, maxTokens - reservedTokens - reservedForSummary, estimateUnit);
  }

  let summary = recordedSummary;
  let compaction: HistoryCompaction | undefined;
  if (selection.dropped.length > 0) {
    const summarized = [...(recordedSummary ? [recordedSummary] : []), ...selection.dropped];
    compaction = {
      beforePosition: selection.selected[0]?.position ?? layout.current?.position ?? (layout.workingSet[0]?.position ?? 1),
      summary: "",
      unitsSummarized: (recordedSummary?.unitsSummarized ?? 0) + selection.dropped.length,
      compressor: compressor.name,
    };
    compaction.summary = fitSummary(compressor.summarize(summarized, { maxTokens: summaryTokens, estimator }), compaction, summaryTokens, estimator, estimateUnit);
    summary = summaryUnit(compaction);
  }

  const units: HistoryUnit[] = [...(summary ? [summary] : []), ...selection.selected, ...(layout.current ? [layout.current] : []), ...layout.workingSet];
  const serializeOptions = { ...(options.system !== undefined ? { system: options.system } : {}), provider };
  let messages: OpenAiChatMessage[] | AnthropicMessage[];
  let system: string | undefined;
  let report: SerializationReport;
  if (format === "openai-chat") {
    ({ messages, report } = serializeOpenAiChat(units, serializeOptions));
  } else {
    ({ messages, report, system } = serializeAnthropicMessages(units, serializeOptions));
  }

  const diagnostics = historyDiagnostics({
    format,
    units,
    selection: {
      historyUnits: candidates.length,
      selectedUnits: selection.selected.length,
      droppedUnits: selection.dropped.length,
      workingSetUnits: layout.workingSet.length,
      hasCurrent: layout.current !== undefined,
      summaryApplied: recordedSummary !== undefined,
      compactionProposed: compaction !== undefined,
      ...(finite ? { budgetTokens: Math.max(0, Math.floor(maxTokens)) } : {}),
      reservedTokens: reservedTokens + (summary ? estimateUnit(summary) : 0),
      selectedTokens: selection.selectedTokens,
    },
    report,
    ignoredResults: layout.ignoredResults,
    output: { ...(system !== undefined ? { system } : {}), messages },
  });
  return { messages, ...(system !== undefined ? { system } : {}), diagnostics, ...(compaction ? { compaction } : {}) };
}

/**
 * Cuts a summary until its unit, as serialized, is within the room reserved for it (token counts
 * of joined texts are not quite additive, so this checks the real unit, not the text alone).
 */
function fitSummary(
  text: string,
  compaction: HistoryCompaction,
  room: number,
  estimator: TokenEstimator,
  estimateUnit: (unit: HistoryUnit) => number,
): string {
  let summary = text;
  for (;;) {
    const over = estimateUnit(summaryUnit({ ...compaction, summary })) - room;
    if (over <= 0 || summary === "") return summary;
    summary = truncateToTokens(summary, Math.max(0, estimator.count(summary) - over), estimator);
  }
}

/*
 * Unit estimates are cached per unit object (units are cached per message, see history-units),
 * per estimator and target: the same unit always costs the same, so caching changes no result.
 */
const estimates = new WeakMap<TokenEstimator, WeakMap<HistoryUnit, Map<string, number>>>();

function unitEstimator(estimator: TokenEstimator, format: ProviderFormat, provider: TargetProvider): (unit: HistoryUnit) => number {
  let byUnit = estimates.get(estimator);
  if (byUnit === undefined) {
    byUnit = new WeakMap();
    estimates.set(estimator, byUnit);
  }
  const cache = byUnit;
  const key = `${format}\u0000${provider.id}\u0000${provider.format}`;
  return (unit) => {
    const known = cache.get(unit);
    const cached = known?.get(key);
    if (cached !== undefined) return cached;
    const tokens = unitMessages(unit, format, provider).reduce((sum, message) => sum + estimateMessageTokens(message, estimator), 0);
    if (known === undefined) cache.set(unit, new Map([[key, tokens]]));
    else known.set(key, tokens);
    return tokens;
  };
}

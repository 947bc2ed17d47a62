import { deterministicCompressor, type HistoryCompressor } from "./history-compressor.js";
import { addTallies, historyDiagnostics, historyDiagnosticsFromTallies, newTallies, type HistoryDiagnostic, type HistoryTallies } from "./history-diagnostics.js";
import type { HistoryFormat } from "./history-format.js";
import { historySlots, type HistorySlots } from "./history-slots.js";
import { selectSuffix } from "./history-selector.js";
import { buildHistoryUnits, summaryUnit, type HistorySource, type HistoryUnit, type SummaryUnit } from "./history-units.js";
import type { TargetProvider } from "./serializers.js";
import { defaultTokenEstimator, estimateMessageTokens, messageOverheadTokens, truncateToTokens, type TokenEstimator } from "./token-estimator.js";

/**
 * The options of a build in a given format (`buildFormatHistory`); the public `buildNativeHistory`
 * (src/providers/format-history.ts) takes the format by name instead.
 */
export interface FormatHistoryOptions {
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

export interface NativeHistory<Message = unknown> {
  messages: Message[];
  /** A format's `system` field: Anthropic's (OpenAI's system text is the first message instead). */
  system?: string;
  diagnostics: HistoryDiagnostic[];
  /** Present when units were dropped: the messages are already built as if it were applied. */
  compaction?: HistoryCompaction;
}

/**
 * Builds a provider request history from the session-state projection (docs/design.md#9-history): cuts it
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
 * Pure: no clock, no I/O; the compressor must be pure too. A build is extended from the last
 * build of the same session (history-slots.ts, history-lane.ts): it costs the messages appended
 * since, not the session, and gives the bytes a build from scratch gives
 * (`buildNativeHistoryFromScratch`).
 *
 * The format is the adapter's history part (`HistoryFormat`); `buildNativeHistory` finds it by name.
 *
 * @example
 * const { messages, diagnostics, compaction } = buildFormatHistory(providerFormat(provider.format), session.state(), {
 *   provider: { id: provider.id, format: provider.format }, maxTokens: 8_000,
 * });
 */
export function buildFormatHistory<Message>(format: HistoryFormat<Message>, source: HistorySource, options: FormatHistoryOptions): NativeHistory<Message> {
  const settings = settingsOf(format, options);
  const slots = historySlots(source);
  return (slots === undefined ? undefined : buildFromSlots(slots, source, settings)) ?? buildFromScratch(source, settings);
}

/**
 * The same build as `buildFormatHistory`, from scratch: every unit laid out, the selection walked
 * unit by unit, every unit serialized and counted. It is the reference the build from the slots
 * is tested against (property-tests/incremental-history.test.ts), and the path for what the slots
 * do not cover: estimates that are not whole numbers ≥ 0, a budget that is NaN, messages out of
 * position order under a summary.
 *
 * @example
 * const reference = buildFormatHistoryFromScratch(format, state, { provider, maxTokens: 8_000 });
 */
export function buildFormatHistoryFromScratch<Message>(format: HistoryFormat<Message>, source: HistorySource, options: FormatHistoryOptions): NativeHistory<Message> {
  return buildFromScratch(source, settingsOf(format, options));
}

function buildFromScratch<Message>(source: HistorySource, settings: BuildSettings<Message>): NativeHistory<Message> {
  const { format, options, estimator, compressor, estimateUnit } = settings;
  const { provider, maxTokens } = options;
  const layout = buildHistoryUnits(source);

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
  const { messages, report, system } = format.serialize(units, serializeOptions);

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

/** The options of a build, checked, with their defaults. */
interface BuildSettings<Message> {
  format: HistoryFormat<Message>;
  options: FormatHistoryOptions;
  estimator: TokenEstimator;
  compressor: HistoryCompressor;
  estimateUnit: (unit: HistoryUnit) => number;
}

function settingsOf<Message>(format: HistoryFormat<Message>, options: FormatHistoryOptions): BuildSettings<Message> {
  const { maxTokens, summaryTokens } = options;
  if (!(maxTokens > 0)) throw new TypeError(`maxTokens must be a positive number (or Infinity), not ${String(maxTokens)}`);
  if (summaryTokens !== undefined && !(summaryTokens >= 0)) throw new TypeError(`summaryTokens must be a number ≥ 0, not ${String(summaryTokens)}`);
  const estimator = options.estimator ?? defaultTokenEstimator;
  return { format, options, estimator, compressor: options.compressor ?? deterministicCompressor, estimateUnit: unitEstimator(estimator, format, options.provider) };
}

/**
 * `buildFormatHistoryFromScratch`, read from the session's slots and their running sums instead of
 * walking every unit: the same numbers in the same order of operations, so the same bytes. The
 * selection's walk back from the newest unit stops at the first unit that does not fit; with
 * every estimate a whole number ≥ 0 the tokens of a suffix only grow as it starts earlier, so the
 * first start that fits is found by a binary search, and the sums are exact. The messages are the
 * tail of the format's lane (`FormatLane.requestFrom`: the Anthropic lane merges them into runs)
 * and the diagnostics come from its running tallies. Returns `undefined` for what it does not
 * cover (see `buildFormatHistoryFromScratch`).
 */
function buildFromSlots<Message>(slots: HistorySlots, source: HistorySource, settings: BuildSettings<Message>): NativeHistory<Message> | undefined {
  const { format, options, estimator, compressor, estimateUnit } = settings;
  const { provider, maxTokens } = options;
  const lane = format.lane(slots, estimator, provider, estimateUnit);
  const { base } = slots;
  const end = slots.length;
  const current = slots.current;
  const history = { start: slots.historyStart, end: current >= 0 ? current : end };
  const costs = (index: number) => lane.costs[index - base] as number;
  if (lane.inexact[end - base] !== lane.inexact[history.start - base] || !Number.isSafeInteger(costs(end))) return undefined;
  const tokensBetween = (from: number, to: number) => costs(to) - costs(from);
  const unitsBetween = (from: number, to: number) => slots.unitsBefore(to) - slots.unitsBefore(from);

  const recordedSummary = source.historySummary ? recordedSummaryUnit(source.historySummary) : undefined;
  const systemTokens = options.system === undefined ? 0 : estimator.count(options.system) + messageOverheadTokens;
  const reservedTokens = systemTokens + (current >= 0 ? tokensBetween(current, current + 1) : 0) + (current >= 0 ? tokensBetween(current + 1, end) : 0);
  const emptySummaryTokens = estimateUnit(emptySummaryUnit(compressor.name));
  const summaryTokens = Math.max(emptySummaryTokens, options.summaryTokens ?? Math.max(32, Math.min(1024, Math.floor(maxTokens / 8))));
  const finite = Number.isFinite(maxTokens);

  const summaryRoom = (summary: SummaryUnit | undefined) => (summary === undefined ? 0 : Math.max(summaryTokens, estimateUnit(summary)));
  // The first start whose suffix fits: the walk back would have stopped just before it.
  const select = (budgetTokens: number) => {
    let low = history.start;
    let high = history.end;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (tokensBetween(middle, history.end) <= budgetTokens) high = middle;
      else low = middle + 1;
    }
    return low;
  };
  let reservedForSummary = summaryRoom(recordedSummary);
  let budgetTokens = finite ? maxTokens - reservedTokens - reservedForSummary : Infinity;
  // Every comparison with NaN is false: the walk would keep every unit, a search none.
  if (Number.isNaN(budgetTokens)) return undefined;
  let start = select(budgetTokens);
  if (unitsBetween(history.start, start) > 0 && recordedSummary === undefined) {
    reservedForSummary = summaryTokens;
    budgetTokens = maxTokens - reservedTokens - reservedForSummary;
    if (Number.isNaN(budgetTokens)) return undefined;
    start = select(budgetTokens);
  }
  const droppedUnits = unitsBetween(history.start, start);

  let summary = recordedSummary;
  let compaction: HistoryCompaction | undefined;
  if (droppedUnits > 0) {
    const dropped: HistoryUnit[] = [];
    for (let index = history.start; index < start; index += 1) {
      const unit = slots.unit(index);
      if (unit !== undefined) dropped.push(unit);
    }
    const summarized = [...(recordedSummary ? [recordedSummary] : []), ...dropped];
    compaction = {
      beforePosition: firstUnit(slots, start, history.end)?.position ?? (current >= 0 ? slots.unit(current)?.position : undefined) ?? 1,
      summary: "",
      unitsSummarized: (recordedSummary?.unitsSummarized ?? 0) + droppedUnits,
      compressor: compressor.name,
    };
    compaction.summary = fitSummary(compressor.summarize(summarized, { maxTokens: summaryTokens, estimator }), compaction, summaryTokens, estimator, estimateUnit);
    summary = summaryUnit(compaction);
  }

  // The summary and the slots from the first selected one on: the selected units, the current
  // message and the working set, which follow each other in the session.
  const tallies = newTallies();
  addTallies(tallies, lane.tallies[end - base] as HistoryTallies);
  addTallies(tallies, lane.tallies[start - base] as HistoryTallies, -1);
  const from = lane.offsets[start - base] as number;
  const { messages, system } = lane.requestFrom(from, { summary, system: options.system, provider }, tallies);

  const diagnostics = historyDiagnosticsFromTallies({
    format,
    selection: {
      historyUnits: unitsBetween(history.start, history.end),
      selectedUnits: unitsBetween(start, history.end),
      droppedUnits,
      workingSetUnits: current >= 0 ? unitsBetween(current + 1, end) : 0,
      hasCurrent: current >= 0,
      summaryApplied: recordedSummary !== undefined,
      compactionProposed: compaction !== undefined,
      ...(finite ? { budgetTokens: Math.max(0, Math.floor(maxTokens)) } : {}),
      reservedTokens: reservedTokens + (summary ? estimateUnit(summary) : 0),
      selectedTokens: tokensBetween(start, history.end),
    },
    tallies,
    ignoredResults: slots.ignoredResults,
  });
  return { messages, ...(system !== undefined ? { system } : {}), diagnostics, ...(compaction ? { compaction } : {}) };
}

/** The first unit in `[from, to)`: a binary search over the running count of units. */
function firstUnit(slots: HistorySlots, from: number, to: number): HistoryUnit | undefined {
  const before = slots.unitsBefore(from);
  if (slots.unitsBefore(to) === before) return undefined;
  let low = from;
  let high = to - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (slots.unitsBefore(middle + 1) > before) high = middle;
    else low = middle + 1;
  }
  return slots.unit(low);
}

/*
 * The recorded summary's unit, one per recorded summary (a state's summary object is kept until
 * the next compaction), and the empty summary's for the last compressor: so their estimates are
 * cached like every other unit's.
 */
const recordedSummaries = new WeakMap<object, SummaryUnit>();
let emptySummary: SummaryUnit | undefined;

function recordedSummaryUnit(summary: NonNullable<HistorySource["historySummary"]>): SummaryUnit {
  let unit = recordedSummaries.get(summary);
  if (unit === undefined) {
    unit = summaryUnit(summary);
    recordedSummaries.set(summary, unit);
  }
  return unit;
}

function emptySummaryUnit(compressor: string): SummaryUnit {
  if (emptySummary?.compressor !== compressor) emptySummary = summaryUnit({ beforePosition: 1, summary: "", unitsSummarized: 0, compressor });
  return emptySummary;
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

function unitEstimator(estimator: TokenEstimator, format: HistoryFormat, provider: TargetProvider): (unit: HistoryUnit) => number {
  let byUnit = estimates.get(estimator);
  if (byUnit === undefined) {
    byUnit = new WeakMap();
    estimates.set(estimator, byUnit);
  }
  const cache = byUnit;
  const key = `${format.name}\u0000${provider.id}\u0000${provider.format}`;
  return (unit) => {
    const known = cache.get(unit);
    const cached = known?.get(key);
    if (cached !== undefined) return cached;
    // The unit's messages as the format's serializer caches them.
    const messages = format.unitSerialization(unit, provider).messages;
    const tokens = messages.reduce<number>((sum, message) => sum + estimateMessageTokens(message, estimator), 0);
    if (known === undefined) cache.set(unit, new Map([[key, tokens]]));
    else known.set(key, tokens);
    return tokens;
  };
}

import type { ProviderFormat } from "../contracts/provider.js";
import type { HistoryTallies, SerializedCountKey } from "./history-diagnostics.js";
import type { HistoryLane } from "./history-lane.js";
import type { HistorySlots } from "./history-slots.js";
import type { HistoryUnit, SummaryUnit } from "./history-units.js";
import type { SerializationReport, SerializeOptions, TargetProvider, UnitSerialization } from "./serializers.js";
import type { TokenEstimator } from "./token-estimator.js";

/**
 * What the history builder needs from a provider format: its message shapes, how a history of
 * units becomes a request, how the incremental lane keeps one, and how its messages are counted.
 * history/ is format-neutral and takes one of these; each format's implementation is part of its
 * adapter in the format's folder under src/providers/ (docs/providers.md, "Adding a provider format"), and the
 * registry (src/providers/formats.ts) finds it by name.
 */
export interface HistoryFormat<Message = unknown> {
  /** The name recorded in the log (`session.started`'s provider, `turn.provider.requested`). */
  readonly name: ProviderFormat;
  /** The one reason of `structured-tool-history-serialized` (`openai_chat`). */
  readonly serializedReason: string;
  /**
   * A whole request from units, in order: the system text where the format puts it, every unit's
   * messages, whatever the format must repair between units, and the report of what was repaired.
   */
  serialize(units: readonly HistoryUnit[], options: SerializeOptions): FormatSerialization<Message>;
  /**
   * One unit's messages on its own, before anything between units (cached per unit and target,
   * shared: never change them). Token estimates are made from these.
   */
  unitSerialization(unit: HistoryUnit, provider: TargetProvider | undefined): UnitSerialization<Message>;
  /**
   * The incremental lane of `slots` for an estimator and target, brought up to date (history-lane.ts
   * keeps the running sums; the format says what its messages are and how a request's tail is made).
   */
  lane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): FormatLane<Message>;
  /**
   * Counts one output message for `structured-tool-history-serialized` (the `messages` count is
   * made by the caller): its role, tool calls and results, blocks, reasoning fields.
   */
  countMessage(message: Message, count: (key: SerializedCountKey, by?: number) => void): void;
}

/** A whole request in one format, and what the serializer repaired. */
export interface FormatSerialization<Message> {
  messages: Message[];
  /** A `system` field beside the messages, for a format that has one. */
  system?: string;
  report: SerializationReport;
}

/** A format's lane: the running sums, and the request from any message on. */
export interface FormatLane<Message> extends HistoryLane<Message> {
  /**
   * The request's messages from lane message `from` on, after the system text and the summary,
   * exactly as `serialize` would write them: a new list (the lane's changes with the next build).
   * Counts into `tallies` what it adds to the lane's tallies from `from` on (the system text, the
   * summary, merges a format makes where the tail begins).
   */
  requestFrom(from: number, head: { summary: SummaryUnit | undefined; system: string | undefined; provider: TargetProvider }, tallies: HistoryTallies): { messages: Message[]; system?: string };
}

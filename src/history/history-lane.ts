import type { ProviderFormat } from "../contracts/provider.js";
import { addTallies, newTallies, tallyMessage, tallyReport, tallyUnit, type HistoryTallies, type MessageCounter } from "./history-diagnostics.js";
import type { HistorySlots } from "./history-slots.js";
import type { HistoryUnit } from "./history-units.js";
import type { RepairReason, TargetProvider, UnitSerialization } from "./serializers.js";
import type { TokenEstimator } from "./token-estimator.js";

/**
 * What a build needs from a session's slots in one format, kept as running sums from the slots'
 * base, so a build reads any range of units in constant time: the units' token estimates (a
 * selection is a binary search over them), their messages one after the other, and the tallies
 * the diagnostics are made of. Kept per slots, estimator, format and target; an update redoes the
 * slots from the lowest one that changed.
 */
export interface HistoryLane<Message> {
  /** `costs[i]`: the estimated tokens of the units before slot `base + i`. */
  readonly costs: readonly number[];
  /**
   * `inexact[i]`: how many units before slot `base + i` have an estimate that is not a whole
   * number ≥ 0. Sums of those could differ from a walk's sums in the last bit, and a negative one
   * would make the selection stop elsewhere, so a build over them goes the way of the walk.
   */
  readonly inexact: readonly number[];
  /** The messages of every slot's unit on its own, in order. */
  readonly messages: readonly Message[];
  /** `offsets[i]`: where the messages of slot `base + i` start. */
  readonly offsets: readonly number[];
  /**
   * `tallies[i]`: the tallies of the units before slot `base + i` (shared between slots without a
   * unit). A format that sends its units' messages as they are counts them here too; one that
   * merges them counts them as sent (the Anthropic runs).
   */
  readonly tallies: readonly HistoryTallies[];
}

/**
 * The running state of a lane, which only the format that owns it changes (`updateLane`).
 */
export interface LaneState<Message> extends HistoryLane<Message> {
  epoch: number;
  costs: number[];
  inexact: number[];
  messages: Message[];
  offsets: number[];
  tallies: HistoryTallies[];
}

const lanes = new WeakMap<HistorySlots, WeakMap<TokenEstimator, Map<string, unknown>>>();

/**
 * A new lane: no slot read yet.
 *
 * @example
 * cachedLane(slots, estimator, "my-format", provider, () => newLane<MyMessage>());
 */
export function newLane<Message>(): LaneState<Message> {
  return { epoch: 0, costs: [0], inexact: [0], messages: [], offsets: [0], tallies: [newTallies()] };
}

/**
 * The lane of `slots` for an estimator, a format and a target, made by `create` the first time:
 * lanes are kept per slots, estimator, format and target, so each build extends the last one.
 *
 * @example
 * const lane = cachedLane(slots, estimator, format.name, provider, () => newLane<MyMessage>());
 */
export function cachedLane<Lane>(slots: HistorySlots, estimator: TokenEstimator, format: ProviderFormat, provider: TargetProvider, create: () => Lane): Lane {
  let byEstimator = lanes.get(slots);
  if (byEstimator === undefined) {
    byEstimator = new WeakMap();
    lanes.set(slots, byEstimator);
  }
  let byTarget = byEstimator.get(estimator);
  if (byTarget === undefined) {
    byTarget = new Map();
    byEstimator.set(estimator, byTarget);
  }
  const key = `${format}\u0000${provider.id}\u0000${provider.format}`;
  let lane = byTarget.get(key) as Lane | undefined;
  if (lane === undefined) {
    lane = create();
    byTarget.set(key, lane);
  }
  return lane;
}

/**
 * Redoes the lane from the lowest slot changed since its last update, serializing each unit with
 * `serialize`; returns the first message redone (a format that keeps more per message, like the
 * Anthropic runs, redoes it from there).
 *
 * @example
 * const from = updateLane(lane, slots, estimateUnit, (unit) => ({ messages, tallies: unitTallies(unit, serialized, countMessage) }));
 */
export function updateLane<Message>(
  lane: LaneState<Message>,
  slots: HistorySlots,
  estimateUnit: (unit: HistoryUnit) => number,
  serialize: (unit: HistoryUnit) => { messages: readonly Message[]; tallies: HistoryTallies },
): number {
  const { base } = slots;
  const from = Math.min(slots.changedSince(lane.epoch), base + lane.costs.length - 1);
  const kept = from - base + 1;
  // Nearly always nothing to cut: the slots changed were appended.
  if (lane.costs.length > kept) {
    lane.costs.length = kept;
    lane.inexact.length = kept;
    lane.offsets.length = kept;
    lane.tallies.length = kept;
    lane.messages.length = lane.offsets[kept - 1] as number;
  }
  const firstMessage = lane.messages.length;
  for (let index = from; index < slots.length; index += 1) {
    const at = index - base;
    const costs = lane.costs[at] as number;
    const inexact = lane.inexact[at] as number;
    const tallies = lane.tallies[at] as HistoryTallies;
    const unit = slots.unit(index);
    if (unit === undefined) {
      lane.costs.push(costs);
      lane.inexact.push(inexact);
      lane.offsets.push(lane.messages.length);
      lane.tallies.push(tallies);
      continue;
    }
    const cost = estimateUnit(unit);
    const exact = Number.isSafeInteger(cost) && cost >= 0;
    lane.costs.push(costs + (exact ? cost : 0));
    lane.inexact.push(inexact + (exact ? 0 : 1));
    const serialized = serialize(unit);
    for (const message of serialized.messages) lane.messages.push(message);
    lane.offsets.push(lane.messages.length);
    const next = [...tallies];
    addTallies(next, serialized.tallies);
    lane.tallies.push(next);
  }
  lane.epoch = slots.epoch;
  return firstMessage;
}

/**
 * The tallies of one unit as serialized on its own: its kind, its repairs, and — given the
 * format's `countMessage`, for a format whose units' messages go as they are — its messages.
 * Cached with the serialization (it belongs to one unit and format).
 *
 * @example
 * addTallies(tallies, unitTallies(summary, openAiUnitSerialization(summary, provider), countOpenAiChatMessage));
 */
export function unitTallies<Message>(unit: HistoryUnit, serialized: UnitSerialization<Message>, countMessage?: MessageCounter<Message>): HistoryTallies {
  const known = talliesBySerialization.get(serialized);
  if (known !== undefined) return known;
  const tallies = newTallies();
  tallyUnit(tallies, unit);
  tallyReport(tallies, { repairs: Object.fromEntries(serialized.repairs) as Partial<Record<RepairReason, number>>, echoStripped: serialized.echoStripped });
  if (countMessage !== undefined) for (const message of serialized.messages) tallyMessage(tallies, countMessage, message);
  talliesBySerialization.set(serialized, tallies);
  return tallies;
}

/** A serialization belongs to one unit and format, so its tallies are cached with it. */
const talliesBySerialization = new WeakMap<object, HistoryTallies>();

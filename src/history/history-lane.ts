import { addTallies, newTallies, tallyMessage, tallyReport, tallyUnit, type HistoryTallies } from "./history-diagnostics.js";
import type { HistorySlots } from "./history-slots.js";
import type { HistoryUnit } from "./history-units.js";
import { openAiUnitSerialization, type OpenAiChatMessage, type OpenAiUnitSerialization, type RepairReason, type TargetProvider } from "./serializers.js";
import type { TokenEstimator } from "./token-estimator.js";

/**
 * What an OpenAI Chat Completions build needs from a session's slots, kept as running sums from
 * the slots' base, so a build reads any range of units in constant time: the units' token
 * estimates (a selection is a binary search over them), their messages one after the other (a
 * history is the tail of that list), and the tallies its diagnostics are made of. Kept per slots,
 * estimator and target; an update redoes the slots from the lowest one that changed.
 */
export interface OpenAiLane {
  /** `costs[i]`: the estimated tokens of the units before slot `base + i`. */
  readonly costs: readonly number[];
  /**
   * `inexact[i]`: how many units before slot `base + i` have an estimate that is not a whole
   * number ≥ 0. Sums of those could differ from a walk's sums in the last bit, and a negative one
   * would make the selection stop elsewhere, so a build over them goes the way of the walk.
   */
  readonly inexact: readonly number[];
  /** The messages of every slot, in order. */
  readonly messages: readonly OpenAiChatMessage[];
  /** `offsets[i]`: where the messages of slot `base + i` start. */
  readonly offsets: readonly number[];
  /** `tallies[i]`: the tallies of the units before slot `base + i` (shared between slots without a unit). */
  readonly tallies: readonly HistoryTallies[];
}

interface LaneState extends OpenAiLane {
  epoch: number;
  costs: number[];
  inexact: number[];
  messages: OpenAiChatMessage[];
  offsets: number[];
  tallies: HistoryTallies[];
}

const lanes = new WeakMap<HistorySlots, WeakMap<TokenEstimator, Map<string, LaneState>>>();

/**
 * The OpenAI lane of `slots` for an estimator and target, brought up to date with them.
 *
 * @example
 * const lane = openAiLane(slots, estimator, provider, estimateUnit);
 * const tokens = lane.costs[end - slots.base]! - lane.costs[start - slots.base]!;
 */
export function openAiLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): OpenAiLane {
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
  const key = `${provider.id}\u0000${provider.format}`;
  let lane = byTarget.get(key);
  if (lane === undefined) {
    lane = { epoch: 0, costs: [0], inexact: [0], messages: [], offsets: [0], tallies: [newTallies()] };
    byTarget.set(key, lane);
  }
  update(lane, slots, provider, estimateUnit);
  return lane;
}

function update(lane: LaneState, slots: HistorySlots, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): void {
  const { base } = slots;
  const from = Math.min(slots.changedSince(lane.epoch), base + lane.costs.length - 1);
  const kept = from - base + 1;
  lane.costs.length = kept;
  lane.inexact.length = kept;
  lane.offsets.length = kept;
  lane.tallies.length = kept;
  lane.messages.length = lane.offsets[kept - 1] as number;
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
    const serialized = openAiUnitSerialization(unit, provider);
    for (const message of serialized.messages) lane.messages.push(message);
    lane.offsets.push(lane.messages.length);
    const next = [...tallies];
    addTallies(next, unitTallies(unit, serialized));
    lane.tallies.push(next);
  }
  lane.epoch = slots.epoch;
}

/**
 * The tallies of one unit as serialized for OpenAI: its kind, its repairs, its messages.
 *
 * @example
 * const tallies = unitTallies(unit, openAiUnitSerialization(unit, provider));
 */
export function unitTallies(unit: HistoryUnit, serialized: OpenAiUnitSerialization): HistoryTallies {
  const known = talliesBySerialization.get(serialized);
  if (known !== undefined) return known;
  const tallies = newTallies();
  tallyUnit(tallies, unit);
  tallyReport(tallies, { repairs: Object.fromEntries(serialized.repairs) as Partial<Record<RepairReason, number>>, echoStripped: serialized.echoStripped });
  for (const message of serialized.messages) tallyMessage(tallies, message);
  talliesBySerialization.set(serialized, tallies);
  return tallies;
}

/** A serialization belongs to one unit and target, so its tallies are cached with it. */
const talliesBySerialization = new WeakMap<OpenAiUnitSerialization, HistoryTallies>();

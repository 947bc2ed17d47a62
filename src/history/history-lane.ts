import type { ProviderFormat } from "../contracts/provider.js";
import { addTallies, newTallies, tallyMessage, tallyReport, tallyUnit, type HistoryTallies } from "./history-diagnostics.js";
import type { HistorySlots } from "./history-slots.js";
import type { HistoryUnit } from "./history-units.js";
import {
  anthropicRun,
  anthropicUnitSerialization,
  openAiUnitSerialization,
  type AnthropicMessage,
  type OpenAiChatMessage,
  type RepairReason,
  type TargetProvider,
} from "./serializers.js";
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
   * unit). OpenAI's count the units' messages too; Anthropic's do not, its runs count them.
   */
  readonly tallies: readonly HistoryTallies[];
}

/**
 * Anthropic's lane adds the runs: consecutive messages of one role, which go to the provider as one
 * message (`serializeAnthropicMessages`). A history from slot s on is the run that slot's first
 * message is in (from that message on) and every run after it, so the runs are kept merged, with
 * running tallies of what they count (the merges, the messages as sent).
 */
export interface AnthropicLane extends HistoryLane<AnthropicMessage> {
  /** `runOf[m]`: the run message `m` is in. */
  readonly runOf: readonly number[];
  readonly runs: readonly AnthropicLaneRun[];
  /** The runs' messages, as `runs[r].message` (a list to copy from in one go). */
  readonly sent: readonly AnthropicMessage[];
  /** `runTallies[r]`: the tallies of the runs before run `r`. */
  readonly runTallies: readonly HistoryTallies[];
}

export interface AnthropicLaneRun {
  /** The run's first and one-past-last message. */
  readonly start: number;
  readonly end: number;
  /** The one message the run is sent as. */
  readonly message: AnthropicMessage;
  /** The run's own tallies (see `anthropicRunTallied`). */
  readonly tallies: HistoryTallies;
}

interface LaneState<Message> extends HistoryLane<Message> {
  epoch: number;
  costs: number[];
  inexact: number[];
  messages: Message[];
  offsets: number[];
  tallies: HistoryTallies[];
}

type AnthropicLaneState = LaneState<AnthropicMessage> & {
  runOf: number[];
  runs: AnthropicLaneRun[];
  sent: AnthropicMessage[];
  runTallies: HistoryTallies[];
};

const lanes = new WeakMap<HistorySlots, WeakMap<TokenEstimator, Map<string, LaneState<OpenAiChatMessage> | AnthropicLaneState>>>();

/**
 * The OpenAI Chat Completions lane of `slots` for an estimator and target, brought up to date.
 *
 * @example
 * const lane = openAiLane(slots, estimator, provider, estimateUnit);
 * const tokens = lane.costs[end - slots.base]! - lane.costs[start - slots.base]!;
 */
export function openAiLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): HistoryLane<OpenAiChatMessage> {
  const lane = laneOf(slots, estimator, "openai-chat", provider, () => newLane<OpenAiChatMessage>()) as LaneState<OpenAiChatMessage>;
  update(lane, slots, estimateUnit, (unit) => {
    const serialized = openAiUnitSerialization(unit, provider);
    return { messages: serialized.messages, tallies: unitTallies(unit, serialized, true) };
  });
  return lane;
}

/**
 * The Anthropic Messages lane of `slots` for an estimator and target, brought up to date.
 *
 * @example
 * const lane = anthropicLane(slots, estimator, provider, estimateUnit);
 * const run = lane.runs[lane.runOf[lane.offsets[start - slots.base]!]!];
 */
export function anthropicLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): AnthropicLane {
  const lane = laneOf(slots, estimator, "anthropic-messages", provider, () => ({ ...newLane<AnthropicMessage>(), runOf: [], runs: [], sent: [], runTallies: [newTallies()] })) as AnthropicLaneState;
  const from = update(lane, slots, estimateUnit, (unit) => {
    const serialized = anthropicUnitSerialization(unit, provider);
    return { messages: serialized.messages, tallies: unitTallies(unit, serialized, false) };
  });
  updateRuns(lane, from);
  return lane;
}

/**
 * The one message a run of Anthropic messages is sent as, and its tallies: the merges, the
 * thinking blocks a merge left out, and the message as sent.
 *
 * @example
 * const { message, tallies } = anthropicRunTallied(lane.messages.slice(from, run.end));
 */
export function anthropicRunTallied(messages: readonly AnthropicMessage[]): { message: AnthropicMessage; tallies: HistoryTallies } {
  const run = anthropicRun(messages);
  const tallies = newTallies();
  const repairs: Partial<Record<RepairReason, number>> = {};
  if (run.merged > 0) repairs.merged_consecutive_roles = run.merged;
  if (run.echoStrippedOnMerge > 0) repairs.echo_stripped_on_merge = run.echoStrippedOnMerge;
  tallyReport(tallies, { repairs, echoStripped: 0 });
  tallyMessage(tallies, run.message);
  return { message: run.message, tallies };
}

function newLane<Message>(): LaneState<Message> {
  return { epoch: 0, costs: [0], inexact: [0], messages: [], offsets: [0], tallies: [newTallies()] };
}

function laneOf(
  slots: HistorySlots,
  estimator: TokenEstimator,
  format: ProviderFormat,
  provider: TargetProvider,
  create: () => LaneState<OpenAiChatMessage> | AnthropicLaneState,
): LaneState<OpenAiChatMessage> | AnthropicLaneState {
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
  let lane = byTarget.get(key);
  if (lane === undefined) {
    lane = create();
    byTarget.set(key, lane);
  }
  return lane;
}

/** Redoes the lane from the lowest slot changed since its last update; returns the first message redone. */
function update<Message>(
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
 * Redoes the runs from message `from` on: the run that holds the message before it may go on with
 * the messages now after it, so it is redone too (kept when it still ends where it did).
 */
function updateRuns(lane: AnthropicLaneState, from: number): void {
  const messages = lane.messages;
  let keptRuns = from === 0 ? 0 : (lane.runOf[from - 1] as number) + 1;
  const reopened = keptRuns > 0 ? (lane.runs[keptRuns - 1] as AnthropicLaneRun) : undefined;
  lane.runOf.length = from;
  // Where each run starts, the reopened one first.
  const starts: number[] = [];
  if (reopened !== undefined) {
    keptRuns -= 1;
    starts.push(reopened.start);
  }
  for (let index = from; index < messages.length; index += 1) {
    const role = (messages[index] as AnthropicMessage).role;
    if (starts.length === 0 || (messages[index - 1] as AnthropicMessage).role !== role) starts.push(index);
    lane.runOf.push(keptRuns + starts.length - 1);
  }
  lane.runs.length = keptRuns;
  lane.sent.length = keptRuns;
  lane.runTallies.length = keptRuns + 1;
  for (const [at, start] of starts.entries()) {
    const end = starts[at + 1] ?? messages.length;
    // The reopened run stays as it was when it still ends where the redone messages begin.
    const run: AnthropicLaneRun =
      at === 0 && reopened !== undefined && reopened.end === end && end === from ? reopened : { start, end, ...anthropicRunTallied(messages.slice(start, end)) };
    const tallies = [...(lane.runTallies[lane.runs.length] as HistoryTallies)];
    addTallies(tallies, run.tallies);
    lane.runs.push(run);
    lane.sent.push(run.message);
    lane.runTallies.push(tallies);
  }
}

/**
 * The tallies of one unit as serialized on its own: its kind, its repairs, and — for OpenAI,
 * whose units' messages go as they are — its messages.
 */
function unitTallies(unit: HistoryUnit, serialized: { messages: readonly unknown[]; repairs: readonly (readonly [RepairReason, number])[]; echoStripped: number }, withMessages: boolean): HistoryTallies {
  const known = talliesBySerialization.get(serialized);
  if (known !== undefined) return known;
  const tallies = newTallies();
  tallyUnit(tallies, unit);
  tallyReport(tallies, { repairs: Object.fromEntries(serialized.repairs) as Partial<Record<RepairReason, number>>, echoStripped: serialized.echoStripped });
  if (withMessages) for (const message of serialized.messages) tallyMessage(tallies, message);
  talliesBySerialization.set(serialized, tallies);
  return tallies;
}

/** A serialization belongs to one unit and format, so its tallies are cached with it. */
const talliesBySerialization = new WeakMap<object, HistoryTallies>();

/**
 * The tallies of a unit serialized for OpenAI on its own (the summary a build puts first).
 *
 * @example
 * addTallies(tallies, openAiUnitTallies(summary, openAiUnitSerialization(summary, provider)));
 */
export function openAiUnitTallies(unit: HistoryUnit, serialized: ReturnType<typeof openAiUnitSerialization>): HistoryTallies {
  return unitTallies(unit, serialized, true);
}

/**
 * The tallies of a unit serialized for Anthropic on its own, its messages aside (they are counted
 * as sent, after merging).
 *
 * @example
 * addTallies(tallies, anthropicUnitTallies(summary, anthropicUnitSerialization(summary, provider)));
 */
export function anthropicUnitTallies(unit: HistoryUnit, serialized: ReturnType<typeof anthropicUnitSerialization>): HistoryTallies {
  return unitTallies(unit, serialized, false);
}

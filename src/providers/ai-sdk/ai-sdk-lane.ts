import { addTallies, tallyMessage, type HistoryTallies } from "../../history/history-diagnostics.js";
import type { FormatLane } from "../../history/history-format.js";
import { cachedLane, newLane, unitTallies, updateLane, type LaneState } from "../../history/history-lane.js";
import type { HistorySlots } from "../../history/history-slots.js";
import type { HistoryUnit, SummaryUnit } from "../../history/history-units.js";
import type { TargetProvider } from "../../history/serializers.js";
import type { TokenEstimator } from "../../history/token-estimator.js";
import { countAiSdkMessage, aiSdkUnitSerialization, type AiSdkMessage } from "./ai-sdk-serializer.js";

/**
 * The AI SDK lane of `slots` for an estimator and target, brought up to date.
 * the AI SDK prompt merges nothing, so its lane is the units' messages one after the other, counted as they
 * are, and a request's tail is a slice of them.
 *
 * @example
 * const lane = aiSdkLane(slots, estimator, provider, estimateUnit);
 * const tokens = lane.costs[end - slots.base]! - lane.costs[start - slots.base]!;
 */
export function aiSdkLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): FormatLane<AiSdkMessage> {
  const lane = cachedLane(slots, estimator, "ai-sdk", provider, (): LaneState<AiSdkMessage> & FormatLane<AiSdkMessage> => {
    const created = newLane<AiSdkMessage>();
    return Object.assign(created, { requestFrom: (from: number, head: RequestHead, tallies: HistoryTallies) => ({ messages: aiSdkMessagesFrom(created, from, head, tallies) }) });
  });
  updateLane(lane, slots, estimateUnit, (unit) => {
    const serialized = aiSdkUnitSerialization(unit, provider);
    return { messages: serialized.messages, tallies: unitTallies(unit, serialized, countAiSdkMessage) };
  });
  return lane;
}

type RequestHead = { summary: SummaryUnit | undefined; system: string | undefined; provider: TargetProvider };

/**
 * The AI SDK prompt's messages from lane message `from` on, after the system message and the summary (it
 * merges nothing): a copy, since the lane's list changes with the next build and the returned one
 * must not. Counts what it adds to the lane's tallies into `tallies`.
 */
function aiSdkMessagesFrom(lane: LaneState<AiSdkMessage>, from: number, head: RequestHead, tallies: HistoryTallies): AiSdkMessage[] {
  const leading: AiSdkMessage[] = [];
  if (head.system !== undefined) {
    const system: AiSdkMessage = { role: "system", content: head.system };
    leading.push(system);
    tallyMessage(tallies, countAiSdkMessage, system);
  }
  if (head.summary !== undefined) {
    const serialized = aiSdkUnitSerialization(head.summary, head.provider);
    for (const message of serialized.messages) leading.push(message);
    addTallies(tallies, unitTallies(head.summary, serialized, countAiSdkMessage));
  }
  const kept = lane.messages.slice(from);
  return leading.length === 0 ? kept : leading.concat(kept);
}

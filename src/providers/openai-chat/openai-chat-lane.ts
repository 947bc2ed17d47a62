import { addTallies, tallyMessage, type HistoryTallies } from "../../history/history-diagnostics.js";
import type { FormatLane } from "../../history/history-format.js";
import { cachedLane, newLane, unitTallies, updateLane, type LaneState } from "../../history/history-lane.js";
import type { HistorySlots } from "../../history/history-slots.js";
import type { HistoryUnit, SummaryUnit } from "../../history/history-units.js";
import type { TargetProvider } from "../../history/serializers.js";
import type { TokenEstimator } from "../../history/token-estimator.js";
import { countOpenAiChatMessage, openAiUnitSerialization, type OpenAiChatMessage } from "./openai-chat-serializer.js";

/**
 * The OpenAI Chat Completions lane of `slots` for an estimator and target, brought up to date.
 * OpenAI merges nothing, so its lane is the units' messages one after the other, counted as they
 * are, and a request's tail is a slice of them.
 *
 * @example
 * const lane = openAiChatLane(slots, estimator, provider, estimateUnit);
 * const tokens = lane.costs[end - slots.base]! - lane.costs[start - slots.base]!;
 */
export function openAiChatLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): FormatLane<OpenAiChatMessage> {
  const lane = cachedLane(slots, estimator, "openai-chat", provider, (): LaneState<OpenAiChatMessage> & FormatLane<OpenAiChatMessage> => {
    const created = newLane<OpenAiChatMessage>();
    return Object.assign(created, { requestFrom: (from: number, head: RequestHead, tallies: HistoryTallies) => ({ messages: openAiMessagesFrom(created, from, head, tallies) }) });
  });
  updateLane(lane, slots, estimateUnit, (unit) => {
    const serialized = openAiUnitSerialization(unit, provider);
    return { messages: serialized.messages, tallies: unitTallies(unit, serialized, countOpenAiChatMessage) };
  });
  return lane;
}

type RequestHead = { summary: SummaryUnit | undefined; system: string | undefined; provider: TargetProvider };

/**
 * OpenAI's messages from lane message `from` on, after the system message and the summary (OpenAI
 * merges nothing): a copy, since the lane's list changes with the next build and the returned one
 * must not. Counts what it adds to the lane's tallies into `tallies`.
 */
function openAiMessagesFrom(lane: LaneState<OpenAiChatMessage>, from: number, head: RequestHead, tallies: HistoryTallies): OpenAiChatMessage[] {
  const leading: OpenAiChatMessage[] = [];
  if (head.system !== undefined) {
    const system: OpenAiChatMessage = { role: "system", content: head.system };
    leading.push(system);
    tallyMessage(tallies, countOpenAiChatMessage, system);
  }
  if (head.summary !== undefined) {
    const serialized = openAiUnitSerialization(head.summary, head.provider);
    for (const message of serialized.messages) leading.push(message);
    addTallies(tallies, unitTallies(head.summary, serialized, countOpenAiChatMessage));
  }
  const kept = lane.messages.slice(from);
  return leading.length === 0 ? kept : leading.concat(kept);
}

import { addTallies, newTallies, tallyMessage, tallyOutput, tallyReport, type HistoryTallies } from "../../history/history-diagnostics.js";
import type { FormatLane } from "../../history/history-format.js";
import { cachedLane, newLane, unitTallies, updateLane, type LaneState } from "../../history/history-lane.js";
import type { HistorySlots } from "../../history/history-slots.js";
import type { HistoryUnit, SummaryUnit } from "../../history/history-units.js";
import type { RepairReason, TargetProvider } from "../../history/serializers.js";
import type { TokenEstimator } from "../../history/token-estimator.js";
import { anthropicRun, anthropicUnitSerialization, countAnthropicMessage, prefaceText, type AnthropicMessage } from "./anthropic-messages-serializer.js";

/**
 * Anthropic's lane adds the runs: consecutive messages of one role, which go to the provider as one
 * message (`serializeAnthropicMessages`). A history from slot s on is the run that slot's first
 * message is in (from that message on) and every run after it, so the runs are kept merged, with
 * running tallies of what they count (the merges, the messages as sent).
 */
export interface AnthropicLane extends FormatLane<AnthropicMessage> {
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

type AnthropicLaneState = LaneState<AnthropicMessage> &
  AnthropicLane & {
    runOf: number[];
    runs: AnthropicLaneRun[];
    sent: AnthropicMessage[];
    runTallies: HistoryTallies[];
  };

type RequestHead = { summary: SummaryUnit | undefined; system: string | undefined; provider: TargetProvider };

/**
 * The Anthropic Messages lane of `slots` for an estimator and target, brought up to date: the
 * units' messages with their runs kept merged. A request's `system` goes beside the messages.
 *
 * @example
 * const lane = anthropicMessagesLane(slots, estimator, provider, estimateUnit);
 * const run = lane.runs[lane.runOf[lane.offsets[start - slots.base]!]!];
 */
export function anthropicMessagesLane(slots: HistorySlots, estimator: TokenEstimator, provider: TargetProvider, estimateUnit: (unit: HistoryUnit) => number): AnthropicLane {
  const lane = cachedLane(slots, estimator, "anthropic-messages", provider, (): AnthropicLaneState => {
    const created: AnthropicLaneState = Object.assign(newLane<AnthropicMessage>(), {
      runOf: [],
      runs: [],
      sent: [],
      runTallies: [newTallies()],
      requestFrom: (from: number, head: RequestHead, tallies: HistoryTallies) => {
        const messages = anthropicMessagesFrom(created, from, head, tallies);
        if (head.system === undefined) return { messages };
        tallyOutput(tallies, countAnthropicMessage, { system: head.system, messages: [] });
        return { messages, system: head.system };
      },
    });
    return created;
  });
  const from = updateLane(lane, slots, estimateUnit, (unit) => {
    // Its messages are counted as sent, after merging (the runs).
    const serialized = anthropicUnitSerialization(unit, provider);
    return { messages: serialized.messages, tallies: unitTallies(unit, serialized) };
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
  tallyMessage(tallies, countAnthropicMessage, run.message);
  return { message: run.message, tallies };
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
 * Anthropic's messages from lane message `from` on, after the summary, merged as
 * `serializeAnthropicMessages` merges them: the run `from` is in, from there on, merges with the
 * summary when it has the summary's role; every later run goes as the lane merged it. A history
 * that begins with the assistant gets the preface. Counts what it adds to the lane's tallies into
 * `tallies`.
 */
function anthropicMessagesFrom(lane: AnthropicLaneState, from: number, head: RequestHead, tallies: HistoryTallies): AnthropicMessage[] {
  let leading: readonly AnthropicMessage[] = [];
  if (head.summary !== undefined) {
    const serialized = anthropicUnitSerialization(head.summary, head.provider);
    leading = serialized.messages;
    // Its messages are counted as sent, after merging.
    addTallies(tallies, unitTallies(head.summary, serialized));
  }
  // Where the lane's runs go on as they are: after the run `from` is in when it starts before
  // `from` or merges with what leads.
  let resume = from;
  const first = lane.runOf[from];
  const run = first === undefined ? undefined : lane.runs[first];
  if (run !== undefined && (run.start < from || leading.at(-1)?.role === (lane.messages[from] as AnthropicMessage).role)) resume = run.end;
  const messages: AnthropicMessage[] = [];
  const lead = [...leading, ...lane.messages.slice(from, resume)];
  for (let start = 0; start < lead.length; ) {
    let end = start + 1;
    while (end < lead.length && (lead[end] as AnthropicMessage).role === (lead[start] as AnthropicMessage).role) end += 1;
    const merged = anthropicRunTallied(lead.slice(start, end));
    messages.push(merged.message);
    addTallies(tallies, merged.tallies);
    start = end;
  }
  const resumeRun = lane.runOf[resume];
  if (resumeRun !== undefined) {
    for (let index = resumeRun; index < lane.sent.length; index += 1) messages.push(lane.sent[index] as AnthropicMessage);
    addTallies(tallies, lane.runTallies[lane.runs.length] as HistoryTallies);
    addTallies(tallies, lane.runTallies[resumeRun] as HistoryTallies, -1);
  }
  if (messages[0]?.role === "assistant") {
    const preface: AnthropicMessage = { role: "user", content: [{ type: "text", text: prefaceText }] };
    messages.unshift(preface);
    tallyReport(tallies, { repairs: { inserted_preface: 1 }, echoStripped: 0 });
    tallyMessage(tallies, countAnthropicMessage, preface);
  }
  return messages;
}


import { isTurnEvent, type GateDecisionRecord, type TurnlogEvent } from "../contracts/events.js";
import type { GateDecision } from "../contracts/policy.js";

/**
 * How a turn went on after a step: asked the provider (`request`, the first attempt) or asked it
 * again (`retry`), or ended — `complete`, `continue` (another turn follows), `stop`, `fail`.
 */
export type TurnDecision = "request" | "retry" | "complete" | "continue" | "stop" | "fail";

/**
 * What a provider request did with the history: sent every unit it had (`keep`), or summarized
 * the earliest ones that no longer fit the budget (`compact`, recorded as
 * `session.history.compacted`).
 */
export type HistoryDecision = "keep" | "compact";

/**
 * A call's gate decision and the rule that decided it, a turn's decision and its reason, or a
 * request's history decision and what it summarized; `null` when there is none on that side.
 */
export type DecisionAndRule = { decision: GateDecision | TurnDecision | HistoryDecision; rule: string } | null;

/** One decision that differs between the log and the recomputation. */
export interface DecisionChange {
  /** Stream position of the logged decision event. */
  position: number;
  /**
   * `call`: a call's gate decision or deciding rule; `turn`: how a turn went on; `history`: what a
   * provider request kept of the history and what it summarized.
   */
  kind: "call" | "turn" | "history";
  /** The call (empty for a turn or history change). */
  callId: string;
  /** The turn (for a turn or history change). */
  turnId?: string;
  /** The tool the call named (empty when unknown, e.g. a call the recomputation has not seen). */
  tool: string;
  /** What the log holds. */
  before: DecisionAndRule;
  /** What the current code computes (under the what-if policy, if any). */
  after: DecisionAndRule;
}

/** Events whose gate decisions are compared call by call. */
export const gateDecisionEventTypes: ReadonlySet<string> = new Set(["turn.tool_calls.gated", "session.native_tool.decided"]);

/** The gate decisions an event holds, by callId: every entry of a gated event, or a native call's one (none when rejected). */
export function gateDecisionsOf(event: TurnlogEvent | undefined): Map<string, GateDecisionRecord> {
  const decisions = new Map<string, GateDecisionRecord>();
  if (event === undefined) return decisions;
  if (event.type === "turn.tool_calls.gated") {
    for (const entry of event.data.decisions) decisions.set(entry.callId, entry);
  } else if (event.type === "session.native_tool.decided") {
    const { data } = event;
    if (data.decision !== null) decisions.set(data.callId, data.decision);
  }
  return decisions;
}

/**
 * Compares the gate decisions of a logged decision event with the recomputed one by callId: one
 * change per call whose decision or rule differs, or that only one side decided (`null` on the
 * other). `recomputed` is `undefined` (or an event of another type) when the current code owed no
 * gate decision there. `toolOf` names a call's tool.
 */
export function decisionChanges(
  position: number,
  logged: TurnlogEvent,
  recomputed: TurnlogEvent | undefined,
  toolOf: (callId: string) => string | undefined,
): DecisionChange[] {
  if (!gateDecisionEventTypes.has(logged.type)) return [];
  const before = gateDecisionsOf(logged);
  const after = gateDecisionsOf(recomputed);
  const changes: DecisionChange[] = [];
  const callIds = [...before.keys(), ...[...after.keys()].filter((callId) => !before.has(callId))];
  for (const callId of callIds) {
    const was = before.get(callId);
    const now = after.get(callId);
    if (was !== undefined && now !== undefined && was.decision === now.decision && was.rule === now.rule) continue;
    changes.push({ position, kind: "call", callId, tool: toolOf(callId) ?? "", before: pick(was), after: pick(now) });
  }
  return changes;
}

function pick(entry: GateDecisionRecord | undefined): DecisionAndRule {
  return entry === undefined ? null : { decision: entry.decision, rule: entry.rule };
}

/** The turn decision a logged or recomputed event stands for, if it is one. */
function turnDecisionOf(event: TurnlogEvent | undefined): DecisionAndRule | undefined {
  if (event === undefined) return undefined;
  switch (event.type) {
    case "turn.provider.requested":
      return { decision: event.data.attempt > 1 ? "retry" : "request", rule: `attempt ${event.data.attempt}` };
    case "turn.completed":
      return { decision: "complete", rule: "final answer" };
    case "turn.continued":
      return { decision: "continue", rule: event.data.reason };
    case "turn.stopped":
      return { decision: "stop", rule: event.data.reason };
    case "turn.failed":
      return { decision: "fail", rule: event.data.reason };
    case "session.started":
    case "session.config.changed":
    case "session.decisions.upgraded":
    case "session.tools.changed":
    case "session.environment.observed":
    case "session.user_message.added":
    case "turn.started":
    case "turn.provider.responded":
    case "turn.provider.failed":
    case "turn.tool_calls.normalized":
    case "turn.tool_calls.planned":
    case "turn.tool_calls.gated":
    case "turn.approval.granted":
    case "turn.approval.denied":
    case "turn.tool.started":
    case "turn.tool.succeeded":
    case "turn.tool.failed":
    case "turn.tool.interrupted":
    case "turn.results.packetized":
    case "turn.cancel.requested":
    case "session.native_tool.requested":
    case "session.native_tool.decided":
    case "session.native_tool.completed":
    case "session.history.compacted":
    case "session.diagnostic.recorded":
      return undefined;
    default:
      return event satisfies never;
  }
}

/**
 * How a turn went on, if the recomputation changes it: the logged event against the decision the
 * current code owes at that point (for a provider request, the last event of its batch — the
 * request itself, after the history decisions). `undefined` when neither side is a turn decision
 * or both agree.
 *
 * @example
 * // a version-1 log whose turn failed after a crash used up an attempt; version 2 retries:
 * turnChange(12, loggedTurnFailed, [diagnostic, diagnostic, requestedAttempt3]);
 * // { kind: "turn", turnId: "turn-1", before: { decision: "fail", … }, after: { decision: "retry", rule: "attempt 3" }, … }
 */
export function turnChange(position: number, logged: TurnlogEvent, recomputed: readonly TurnlogEvent[]): DecisionChange | undefined {
  // The log and the code agree on the start of a batch (its history decisions): nothing changed yet
  // in how the turn goes on. (A batch that compacts where the other does not is a history change.)
  const first = recomputed[0]?.type;
  if (recomputed.length > 1 && (first === logged.type || (historyDecisionEventTypes.has(logged.type) && first !== undefined && historyDecisionEventTypes.has(first)))) return undefined;
  const before = turnDecisionOf(logged) ?? null;
  const after = turnDecisionOf(recomputed.at(-1)) ?? null;
  if (before === null && after === null) return undefined;
  if (before !== null && after !== null && before.decision === after.decision && before.rule === after.rule) return undefined;
  return { position, kind: "turn", callId: "", ...(isTurnEvent(logged) ? { turnId: logged.data.turnId } : {}), tool: "", before, after };
}

/** The history decisions a provider request's batch begins with (src/core/actions.ts). */
const historyDecisionEventTypes: ReadonlySet<string> = new Set(["session.history.compacted", "session.diagnostic.recorded"]);

/** The history decision a batch stands for, from its first event: a compaction, or every unit kept. */
function historyDecisionOf(first: TurnlogEvent): DecisionAndRule {
  if (first.type !== "session.history.compacted") return { decision: "keep", rule: "every unit" };
  const { data } = first;
  return { decision: "compact", rule: `${data.unitsSummarized} ${data.unitsSummarized === 1 ? "unit" : "units"} before #${data.beforePosition}` };
}

/**
 * What a provider request did with the history, if the recomputation changes it: the logged
 * batch's first event (a `session.history.compacted`, or a diagnostic when it kept every unit)
 * against the batch the current code owes there. Token counts that differ (decisions version 6)
 * or a budget that differs (a what-if) move where the history is cut. `undefined` when either side
 * is not a provider request's batch, or both compact the same units.
 *
 * @example
 * historyChange(44, loggedCompaction, [diagnostic, diagnostic, requested]);
 * // { kind: "history", turnId: "turn-5", before: { decision: "compact", rule: "2 units before #21" }, after: { decision: "keep", rule: "every unit" }, … }
 */
export function historyChange(position: number, logged: TurnlogEvent, recomputed: readonly TurnlogEvent[]): DecisionChange | undefined {
  const requested = recomputed.at(-1);
  const first = recomputed[0];
  if (!historyDecisionEventTypes.has(logged.type) || first === undefined || requested?.type !== "turn.provider.requested") return undefined;
  const before = historyDecisionOf(logged);
  const after = historyDecisionOf(first);
  if (before?.decision === after?.decision && before?.rule === after?.rule) return undefined;
  return { position, kind: "history", callId: "", turnId: requested.data.turnId, tool: "", before, after };
}

/**
 * `#12 call_2 write_file: ask (mode:ask) → allow (allow:tool=write_file)`, or for a turn
 * `#12 turn-1: fail (provider:transport:retries-exhausted) → retry (attempt 3)`, or for a history
 * `#44 turn-5 history: compact (2 units before #21) → keep (every unit)`.
 */
export function formatDecisionChange(change: DecisionChange): string {
  const side = (value: DecisionAndRule) => (value === null ? "none" : `${value.decision} (${value.rule})`);
  const subject = change.kind === "turn" ? (change.turnId ?? "turn") : change.kind === "history" ? `${change.turnId ?? "turn"} history` : `${change.callId} ${change.tool || "?"}`;
  return `#${change.position} ${subject}: ${side(change.before)} → ${side(change.after)}`;
}

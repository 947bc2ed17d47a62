import type { Budgets } from "../contracts/budgets.js";
import { isDecisionEvent, parseEvent } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import type { RecordedEvent } from "../log/event-log.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { firstDifference } from "../util/first-difference.js";
import type { EventOf, ToolPlan, TurnlogEvent } from "../contracts/events.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import { decideAll, NoDecisionOwedError, owedDecision, type DecisionAction } from "./decide.js";
import { SessionFold, UnexpectedEventError } from "./session-fold.js";
import { upcastEvent } from "./upcast.js";
import { decisionChanges, type DecisionChange } from "./what-if.js";

export interface Divergence {
  /** Stream position of the logged event. */
  position: number;
  type: string;
  /** JSON path of the first difference, e.g. `data.decisions[0].rule`. */
  path: string;
  /** What the log holds there. */
  expected: unknown;
  /** What the current code computes there. */
  actual: unknown;
}

/** A decision entry replay cannot recompute, and why. */
export interface Unverifiable {
  position: number;
  type: string;
  callId: string;
  /**
   * `redacted`: planned from arguments that held a secret, which the log never stores;
   * `compressor`: a history summary written by a compressor replay does not run.
   */
  reason: "redacted" | "compressor";
}

export interface ReplayReport {
  identical: boolean;
  /** Decision events recomputed and compared. */
  compared: number;
  divergences: Divergence[];
  /** Entries taken as logged because they cannot be recomputed (not divergences). */
  unverifiable: Unverifiable[];
  /** Per call, every gate decision or deciding rule the recomputation changes (what-if). */
  changes: DecisionChange[];
}

export interface ReplayConfiguration {
  registry: ToolRegistry;
  /** How the gate resolves paths (the live runtime's resolver, so decisions compare). */
  gate?: GateEnvironment;
  /** The compressor the session used, when it is not the deterministic default. */
  compressor?: HistoryCompressor;
  /** Judge decisions by this policy instead of the recorded one (what-if). */
  policy?: (recorded: PolicySnapshot) => PolicySnapshot;
  budgets?: (recorded: Budgets) => Budgets;
}

/**
 * Folds a session's events through the current machine and recomputes every decision event from
 * the recorded inputs, comparing it with the log. No provider and no tool is called: input events
 * are taken as given. The log stays the truth while folding, so one divergence does not cascade.
 */
export async function verifyReplay(events: AsyncIterable<RecordedEvent> | Iterable<RecordedEvent>, config: ReplayConfiguration): Promise<ReplayReport> {
  // Replay keeps no intermediate state, so it folds in place (linear in the log's length) and
  // keeps only what later decisions read (memory bounded by the history window, not the log).
  const fold = new SessionFold({ mutable: true, retain: "live" });
  const divergences: Divergence[] = [];
  const unverifiable: Unverifiable[] = [];
  const changes: DecisionChange[] = [];
  let compared = 0;
  // The rest of a multi-event decision (history decisions before a provider request).
  let expected: (TurnlogEvent | string)[] = [];
  for await (const recorded of events) {
    const event = upcastEvent(recorded);
    const position = event.meta.streamPosition;
    const action = owedDecision(fold.pending, fold.turnState);
    if (isDecisionEvent(event.type) && !isHostCancel(event, action)) {
      compared += 1;
      const redactedNative = event.type === "session.native_tool.decided" && fold.state.nativeCalls.at(-1)?.inputRedacted === true;
      if (redactedNative) unverifiable.push({ position, type: event.type, callId: (event.data as { callId: string }).callId, reason: "redacted" });
      if (expected.length === 0) {
        const all = recomputeAll(action, fold, config, redactedNative ? (event.data as { plan: ToolPlan }).plan : undefined);
        expected = typeof all === "string" ? [all] : all;
      }
      const next = expected.shift() as TurnlogEvent | string;
      const toolOf = (callId: string) => fold.state.calls.get(callId)?.name ?? (event.data as { plan?: ToolPlan }).plan?.tool;
      changes.push(...decisionChanges(position, event, typeof next === "string" ? undefined : next, toolOf));
      if (typeof next === "string") {
        divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: next });
      } else {
        const compareWith = asLoggedWhereUnverifiable(next, event, fold, unverifiable);
        const difference = firstDifference({ type: event.type, data: event.data }, compareWith);
        if (difference !== undefined) divergences.push({ position, type: event.type, ...difference });
      }
    } else if (expected.length > 0) {
      // The log went on without decisions the code still owed at this point.
      const missing = expected[0];
      divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: typeof missing === "string" ? missing : missing?.type });
      expected = [];
    }
    try {
      fold.apply(event);
    } catch (error) {
      if (!UnexpectedEventError.isInstance(error)) throw error;
      divergences.push({ position, type: event.type, path: "type", expected: event.type, actual: `not accepted in state ${error.machineState}` });
      break;
    }
  }
  return { identical: divergences.length === 0, compared, divergences, unverifiable, changes };
}

/**
 * What the log holds is taken where the current code cannot recompute it: plans made from
 * arguments that held a secret, and a summary written by a compressor replay does not have.
 */
function asLoggedWhereUnverifiable(recomputed: TurnlogEvent, logged: RecordedEvent, fold: SessionFold, unverifiable: Unverifiable[]): TurnlogEvent {
  if (recomputed.type === "turn.tool_calls.planned" && logged.type === recomputed.type) return takeRedactedPlansAsLogged(recomputed, logged, fold, unverifiable);
  if (recomputed.type === "session.history.compacted" && logged.type === recomputed.type) {
    const data = logged.data as EventOf<"session.history.compacted">["data"];
    if ((data.compressor ?? "deterministic") !== "deterministic") {
      unverifiable.push({ position: logged.meta.streamPosition, type: logged.type, callId: "", reason: "compressor" });
      return { ...recomputed, data: { ...recomputed.data, summary: data.summary, compressor: data.compressor } };
    }
  }
  return recomputed;
}

/** All the decision events the current code owes at this point (see `decideAll`), or why none. */
function recomputeAll(action: DecisionAction | undefined, fold: SessionFold, config: ReplayConfiguration, nativePlanOverride?: ToolPlan): TurnlogEvent[] | string {
  if (action === undefined) return `no decision owed (pending: ${fold.pending[0] ?? "nothing"})`;
  const { state } = fold;
  if (state.policy === null || state.budgets === null) return "no decision owed: session.started is missing";
  const turn = fold.turn?.context;
  try {
    return decideAll(action, {
      state,
      ...(turn !== undefined ? { turn } : {}),
      registry: config.registry,
      policy: config.policy ? config.policy(state.policy) : state.policy,
      budgets: config.budgets ? config.budgets(state.budgets) : state.budgets,
      ...(config.gate ? { gate: config.gate } : {}),
      ...(nativePlanOverride ? { nativePlanOverride } : {}),
      ...(config.compressor ? { compressor: config.compressor } : {}),
    }).map((event) => parseEvent(event));
  } catch (error) {
    if (error instanceof NoDecisionOwedError) return `no decision owed: ${error.message}`;
    throw error;
  }
}

/**
 * A cancel is the host's doing, not a decision: the `turn.stopped` it causes can come in any state
 * and is taken as given, unless a continuation decision was owed at that point anyway.
 */
function isHostCancel(event: RecordedEvent, owed: string | undefined): boolean {
  return event.type === "turn.stopped" && (event.data as { reason?: unknown }).reason === "cancelled" && owed !== "decideContinuation";
}

/**
 * A call whose arguments held a secret was planned from the real values, which the log never
 * stores: its plan cannot be recomputed, so it is taken as logged and reported as unverifiable
 * rather than as a divergence. The gate, packets and everything after are still recomputed.
 */
function takeRedactedPlansAsLogged(
  recomputed: EventOf<"turn.tool_calls.planned">,
  logged: RecordedEvent,
  fold: SessionFold,
  unverifiable: Unverifiable[],
): EventOf<"turn.tool_calls.planned"> {
  const loggedPlans = (logged.data as EventOf<"turn.tool_calls.planned">["data"]).plans;
  const plans = recomputed.data.plans.map((plan, index) => {
    if (!fold.state.calls.get(plan.callId)?.argumentsRedacted) return plan;
    unverifiable.push({ position: logged.meta.streamPosition, type: logged.type, callId: plan.callId, reason: "redacted" });
    return loggedPlans[index] ?? plan;
  });
  return { ...recomputed, data: { ...recomputed.data, plans } };
}

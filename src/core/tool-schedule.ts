import type { EventOf } from "../contracts/events.js";
import { isReadOnlyRisk } from "../contracts/risk.js";
import type { CallState, SessionState, TurnState } from "../projections/session-state.js";
import type { ToolRegistry } from "../tools/tool-registry.js";

/**
 * What the one tool scheduler says while a turn is `running` (docs/architecture.md#running-tools):
 * - `start`: the next cleared call, in call order, starts now — the `turn.tool.started` to append;
 * - `wait`: the next cleared call cannot start until a running call ends (it belongs to a later
 *   group, or `concurrency` calls already run);
 * - `none`: every cleared call has started; what is owed is the end of those still running.
 */
export type ToolStart =
  | { kind: "start"; call: CallState; event: EventOf<"turn.tool.started"> }
  | { kind: "wait"; call: CallState; reason: string }
  | { kind: "none"; reason: string };

/**
 * The scheduler of a turn's cleared calls, shared by the decider (`decide("startTool")`, which
 * replay recomputes), `nextStep` and the live tool runner. Call-order semantics: the calls, in
 * provider order, are cut into execution groups (`executionGroups`); a call starts only when
 * everything of earlier groups has ended, and a group never has more than the session's
 * `concurrency` calls running. Pure.
 */
export function nextToolStart(state: SessionState, turn: TurnState, registry: ToolRegistry): ToolStart {
  const runnable = runnableCalls(state, turn);
  const next = runnable.findIndex((call) => call.status === "allowed");
  const call = runnable[next];
  if (call === undefined) return { kind: "none", reason: `no cleared call is left to start in ${turn.turnId}` };
  const groups = executionGroups(runnable, registry);
  const group = groups[next] as number;
  const running = runnable.filter((candidate) => candidate.status === "running");
  if (running.some((candidate) => groups[runnable.indexOf(candidate)] !== group)) {
    return { kind: "wait", call, reason: `${call.callId} cannot start while a call of an earlier group runs` };
  }
  if (running.length >= state.concurrency) return { kind: "wait", call, reason: `${call.callId} cannot start: ${state.concurrency} calls already run` };
  return { kind: "start", call, event: { type: "turn.tool.started", data: { turnId: turn.turnId, callId: call.callId, tool: call.name, group } } };
}

/**
 * Cuts cleared calls, in call order, into execution groups (docs/architecture.md#running-tools): a maximal run of
 * concurrency-safe calls — a read-only class, not a command tool, not `serial` — shares a group;
 * every other call is a group of its own. Returns each call's group number.
 */
export function executionGroups(calls: readonly CallState[], registry: ToolRegistry): number[] {
  let group = -1;
  let previousConcurrent = false;
  return calls.map((call) => {
    const concurrent = isConcurrencySafe(call, registry);
    if (!(concurrent && previousConcurrent)) group += 1;
    previousConcurrent = concurrent;
    return group;
  });
}

/** Whether a call may overlap others: read-only, not a command tool, not serial. */
export function isConcurrencySafe(call: CallState, registry: ToolRegistry): boolean {
  const tool = registry.get(call.name);
  return tool !== undefined && isReadOnlyRisk(tool.risk) && tool.command === undefined && !tool.serial;
}

/** The calls of a turn cleared to run (by the gate or a person), in call order. */
export function runnableCalls(state: SessionState, turn: TurnState): CallState[] {
  return turn.callIds.flatMap((id) => {
    const call = state.calls.get(id);
    if (call === undefined) throw new Error(`tool scheduler: unknown call ${id}`);
    return call.decision?.decision === "allow" || call.approval?.granted === true ? [call] : [];
  });
}

/** The calls of a turn whose start is logged and whose end is not: what `runToolCalls` owes. */
export function startedCalls(state: SessionState, turn: TurnState): CallState[] {
  return runnableCalls(state, turn).filter((call) => call.status === "running");
}

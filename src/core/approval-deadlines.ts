import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { pendingApprovals, type SessionState } from "../projections/session-state.js";

/** The decisions version from which a held call has a deadline (`policy.approvalTimeoutMs`). */
export const approvalDeadlineVersion = 7;

/** The rule of a denial by deadline, as `turn.approval.denied.rule` records it. */
export const approvalTimeoutRule = "approval:timeout";

/** Who a denial by deadline is recorded as given by (`turn.approval.denied.by`). */
export const approvalTimeoutBy = "turnlog";

/** A held call and the recorded time (ms since the epoch) from which it is denied unanswered. */
export interface ApprovalDeadline {
  callId: string;
  /** The call's gate event's recorded time plus the policy's `approvalTimeoutMs`. */
  deadline: number;
}

/**
 * The deadline of one call the gate held, from the log alone: its `turn.tool_calls.gated` event's
 * recorded time plus the policy's `approvalTimeoutMs` (docs/policy.md, "Approval deadlines").
 * Undefined when the session's decisions version is below 7, the policy sets no timeout, or the
 * gate never held the call.
 */
export function approvalDeadline(state: SessionState, callId: string, decisionsVersion: number = state.decisionsVersion): number | undefined {
  const timeout = state.policy?.approvalTimeoutMs;
  if (timeout === undefined || decisionsVersion < approvalDeadlineVersion) return undefined;
  const heldAt = state.calls.get(callId)?.heldAt;
  if (heldAt === undefined) return undefined;
  const held = Date.parse(heldAt);
  return Number.isFinite(held) ? held + timeout : undefined;
}

/**
 * The deadlines of the calls a session is parked on, earliest first: what a host, a worker or a
 * view shows and waits for. Pure: a function of the session state as folded from the log.
 *
 * @example
 * const [first] = approvalDeadlines(session.state());
 * if (first !== undefined) console.log(`${first.callId} is denied at ${new Date(first.deadline).toISOString()}`);
 */
export function approvalDeadlines(state: SessionState): ApprovalDeadline[] {
  const deadlines: ApprovalDeadline[] = [];
  for (const call of pendingApprovals(state)) {
    const deadline = approvalDeadline(state, call.callId);
    if (deadline !== undefined) deadlines.push({ callId: call.callId, deadline });
  }
  return deadlines.sort((a, b) => a.deadline - b.deadline);
}

/**
 * The held calls whose deadline has passed at `now` (ms since the epoch; a recorded time, or the
 * log's clock): a session `resume()` denies them with rule `approval:timeout` and continues. A
 * worker (`runtime.resumeAll`) asks this of a parked session to know it owes work.
 *
 * @example
 * if (expiredApprovals(session.state(), clock.now()).length > 0) await session.resume();
 */
export function expiredApprovals(state: SessionState, now: number): string[] {
  return approvalDeadlines(state)
    .filter((entry) => now >= entry.deadline)
    .map((entry) => entry.callId);
}

/**
 * Whether an answer the log holds was recorded in time, judged on the state right before it
 * (under `decisionsVersion`, default the session's own; an upgrade preview passes another):
 * a denial by `approval:timeout` recorded before the call's deadline (or of a call with none), or
 * a person's answer recorded at or after it, is not one this code would have recorded. Undefined
 * when the answer is in time (or the event is no answer); otherwise what is wrong, for replay's
 * divergence.
 */
export function answerOutOfTime(state: SessionState, event: RecordedTurnlogEvent, decisionsVersion: number = state.decisionsVersion): { expected: string; actual: string } | undefined {
  if (event.type !== "turn.approval.granted" && event.type !== "turn.approval.denied") return undefined;
  const deadline = approvalDeadline(state, event.data.callId, decisionsVersion);
  const recordedAt = Date.parse(event.meta.recordedAt);
  const timedOut = event.type === "turn.approval.denied" && event.data.rule === approvalTimeoutRule;
  if (timedOut) {
    if (deadline === undefined) return { expected: event.meta.recordedAt, actual: "no deadline: the call has none under this policy and decisions version" };
    if (recordedAt < deadline) return { expected: event.meta.recordedAt, actual: `not before the deadline ${new Date(deadline).toISOString()}` };
    return undefined;
  }
  if (deadline !== undefined && recordedAt >= deadline) return { expected: event.meta.recordedAt, actual: `before the deadline ${new Date(deadline).toISOString()} (the call is denied by ${approvalTimeoutRule})` };
  return undefined;
}

import type { SessionState } from "../projections/session-state.js";
import { pendingApprovals } from "../projections/session-state.js";
import { approvalDeadline } from "./approval-deadlines.js";

/** A call held for a person's answer, as `send` and `resume` report it, and as an answer recorded by ID leaves the rest. */
export interface PendingApproval {
  callId: string;
  tool: string;
  input: unknown;
  riskClass: string | null;
  rule: string;
  fingerprint: string;
  /**
   * When the call is denied unanswered (rule `approval:timeout`): its gate event's recorded time
   * plus the policy's `approvalTimeoutMs`, ISO 8601 (decisions version 7). Absent: no deadline.
   */
  deadline?: string;
}

/**
 * The calls `state` holds for a person, in call order, as a host and an answerer see them.
 *
 * @example
 * heldCalls(state); // [{ callId: "call_1", tool: "deploy", input: { version: "v2" }, riskClass: "external-side-effect", rule: "mode:ask", fingerprint: "…" }]
 */
export function heldCalls(state: SessionState): PendingApproval[] {
  return pendingApprovals(state).map((call) => {
    const deadline = approvalDeadline(state, call.callId);
    return {
      callId: call.callId,
      tool: call.name,
      input: call.input,
      riskClass: call.decision?.riskClass ?? null,
      rule: call.decision?.rule ?? "",
      fingerprint: call.decision?.fingerprint ?? "",
      ...(deadline !== undefined ? { deadline: new Date(deadline).toISOString() } : {}),
    };
  });
}

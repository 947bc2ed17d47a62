import { activeTurn, pendingApprovals, type SessionState } from "../projections/session-state.js";

/**
 * Where a session stands, as `reader.sessions()` and `turnlog sessions` report it:
 * - `completed`, `stopped`, `failed`: how its last user message ended;
 * - `awaiting-approval`: a turn holds calls for a person's answer;
 * - `active`: a turn is in progress (or the process died in one and it awaits recovery);
 * - `idle`: nothing was asked yet.
 */
export type SessionStatus = "completed" | "awaiting-approval" | "stopped" | "failed" | "active" | "idle";

/**
 * The status of a session from its session-state projection.
 *
 * @example
 * sessionStatus(await reader.state("s1")); // "completed"
 */
export function sessionStatus(state: SessionState): SessionStatus {
  if (pendingApprovals(state).length > 0) return "awaiting-approval";
  if (activeTurn(state) !== undefined) return "active";
  if (state.lastOutcome !== null) return state.lastOutcome.status;
  // A user message with no outcome yet: its first turn has not started (or did not get logged).
  return state.messages.length > 0 ? "active" : "idle";
}

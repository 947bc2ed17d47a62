import { describeCommandScope } from "../policy/command-prefix.js";
import type { GateDecision } from "../contracts/policy.js";
import type { RiskClass } from "../contracts/risk.js";
import type { CallState, HostCallState, SessionState, TurnState } from "./session-state.js";

/** What finally happened to a tool call. */
export type AuditOutcome = "succeeded" | "failed" | "rejected" | "denied" | "blocked" | "interrupted" | "pending";

export const auditDecisions = ["allow", "ask", "deny", "block"] as const satisfies readonly GateDecision[];
export const auditOutcomes = ["succeeded", "failed", "rejected", "denied", "blocked", "interrupted", "pending"] as const satisfies readonly AuditOutcome[];

/**
 * One tool call in the audit trail (docs/audit.md#one-row-per-tool-call, docs/embedding.md#public-surface). `decision` is the gate's decision (null
 * when the plan was rejected before the gate); a person's answer is in `approval`; `outcome` is
 * what finally happened — a call the gate asked about and a person denied has `decision: "ask"`,
 * `outcome: "denied"`.
 */
export interface AuditRow {
  callId: string;
  tool: string;
  /** The gate's risk class; for a rejected call, the named tool's declared class when it exists. */
  riskClass: RiskClass | null;
  decision: GateDecision | null;
  /** The rule that decided (e.g. `mode:ask`, `deny:tool=rm`), or `rejected:<reason>` for a rejected plan. */
  rule: string;
  /** A command tool's call, from decisions version 4: whether it ran (or would run) inside an OS sandbox. */
  contained?: boolean;
  outcome: AuditOutcome;
  /** A person's answer to the gate's question (for a host-routed call: the approval given up front). */
  approval?: { granted: boolean; by: string; note?: string; scope: string };
  /**
   * The person approved the call with edited arguments (decisions version 7, docs/audit.md#edited-approvals):
   * who edited it, the arguments the model proposed and those the call ran (or is to run) with, as logged.
   */
  edited?: { by: string; proposed: unknown; ran: unknown };
  /** Who approved the call to run: its own approval, or an earlier approval of the whole tool. */
  approvedBy?: string;
  /** The turn's sequence number, or null for a host-routed call. */
  turn: number | null;
  turnId: string | null;
  /** Stream position (1-based) of the last event about the call. */
  position: number;
  /** Why it did not succeed: the tool's error code, the rejection reason, `denied-by-user`, … */
  errorCode?: string;
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  /** `model`: proposed by the model in a turn; `host`: routed by the host (`session.runTool`). */
  source: "model" | "host";
}

/**
 * The audit trail of a session: one row per tool call, derived from the session-state projection
 * alone (so it needs no state of its own and is rebuilt from the log like it). Rows are ordered:
 * the model's calls turn by turn, in call order within a turn, then the host-routed calls in the
 * order they were requested.
 *
 * @example
 * const rows = auditRows(session.state());
 * rows.filter((row) => row.decision === "ask" && row.outcome === "denied");
 */
export function auditRows(state: SessionState): AuditRow[] {
  const rows: AuditRow[] = [];
  for (const turn of state.turns) {
    for (const callId of turn.callIds) {
      const call = state.calls.get(callId);
      if (call !== undefined) rows.push(modelRow(state, turn, call));
    }
  }
  for (const call of state.hostCalls) rows.push(hostRow(state, call));
  return rows;
}

function declaredRisk(state: SessionState, tool: string): RiskClass | null {
  return state.tools.find((candidate) => candidate.name === tool)?.riskClass ?? null;
}

function modelOutcome(call: CallState): AuditOutcome {
  switch (call.status) {
    case "rejected":
    case "denied":
    case "blocked":
    case "succeeded":
    case "failed":
    case "interrupted":
      return call.status;
    // Awaiting a person, or decided and not yet finished (a turn still in progress).
    default:
      return "pending";
  }
}

function modelRow(state: SessionState, turn: TurnState, call: CallState): AuditRow {
  const outcome = modelOutcome(call);
  const row: AuditRow = {
    callId: call.callId,
    tool: call.name,
    riskClass: call.decision?.riskClass ?? declaredRisk(state, call.name),
    decision: call.decision?.decision ?? null,
    rule: call.rejection !== undefined ? `rejected:${call.rejection.reason}` : (call.decision?.rule ?? ""),
    ...(call.decision?.contained !== undefined ? { contained: call.decision.contained } : {}),
    outcome,
    turn: turn.turnSeq,
    turnId: turn.turnId,
    position: call.position,
    source: "model",
  };
  if (call.approval !== undefined) {
    const { granted, by, note, scope } = call.approval;
    row.approval = { granted, by, scope, ...(note !== undefined ? { note } : {}) };
    if (granted) row.approvedBy = by;
    if (call.edit !== undefined) row.edited = { by: call.edit.by, proposed: call.edit.proposedInput, ran: call.input };
  } else if (call.decision?.rule.startsWith("approval:tool=") || call.decision?.rule.startsWith("approval:command=")) {
    // Allowed by an earlier "always" approval of the tool (or of its command prefix): the latest one before this decision.
    const prefix = call.decision.rule.startsWith("approval:command=") ? call.decision.rule.slice("approval:command=".length) : undefined;
    const earlier = state.toolApprovals
      .filter((approval) => approval.tool === call.name && approval.position <= call.position && (prefix === undefined || approval.commandPrefix === prefix || (approval.commandScope !== undefined && describeCommandScope(approval.commandScope) === prefix)))
      .at(-1);
    if (earlier !== undefined) row.approvedBy = earlier.by;
  }
  const errorCode = modelErrorCode(call, outcome);
  if (errorCode !== undefined) row.errorCode = errorCode;
  if (call.startedAt !== undefined) row.startedAt = call.startedAt;
  if (call.endedAt !== undefined) row.endedAt = call.endedAt;
  if (call.durationMs !== undefined) row.durationMs = call.durationMs;
  return row;
}

function modelErrorCode(call: CallState, outcome: AuditOutcome): string | undefined {
  if (outcome === "succeeded" || outcome === "pending") return undefined;
  if (call.packet?.errorCode !== undefined) return call.packet.errorCode;
  if (call.result?.kind === "failed") return call.result.code;
  if (outcome === "rejected") return call.rejection?.reason;
  if (outcome === "denied") return call.approval?.granted === false ? "denied-by-user" : "denied";
  return outcome;
}

function hostOutcome(call: HostCallState): AuditOutcome {
  if (call.plan?.status === "rejected") return "rejected";
  if (call.decision === undefined) return "pending";
  if (call.runs === false) {
    // Not run: denied or blocked by the gate, or asked about with no approval given up front.
    return call.decision?.decision === "block" ? "blocked" : "denied";
  }
  if (call.result === undefined) return "pending";
  if (call.result.ok) return "succeeded";
  return call.result.code === "interrupted" ? "interrupted" : "failed";
}

function hostRow(state: SessionState, call: HostCallState): AuditRow {
  const outcome = hostOutcome(call);
  const decision = call.decision ?? null;
  const rejection = call.plan?.status === "rejected" ? (call.plan.reason ?? "schema-invalid") : undefined;
  const row: AuditRow = {
    callId: call.callId,
    tool: call.tool,
    riskClass: decision?.riskClass ?? declaredRisk(state, call.tool),
    decision: decision?.decision ?? null,
    rule: rejection !== undefined ? `rejected:${rejection}` : (decision?.rule ?? ""),
    ...(decision?.contained !== undefined ? { contained: decision.contained } : {}),
    outcome,
    turn: null,
    turnId: null,
    position: call.position,
    source: "host",
  };
  if (decision?.decision === "ask" && call.approvedBy !== undefined) {
    row.approval = { granted: true, by: call.approvedBy, scope: "call" };
    row.approvedBy = call.approvedBy;
  }
  let errorCode: string | undefined;
  if (outcome === "rejected") errorCode = rejection;
  else if (outcome === "denied") errorCode = decision?.decision === "ask" ? "needs-approval" : "denied";
  else if (outcome === "blocked") errorCode = "blocked";
  else if (outcome === "failed" || outcome === "interrupted") errorCode = call.result?.code ?? outcome;
  if (errorCode !== undefined) row.errorCode = errorCode;
  if (call.result !== undefined) row.durationMs = call.result.durationMs;
  return row;
}

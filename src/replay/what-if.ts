import type { GateDecision } from "../contracts/policy.js";

/** A call's gate decision and the rule that decided it; `null` when the call has none on that side. */
export type DecisionAndRule = { decision: GateDecision; rule: string } | null;

/** One call whose gate decision or deciding rule differs between the log and the recomputation. */
export interface DecisionChange {
  /** Stream position of the logged decision event. */
  position: number;
  callId: string;
  /** The tool the call named (empty when unknown, e.g. a call the recomputation has not seen). */
  tool: string;
  /** What the log holds. */
  before: DecisionAndRule;
  /** What the current code computes (under the what-if policy, if any). */
  after: DecisionAndRule;
}

interface DecisionLike {
  callId: string;
  decision: GateDecision;
  rule: string;
}

/** Events whose gate decisions are compared call by call. */
export const gateDecisionEventTypes: ReadonlySet<string> = new Set(["turn.tool_calls.gated", "session.native_tool.decided"]);

/** The gate decisions an event holds, by callId: every entry of a gated event, or a native call's one (none when rejected). */
export function gateDecisionsOf(event: { type: string; data: unknown } | undefined): Map<string, DecisionLike> {
  const decisions = new Map<string, DecisionLike>();
  if (event === undefined) return decisions;
  if (event.type === "turn.tool_calls.gated") {
    for (const entry of (event.data as { decisions: DecisionLike[] }).decisions) decisions.set(entry.callId, entry);
  } else if (event.type === "session.native_tool.decided") {
    const data = event.data as { callId: string; decision: DecisionLike | null };
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
  logged: { type: string; data: unknown },
  recomputed: { type: string; data: unknown } | undefined,
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
    changes.push({ position, callId, tool: toolOf(callId) ?? "", before: pick(was), after: pick(now) });
  }
  return changes;
}

function pick(entry: DecisionLike | undefined): DecisionAndRule {
  return entry === undefined ? null : { decision: entry.decision, rule: entry.rule };
}

/** `#12 call_2 write_file: ask (mode:ask) → allow (allow:tool=write_file)`. */
export function formatDecisionChange(change: DecisionChange): string {
  const side = (value: DecisionAndRule) => (value === null ? "none" : `${value.decision} (${value.rule})`);
  return `#${change.position} ${change.callId} ${change.tool || "?"}: ${side(change.before)} → ${side(change.after)}`;
}

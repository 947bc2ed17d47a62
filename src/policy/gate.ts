import type { GateDecisionRecord, ToolPlan } from "../contracts/events.js";
import type { PolicyRule, PolicySnapshot } from "../contracts/policy.js";
import type { RiskClass } from "../contracts/risk.js";
import { isReadOnlyRisk } from "../contracts/risk.js";
import { callFingerprint } from "./fingerprint.js";

/** What the gate needs to know of a tool (a definition or a recorded snapshot both fit). */
export interface GatedTool {
  name: string;
  risk: RiskClass;
}

/** Classes that always ask, whatever the mode or an allow rule says. */
const alwaysAskRiskClasses: readonly RiskClass[] = ["credential-access", "spend-money"];
/** Classes that are blocked whatever the policy says. */
const alwaysBlockedRiskClasses: readonly RiskClass[] = ["sandbox-escape"];

/**
 * Decides one planned call: a pure function of (plan, tool, policy). It evaluates in a fixed
 * order — hard blocks → deny rules → approval mode → allow rules — and records the rule that
 * decided. It fails closed: any error while deciding is a `block`.
 */
export function gateToolCall(plan: ToolPlan, tool: GatedTool | undefined, policy: PolicySnapshot): GateDecisionRecord {
  let fingerprint = "";
  try {
    fingerprint = callFingerprint(plan.tool ?? "", plan.input);
    const decided = decide(plan, tool, policy);
    return { callId: plan.callId, fingerprint, riskClass: tool?.risk ?? null, ...decided };
  } catch {
    return { callId: plan.callId, fingerprint, riskClass: tool?.risk ?? null, decision: "block", rule: "fail-closed:gate-error" };
  }
}

function decide(plan: ToolPlan, tool: GatedTool | undefined, policy: PolicySnapshot): Pick<GateDecisionRecord, "decision" | "rule"> {
  // 1. Hard blocks.
  if (plan.status !== "planned" || tool === undefined || tool.name !== plan.tool) {
    return { decision: "block", rule: "hard-block:unavailable-tool" };
  }
  if (alwaysBlockedRiskClasses.includes(tool.risk) || policy.blockedRiskClasses.includes(tool.risk)) {
    return { decision: "block", rule: `hard-block:risk-class=${tool.risk}` };
  }
  // 2. Explicit deny rules.
  const deny = policy.deny.find((rule) => matches(rule, tool));
  if (deny !== undefined) return { decision: "deny", rule: `deny:${describe(deny)}` };
  // 3. Approval mode.
  const byMode = decideByMode(tool.risk, policy);
  // 4. Allow rules lift an `ask` to `allow`, except for the always-ask classes.
  if (byMode.decision === "ask" && !alwaysAskRiskClasses.includes(tool.risk)) {
    const allow = policy.allow.find((rule) => matches(rule, tool));
    if (allow !== undefined) return { decision: "allow", rule: `allow:${describe(allow)}` };
  }
  return byMode;
}

function decideByMode(risk: RiskClass, policy: PolicySnapshot): Pick<GateDecisionRecord, "decision" | "rule"> {
  const mode = policy.approvalMode;
  const rule = `mode:${mode}`;
  if (isReadOnlyRisk(risk)) return { decision: "allow", rule };
  switch (mode) {
    case "read-only":
      return { decision: "deny", rule };
    case "ask":
      return { decision: "ask", rule };
    case "auto-edit":
      return { decision: risk === "workspace-write" && policy.workspace.trusted ? "allow" : "ask", rule };
    case "full-auto":
      return { decision: alwaysAskRiskClasses.includes(risk) ? "ask" : "allow", rule };
    default:
      throw new TypeError(`unknown approval mode ${String(mode)}`);
  }
}

function matches(rule: PolicyRule, tool: GatedTool): boolean {
  if (rule.tool === undefined && rule.risk === undefined) return false;
  return (rule.tool === undefined || rule.tool === tool.name) && (rule.risk === undefined || rule.risk === tool.risk);
}

function describe(rule: PolicyRule): string {
  return [rule.tool !== undefined ? `tool=${rule.tool}` : "", rule.risk !== undefined ? `risk=${rule.risk}` : ""].filter(Boolean).join(",");
}

import { z } from "zod";
import { RiskClassSchema } from "./risk.js";

export const ApprovalModeSchema = z.enum(["read-only", "ask", "auto-edit", "full-auto"]);
export type ApprovalMode = z.infer<typeof ApprovalModeSchema>;

/** An explicit `deny` or `allow` rule, matched by tool name and/or risk class. */
export const PolicyRuleSchema = z.object({
  tool: z.string().optional(),
  risk: RiskClassSchema.optional(),
  reason: z.string().optional(),
}).meta({ id: "PolicyRule" });
export type PolicyRule = z.infer<typeof PolicyRuleSchema>;

/** The policy in force for a session: recorded in `session.started` so replays use it. */
export const PolicySnapshotSchema = z.object({
  approvalMode: ApprovalModeSchema,
  workspace: z.object({ root: z.string(), trusted: z.boolean() }),
  deny: z.array(PolicyRuleSchema),
  allow: z.array(PolicyRuleSchema),
  blockedRiskClasses: z.array(RiskClassSchema),
  /**
   * Names the host protects at the workspace root besides the built-in protected entries (`.git`,
   * `.vscode`, …; src/contracts/protected-paths.ts): from decisions version 5 a writing tool's path
   * in one asks in every mode (rule `protected:<name>`; docs/security.md, "Protected paths").
   */
  protectedNames: z.array(z.string()).optional(),
  /**
   * Decisions version 7 on: how long a held call waits for a person, in milliseconds of recorded
   * time from its gate event; unanswered by then, it is denied with rule `approval:timeout`
   * (docs/policy.md, "Approval deadlines"). Absent: held calls wait for ever.
   */
  approvalTimeoutMs: z.number().int().positive().optional(),
}).meta({ id: "PolicySnapshot" });
export type PolicySnapshot = z.infer<typeof PolicySnapshotSchema>;

/** What a host may pass: every field optional, merged over the defaults. */
export type PolicyInput = Partial<Omit<PolicySnapshot, "workspace">> & {
  workspace?: Partial<PolicySnapshot["workspace"]>;
};

export const GateDecisionSchema = z.enum(["allow", "ask", "deny", "block"]);
export type GateDecision = z.infer<typeof GateDecisionSchema>;

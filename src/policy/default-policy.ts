import type { PolicyInput, PolicySnapshot } from "../contracts/policy.js";
import { PolicySnapshotSchema } from "../contracts/policy.js";

/** `ask` mode, an untrusted workspace at the current directory, no rules, `sandbox-escape` blocked. */
export function resolvePolicy(input: PolicyInput = {}, cwd: string = process.cwd()): PolicySnapshot {
  return PolicySnapshotSchema.parse({
    approvalMode: input.approvalMode ?? "ask",
    workspace: { root: input.workspace?.root ?? cwd, trusted: input.workspace?.trusted ?? false },
    deny: input.deny ?? [],
    allow: input.allow ?? [],
    blockedRiskClasses: input.blockedRiskClasses ?? ["sandbox-escape"],
    // Only when given: a session started without it records the policy as it always did.
    ...(input.protectedNames !== undefined && input.protectedNames.length > 0 ? { protectedNames: input.protectedNames } : {}),
    ...(input.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: input.approvalTimeoutMs } : {}),
  });
}

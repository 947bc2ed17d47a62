import { z } from "zod";

/** Risk classes, from harmless to never-allowed (docs/design.md#8-policy-and-containment). */
export const riskClasses = [
  "read-only-local",
  "read-only-network",
  "workspace-write",
  "external-side-effect",
  "credential-access",
  "destructive-local",
  "shared-state-mutation",
  "spend-money",
  "sandbox-escape",
] as const;

export const RiskClassSchema = z.enum(riskClasses).meta({ id: "RiskClass" });
export type RiskClass = z.infer<typeof RiskClassSchema>;

/** The two classes that may run without asking in `ask` mode and may run concurrently. */
export const readOnlyRiskClasses: readonly RiskClass[] = ["read-only-local", "read-only-network"];

export function isReadOnlyRisk(risk: RiskClass): boolean {
  return readOnlyRiskClasses.includes(risk);
}

import { z } from "zod";

/** Per-user-message limits of the provider turn loop (docs/design.md#8-policy-and-containment). */
export const BudgetsSchema = z.object({
  maxIterations: z.number().int().positive(),
  maxToolCalls: z.number().int().positive(),
  maxRepeatedFailures: z.number().int().positive(),
  wallClockMs: z.number().int().positive(),
  maxToolCallsPerTurn: z.number().int().positive().optional(),
}).meta({ id: "Budgets" });
export type Budgets = z.infer<typeof BudgetsSchema>;

export const defaultBudgets: Budgets = {
  maxIterations: 45,
  maxToolCalls: 100,
  maxRepeatedFailures: 5,
  wallClockMs: 300_000,
};

/** Partial overrides merge with the defaults. */
export function resolveBudgets(overrides: Partial<Budgets> = {}): Budgets {
  const merged: Budgets = { ...defaultBudgets };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return BudgetsSchema.parse(merged);
}

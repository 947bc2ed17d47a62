/**
 * The session the crash-recovery test kills and resumes: its tools, policy and provider script.
 * Shared by the child that runs it (`crash-session-child.ts`) and the parent that replays it, so
 * both hold the same tool registry snapshot.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defineTool } from "../../src/index.js";
import type { PolicyInput } from "../../src/index.js";
import type { ScriptStep } from "../../src/testing/index.js";

export const crashSessionId = "crash-1";
export const finalAnswer = "Charged A, B, C, D and E.";

/** What a tool tells its host while it runs; a hook that returns a promise holds the tool until it settles. */
export interface CrashToolHooks {
  onBegin?(callId: string, tool: string): void | Promise<void>;
  onEffect?(callId: string): void | Promise<void>;
}

/**
 * `charge` has a side effect the log cannot undo: it appends its call ID to `effectsFile` between
 * two sleeps, so a kill can land before the effect, or after it and before the outcome is logged.
 * `read_order` is read-only and idempotent.
 */
export function crashTools(effectsFile: string, hooks: CrashToolHooks = {}) {
  const charge = defineTool({
    name: "charge",
    description: "Charge an order (not idempotent: charging twice charges twice)",
    risk: "external-side-effect",
    input: z.object({ id: z.string() }),
    run: async ({ id }, context) => {
      await hooks.onBegin?.(context.callId, "charge");
      await sleep(40);
      appendFileSync(effectsFile, `${context.callId}\n`);
      await hooks.onEffect?.(context.callId);
      await sleep(40);
      return `charged order ${id}`;
    },
  });
  const readOrder = defineTool({
    name: "read_order",
    description: "Read an order",
    risk: "read-only-local",
    idempotent: true,
    input: z.object({ id: z.string() }),
    run: async ({ id }, context) => {
      await hooks.onBegin?.(context.callId, "read_order");
      await sleep(20);
      return `order ${id}: 10 EUR, unpaid`;
    },
  });
  return [charge, readOrder];
}

/** full-auto in a trusted workspace: `external-side-effect` runs without asking. */
export function crashPolicy(workspaceRoot: string): PolicyInput {
  return { approvalMode: "full-auto", workspace: { root: workspaceRoot, trusted: true } };
}

const charge = (id: string, callId?: string) => ({ ...(callId !== undefined ? { id: callId } : {}), name: "charge", arguments: JSON.stringify({ id }) });
const readOrder = (id: string, callId?: string) => ({ ...(callId !== undefined ? { id: callId } : {}), name: "read_order", arguments: JSON.stringify({ id }) });

/** The model's answers, by the number of responses the session already holds. */
export const crashScript: readonly ScriptStep[] = [
  { content: "Charging A and B.", toolCalls: [charge("A", "call_charge_a"), readOrder("A"), charge("B")] },
  { toolCalls: [readOrder("C", "call_read_c"), readOrder("D"), charge("C", "call_charge_c"), charge("D")] },
  { toolCalls: [charge("E")] },
  { content: finalAnswer },
];

/** How long the model "thinks" before its n-th answer: 30–80 ms, fixed per answer. */
export function providerDelayMs(answer: number): number {
  return 30 + ((answer * 23) % 51);
}

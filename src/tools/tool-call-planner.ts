import type { z } from "zod";
import type { NormalizedCall, ToolPlan } from "../contracts/events.js";

/** What the planner reads of a normalized call. */
export type PlannableCall = Pick<NormalizedCall, "id" | "name" | "argumentsText">;
import type { ToolRegistry } from "./tool-registry.js";
import { wellFormedText } from "../util/well-formed-text.js";

/**
 * Plans each normalized call against its tool's zod schema. A model's mistake is data, not an
 * exception: an unknown tool, unparsable JSON or a schema failure becomes a rejected plan that the
 * model reads as its tool result and can correct.
 */
export function planToolCalls(calls: readonly PlannableCall[], registry: ToolRegistry): ToolPlan[] {
  const seen = new Set<string>();
  return calls.map((call) => {
    const plan = planOne(call, registry, seen);
    seen.add(call.id);
    return plan;
  });
}

function planOne(call: PlannableCall, registry: ToolRegistry, seen: ReadonlySet<string>): ToolPlan {
  const callId = call.id;
  if (seen.has(callId)) return rejected(callId, call.name, "duplicate-id", "", `call ID ${callId} was already used in this response`);
  if (call.name === "") return rejected(callId, undefined, "missing-name", "", "the call has no tool name");
  const tool = registry.get(call.name);
  if (tool === undefined) {
    return rejected(callId, call.name, "unknown-tool", "", `there is no tool named "${call.name}"; available: ${registry.names().join(", ")}`);
  }
  if (call.argumentsText === undefined) return rejected(callId, call.name, "missing-arguments", "", "the call's arguments were not kept");
  const text = call.argumentsText.trim();
  let parsed: unknown;
  if (text === "") {
    parsed = {};
  } else {
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      // V8 quotes the offending UTF-16 unit, which can be half of an emoji: a lone surrogate the
      // log would refuse. Only such messages change; every message the log could hold stays as it was.
      return rejected(callId, call.name, "malformed-arguments", "", `arguments are not valid JSON: ${wellFormedText((error as Error).message)}`);
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return rejected(callId, call.name, "not-an-object", "", `received ${Array.isArray(parsed) ? "an array" : parsed === null ? "null" : `a ${typeof parsed}`}`);
  }
  const result = (tool.input as z.ZodType).safeParse(parsed);
  if (!result.success) {
    return {
      callId,
      status: "rejected",
      tool: call.name,
      reason: "schema-invalid",
      issues: result.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
    };
  }
  return { callId, status: "planned", tool: call.name, input: parsed };
}

function rejected(callId: string, tool: string | undefined, reason: NonNullable<ToolPlan["reason"]>, path: string, message: string): ToolPlan {
  const plan: ToolPlan = { callId, status: "rejected", reason, issues: [{ path, message }] };
  if (tool !== undefined) plan.tool = tool;
  return plan;
}

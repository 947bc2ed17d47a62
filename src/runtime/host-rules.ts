import type { EventOf } from "../contracts/events.js";
import { hostRuleDecisionsVersion } from "../policy/gate.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { SessionState } from "../projections/session-state.js";
import type { NeedsApprovalContext, ToolDefinition } from "../tools/define-tool.js";
import { describeThrown } from "../util/json-value.js";
import { wellFormedText } from "../util/well-formed-text.js";

/** A call about to be gated whose tool has a `needsApproval`, with the arguments it is asked about. */
export interface HostRuleCall {
  callId: string;
  tool: ToolDefinition;
  input: unknown;
  source: NeedsApprovalContext["source"];
}

type HostRuleAnswer = NonNullable<EventOf<"session.environment.observed">["data"]["hostRules"]>[number];

/**
 * Asks the tools' `needsApproval` (host code) about the calls the gate is about to decide, and
 * returns the `session.environment.observed` that records the answers — to be folded before the
 * gate decision, which reads them from the state, as replay does (docs/policy.md, "Per-call rules
 * from the host"). Only under decisions version 7 and later, and only for calls the log holds no
 * answer for. A predicate that throws or answers something other than a boolean asks (fail
 * closed), with its error recorded, redacted like every text the runtime logs.
 */
export async function askHostRules(state: SessionState, calls: readonly HostRuleCall[], redactor: SecretRedactor): Promise<EventOf<"session.environment.observed"> | undefined> {
  if (state.decisionsVersion < hostRuleDecisionsVersion) return undefined;
  const asked = calls.filter((call) => call.tool.needsApproval !== undefined && !state.hostRules.has(call.callId));
  if (asked.length === 0) return undefined;
  const hostRules: HostRuleAnswer[] = [];
  for (const call of asked) {
    const context: NeedsApprovalContext = { sessionId: state.sessionId, callId: call.callId, tool: call.tool.name, source: call.source };
    let answer: HostRuleAnswer;
    try {
      const needsApproval: unknown = await call.tool.needsApproval?.(call.input as never, context);
      answer =
        typeof needsApproval === "boolean"
          ? { callId: call.callId, tool: call.tool.name, needsApproval }
          : { callId: call.callId, tool: call.tool.name, needsApproval: true, error: `needsApproval answered ${needsApproval === null ? "null" : typeof needsApproval}, not a boolean` };
    } catch (error) {
      answer = { callId: call.callId, tool: call.tool.name, needsApproval: true, error: redactor.redactText(wellFormedText(describeThrown(error))).text };
    }
    hostRules.push(answer);
  }
  return { type: "session.environment.observed", data: { realPaths: [], hostRules } };
}

/**
 * The arguments a `needsApproval` is asked about: the real ones, parsed by the tool's schema, when
 * the log holds them redacted and this process still has their text; otherwise `logged`.
 */
export function realInput(tool: ToolDefinition, logged: unknown, rawText: string | undefined): unknown {
  if (rawText === undefined) return logged;
  try {
    const parsed = tool.input.safeParse(JSON.parse(rawText));
    return parsed.success ? parsed.data : logged;
  } catch {
    return logged;
  }
}

import type { Packet, RejectionReason } from "../contracts/events.js";
import type { GateDecision } from "../contracts/policy.js";

/** Everything known of one call when its turn is packetized. */
export interface CallForPacket {
  callId: string;
  tool: string;
  maxResultChars: number;
  rejection?: { reason: RejectionReason; issues?: { path: string; message: string }[] };
  decision?: GateDecision;
  approval?: { granted: boolean; note?: string };
  result?: { kind: "succeeded"; output: string } | { kind: "failed"; code: string; message: string } | { kind: "interrupted" };
}

/** What the model is told first for each planning rejection, in words it can act on. */
const rejectionLeads: Record<RejectionReason, string> = {
  "unknown-tool": "Error: not run: unknown tool",
  "missing-name": "Error: not run: the call named no tool",
  "missing-arguments": "Error: not run: the call's arguments are not available",
  "malformed-arguments": "Error: not run: the arguments are not valid JSON; send one JSON object",
  "not-an-object": "Error: not run: the arguments must be a JSON object",
  "schema-invalid": "Error: not run: arguments did not match the schema",
  "duplicate-id": "Error: not run: this call repeats the ID of another call in the same response",
  "over-budget": "Error: not run: the tool-call budget for this request is used up",
  "arguments-unavailable": "Error: not run: the arguments held a secret that is never stored, and the process restarted before the call could run",
};

/**
 * Builds the model-visible results of a turn: one packet per call, in call order. Calls that did
 * not run still get an `ok: false` packet with a distinct error code saying what happened and
 * why — without the policy's rule names, which the model need not see.
 */
export function packetize(calls: readonly CallForPacket[]): Packet[] {
  return calls.map(packetFor);
}

function packetFor(call: CallForPacket): Packet {
  const base = { callId: call.callId, tool: call.tool };
  if (call.rejection !== undefined) {
    const detail = (call.rejection.issues ?? []).map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join("; ");
    return notRun(base, call.rejection.reason, `${rejectionLeads[call.rejection.reason]}${detail ? `: ${detail}` : "."}`, call.maxResultChars);
  }
  if (call.decision === "block") return notRun(base, "blocked", "Error: not run: the security policy blocks this call. Do not retry it; choose another approach.", call.maxResultChars);
  if (call.decision === "deny") return notRun(base, "denied", "Error: not run: the policy does not allow this call in this session.", call.maxResultChars);
  if (call.approval?.granted === false) {
    const note = call.approval.note ? ` Their reason: ${call.approval.note}` : "";
    return notRun(base, "denied-by-user", `Error: not run: the user denied this call.${note}`, call.maxResultChars);
  }
  switch (call.result?.kind) {
    case "succeeded":
      return { ...base, ok: true, ...truncate(call.result.output, call.maxResultChars) };
    case "failed":
      return { ...base, ok: false, errorCode: call.result.code, ...truncate(`Error (${call.result.code}): ${call.result.message}`, call.maxResultChars) };
    case "interrupted":
      return notRun(base, "interrupted", "Error: the call was interrupted before it finished (the process stopped) and was not run again.", call.maxResultChars);
    default:
      return notRun(base, "not-run", "Error: not run.", call.maxResultChars);
  }
}

function notRun(base: { callId: string; tool: string }, errorCode: string, content: string, maxChars: number): Packet {
  return { ...base, ok: false, errorCode, ...truncate(content, maxChars) };
}

/**
 * Caps text at `maxChars`, keeping the head and the tail with a marker that states how many
 * characters were removed. `truncated` is true only when characters were actually removed.
 */
export function truncate(text: string, maxChars: number): { content: string; truncated: boolean; originalChars: number } {
  if (text.length <= maxChars) return { content: text, truncated: false, originalChars: text.length };
  // Sized for the longest possible count, so the result never exceeds maxChars.
  const markerFor = (removed: number) => `\n…[${removed} characters removed]…\n`;
  const keep = maxChars - markerFor(text.length).length;
  if (keep <= 0) return { content: text.slice(0, maxChars), truncated: true, originalChars: text.length };
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  const marker = markerFor(text.length - keep);
  return { content: text.slice(0, head) + marker + (tail > 0 ? text.slice(-tail) : ""), truncated: true, originalChars: text.length };
}

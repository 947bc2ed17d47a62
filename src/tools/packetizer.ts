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

/**
 * Builds the model-visible results of a turn, one per call, in call order. Calls that did not run
 * still get a packet saying so and why — without the policy's rule names, which the model need not
 * see.
 */
export function packetize(calls: readonly CallForPacket[]): Packet[] {
  return calls.map(packetFor);
}

function packetFor(call: CallForPacket): Packet {
  const base = { callId: call.callId, tool: call.tool };
  if (call.rejection !== undefined) {
    const detail = (call.rejection.issues ?? []).map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join("; ");
    return error(base, `rejected:${call.rejection.reason}`, `Error: the call was not executed (${call.rejection.reason})${detail ? `: ${detail}` : "."}`);
  }
  if (call.decision === "block") return error(base, "blocked", "Error: the call was blocked by policy and was not executed.");
  if (call.decision === "deny") return error(base, "denied", "Error: the call was denied by policy and was not executed.");
  if (call.approval?.granted === false) {
    const note = call.approval.note ? ` Reason given: ${call.approval.note}` : "";
    return error(base, "denied-by-user", `Error: the user denied this call; it was not executed.${note}`);
  }
  switch (call.result?.kind) {
    case "succeeded":
      return { ...base, ok: true, ...truncate(call.result.output, call.maxResultChars) };
    case "failed":
      return { ...base, ok: false, errorCode: call.result.code, ...truncate(`Error (${call.result.code}): ${call.result.message}`, call.maxResultChars) };
    case "interrupted":
      return error(base, "interrupted", "Error: the call was interrupted before it finished and was not run again.");
    default:
      return error(base, "not-run", "Error: the call did not run.");
  }
}

function error(base: { callId: string; tool: string }, errorCode: string, content: string): Packet {
  return { ...base, ok: false, content, truncated: false, originalChars: content.length, errorCode };
}

/** Keeps the head and the tail, with a marker saying how much was cut. */
export function truncate(text: string, maxChars: number): { content: string; truncated: boolean; originalChars: number } {
  if (text.length <= maxChars) return { content: text, truncated: false, originalChars: text.length };
  // Sized for the longest possible count, so the result never exceeds maxChars.
  const markerFor = (omitted: number) => `\n…[${omitted} characters omitted]…\n`;
  const keep = Math.max(0, maxChars - markerFor(text.length).length);
  const marker = markerFor(text.length - keep);
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  return { content: text.slice(0, head) + marker + (tail > 0 ? text.slice(-tail) : ""), truncated: true, originalChars: text.length };
}

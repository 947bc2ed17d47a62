import type { Packet, RejectionReason, StoredCut } from "../contracts/events.js";
import type { GateDecision } from "../contracts/policy.js";
import { wellFormedText } from "../util/well-formed-text.js";

/** Everything known of one call when its turn is packetized. */
export interface CallForPacket {
  callId: string;
  tool: string;
  maxResultChars: number;
  rejection?: { reason: RejectionReason; issues?: { path: string; message: string }[] };
  decision?: GateDecision;
  /** `rule: "approval:timeout"`: nobody answered before the call's deadline (decisions version 7). */
  approval?: { granted: boolean; note?: string; rule?: string };
  /** `stored`: the output was logged cut (`turn.tool.succeeded.stored`); `output` is its head and tail. */
  result?: { kind: "succeeded"; output: string; stored?: StoredCut } | { kind: "failed"; code: string; message: string; stored?: StoredCut } | { kind: "interrupted" };
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
  if (call.approval?.granted === false && call.approval.rule === "approval:timeout") {
    return notRun(base, "approval-timeout", "Error: not run: nobody approved this call before its approval deadline passed.", call.maxResultChars);
  }
  if (call.approval?.granted === false) {
    const note = call.approval.note ? ` Their reason: ${call.approval.note}` : "";
    return notRun(base, "denied-by-user", `Error: not run: the user denied this call.${note}`, call.maxResultChars);
  }
  switch (call.result?.kind) {
    case "succeeded":
      // Only a result logged cut carries `stored`; every other one is truncated as it always was.
      if (call.result.stored !== undefined) return { ...base, ok: true, ...truncateStored(call.result.output, call.result.stored, call.maxResultChars) };
      return { ...base, ok: true, ...truncate(call.result.output, call.maxResultChars) };
    case "failed": {
      const { code, message, stored } = call.result;
      const prefix = failurePrefix(code);
      // A message logged cut (`storedFailureMessage`) is packetized as the whole one would be.
      if (stored !== undefined) {
        return { ...base, ok: false, errorCode: code, ...truncateStored(prefix + message, { originalChars: prefix.length + stored.originalChars, headChars: prefix.length + stored.headChars }, call.maxResultChars) };
      }
      return { ...base, ok: false, errorCode: code, ...truncate(prefix + message, call.maxResultChars) };
    }
    case "interrupted":
      return notRun(base, "interrupted", "Error: the call was interrupted before it finished (the process stopped) and was not run again.", call.maxResultChars);
    default:
      return notRun(base, "not-run", "Error: not run.", call.maxResultChars);
  }
}

function notRun(base: { callId: string; tool: string }, errorCode: string, content: string, maxChars: number): Packet {
  return { ...base, ok: false, errorCode, ...truncate(content, maxChars) };
}

/** What {@link truncate} keeps of a text: its first `head` and last `tail` characters, `marker` between. */
interface Truncation {
  head: number;
  tail: number;
  marker: string;
}

/** How {@link truncate} cuts a text of `length` characters to `maxChars`; undefined when it fits. */
function truncationOf(length: number, maxChars: number): Truncation | undefined {
  if (length <= maxChars) return undefined;
  // Sized for the longest possible count, so the result never exceeds maxChars.
  const markerFor = (removed: number) => `\n…[${removed} characters removed]…\n`;
  const keep = maxChars - markerFor(length).length;
  if (keep <= 0) return { head: maxChars, tail: 0, marker: "" };
  const head = Math.ceil(keep / 2);
  return { head, tail: keep - head, marker: markerFor(length - keep) };
}

/**
 * Caps text at `maxChars`, keeping the head and the tail with a marker that states how many
 * characters were removed. `truncated` is true only when characters were actually removed. A cut
 * through a surrogate pair leaves U+FFFD in place of the half kept (the log cannot hash half a
 * character); the counts stay those of UTF-16 code units.
 */
export function truncate(text: string, maxChars: number): { content: string; truncated: boolean; originalChars: number } {
  const cut = truncationOf(text.length, maxChars);
  if (cut === undefined) return { content: text, truncated: false, originalChars: text.length };
  return { content: wellFormedText(text.slice(0, cut.head) + cut.marker + (cut.tail > 0 ? text.slice(-cut.tail) : "")), truncated: true, originalChars: text.length };
}

/**
 * What the log stores of a tool output: the whole output when it has at most `maxStoredChars`
 * characters; otherwise exactly `maxStoredChars` of them — a head and a tail that contain the
 * head and tail {@link truncate} keeps at `maxResultChars`, the rest split evenly — and the cut
 * (`stored`). `maxStoredChars` is raised to `maxResultChars` when it is below it. Packetizing the
 * stored form ({@link truncateStored}) gives the packet the whole output gives
 * (property-tests/stored-output.test.ts).
 *
 * @example
 * storedOutput("x".repeat(5_000_000), { maxResultChars: 12_000, maxStoredChars: 1_000_000 });
 * // { output: <1 000 000 characters>, stored: { originalChars: 5000000, headChars: 500000 } }
 */
export function storedOutput(text: string, limits: { maxResultChars: number; maxStoredChars: number }): { output: string; stored?: StoredCut } {
  const cap = Math.max(limits.maxStoredChars, limits.maxResultChars);
  if (text.length <= cap) return { output: text };
  // Defined: the text is longer than maxResultChars (≤ cap), so the packet truncates it.
  const shown = truncationOf(text.length, limits.maxResultChars) as Truncation;
  const spare = cap - shown.head - shown.tail;
  const headChars = shown.head + Math.ceil(spare / 2);
  const tailChars = cap - headChars;
  // Each part made valid Unicode on its own: a cut through a surrogate pair leaves U+FFFD, never
  // half a character for the two parts to pair up with.
  return { output: wellFormedText(text.slice(0, headChars)) + wellFormedText(text.slice(text.length - tailChars)), stored: { originalChars: text.length, headChars } };
}

/** What the model reads before a failed call's message. */
function failurePrefix(code: string): string {
  return `Error (${code}): `;
}

/**
 * What the log stores of a failed call's message: {@link storedOutput} of the packet's text
 * (`Error (<code>): <message>`), without that prefix, so the packet computed from the stored
 * message is the one the whole message gives. `stored` counts the message's characters. Kept
 * whole when the limits are too small for the prefix to fit in the stored head.
 *
 * @example
 * storedFailureMessage("boom", "x".repeat(5_000_000), { maxResultChars: 12_000, maxStoredChars: 1_000_000 });
 * // { message: <999 985 characters>, stored: { originalChars: 5000000, headChars: 499985 } }
 */
export function storedFailureMessage(code: string, message: string, limits: { maxResultChars: number; maxStoredChars: number }): { message: string; stored?: StoredCut } {
  const prefix = failurePrefix(code);
  const { output, stored } = storedOutput(prefix + message, limits);
  if (stored === undefined || stored.headChars < prefix.length) return { message };
  return { message: output.slice(prefix.length), stored: { originalChars: message.length, headChars: stored.headChars - prefix.length } };
}

/**
 * {@link truncate} of an output the log stored cut ({@link storedOutput}): the same packet the
 * whole output gives, since the stored head and tail hold every character truncation keeps and
 * the recorded length gives the marker and `originalChars`. Under a larger `maxChars` than the
 * output was stored for (a what-if replay with other tool limits), it shows what was stored.
 */
export function truncateStored(output: string, stored: StoredCut, maxChars: number): { content: string; truncated: boolean; originalChars: number } {
  const headChars = Math.min(stored.headChars, output.length);
  const tailChars = output.length - headChars;
  const cut = truncationOf(stored.originalChars, maxChars) ?? { head: headChars, tail: tailChars, marker: `\n…[${stored.originalChars - output.length} characters removed]…\n` };
  const head = output.slice(0, Math.min(cut.head, headChars));
  const tail = Math.min(cut.tail, tailChars);
  return { content: wellFormedText(head + cut.marker + (tail > 0 ? output.slice(-tail) : "")), truncated: true, originalChars: stored.originalChars };
}

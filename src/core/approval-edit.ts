import type { EventOf } from "../contracts/events.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { gateToolCall, type GatedTool } from "../policy/gate.js";
import { callFingerprint } from "../policy/fingerprint.js";
import { containsSecret } from "../policy/secrets/secret-detector.js";
import type { CallState, SessionState } from "../projections/session-state.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import { recordedTool } from "../tools/recorded-tool.js";
import { planToolCalls } from "../tools/tool-call-planner.js";
import { ToolRegistry } from "../tools/tool-registry.js";
import { hasLoneSurrogateEscape } from "../util/canonical-json.js";
import { canonicalJson } from "../util/digest.js";
import type { GitLink } from "../util/git-links.js";
import { isRecord, notJsonReason } from "../util/json-value.js";
import { environmentObserver } from "./decide-observing.js";
import { gateEnvironment } from "./decide.js";

/**
 * The decisions version from which a person may approve a held call with edited arguments
 * (docs/policy.md#edit-on-approval). Sessions of earlier versions answer yes or no only.
 */
export const editOnApprovalVersion = 7;

/**
 * What the process that runs the session adds when it records an edited approval itself
 * (`session.approve`): the tool as it will run — so the gate reads the edited call's shell text and
 * path arguments, which only the host's code computes — and, for paths the log has not resolved
 * yet, how to observe them through the file system. What it observes is recorded
 * (`session.environment.observed`) ahead of the approval, as every gate decision's observations are.
 * A process without the host's code (`openLog(…).approve`) passes none.
 */
export interface EditOwner {
  tool?: GatedTool;
  observeRealPath?: (absolute: string) => string;
  observeGitLinks?: (absolute: string) => readonly GitLink[];
  /** The runtime's secret check, with the values its host registered (default: the built-in detector). */
  containsSecret?: (value: unknown) => boolean;
}

/**
 * Tools rebuilt from their recorded snapshots, by snapshot: compiling a JSON Schema is most of the
 * cost of judging an edit, and a session's snapshots are the same objects from answer to answer.
 */
const rebuilt = new WeakMap<ToolSnapshot, ToolDefinition | undefined>();

function recordedToolOf(snapshot: ToolSnapshot): ToolDefinition | undefined {
  if (!rebuilt.has(snapshot)) rebuilt.set(snapshot, recordedTool(snapshot));
  return rebuilt.get(snapshot);
}

/** An edit the answer may record: the arguments, the edited call's fingerprint, and what was observed to judge it. */
export interface DecidedEdit {
  arguments: Record<string, unknown>;
  fingerprint: string;
  observed?: EventOf<"session.environment.observed">;
}

/**
 * Judges a person's edit of a held call's arguments (docs/policy.md#edit-on-approval), from the
 * session as the log holds it: the edited arguments must be a JSON object without a secret, valid
 * against the tool's recorded JSON Schema, and the gate — under the recorded policy, environment
 * and approvals — must not deny or block the edited call. An edit never widens the policy: an
 * edited call the gate would ask about is covered by this approval (the person approved exactly
 * it), one it would deny or block is refused. Returns `undefined` when the arguments are the ones
 * proposed (an ordinary approval). Throws `SessionStateError`, naming the reason or the rule, when
 * the edit cannot be recorded.
 *
 * The gate needs the host's code for a command tool's shell text and a tool's path arguments: such
 * an edit is judged only where `owner.tool` is given, by the process that runs the session.
 *
 * @example
 * decideEdit(call, { path: "notes.md", content: "fixed" }, state, { tool: writeFile });
 * // { arguments: { path: "notes.md", content: "fixed" }, fingerprint: "…" }
 */
export function decideEdit(call: CallState, edited: unknown, state: SessionState, owner: EditOwner = {}): DecidedEdit | undefined {
  const refuse = (reason: string): never => {
    throw new SessionStateError(`call ${call.callId} cannot be approved with these arguments: ${reason}`);
  };
  if (state.decisionsVersion < editOnApprovalVersion) {
    throw new SessionStateError(
      `session ${state.sessionId} is under decisions version ${state.decisionsVersion}: approving with edited arguments needs version ${editOnApprovalVersion} (the turn finishes under the version it started with) — approve or deny the call as proposed`,
    );
  }
  if (!isRecord(edited)) refuse("arguments are a JSON object");
  const notJson = notJsonReason(edited, "arguments");
  if (notJson !== undefined) refuse(notJson);
  // As the log will hold it (a `Date` becomes its text), so the fingerprint is over what is recorded.
  const text = JSON.stringify(edited);
  // The log holds well-formed text only (docs/log.md, "Event data"): half an emoji is refused here, in one line.
  if (hasLoneSurrogateEscape(text)) refuse("they hold a lone surrogate (half of a character), which the log cannot hold");
  const args = JSON.parse(text) as Record<string, unknown>;
  if (call.argumentsRedacted === true) refuse("the proposed arguments held a secret, which the log never stores: deny the call instead");
  if (canonicalJson(args) === canonicalJson(call.input ?? {})) return undefined;
  if ((owner.containsSecret ?? containsSecret)(args)) refuse("they hold a secret, which the log never stores");
  const policy = state.policy;
  if (policy === null) refuse("the session has not started");
  const snapshot = state.tools.find((tool) => tool.name === call.name);
  const recorded = snapshot === undefined ? undefined : recordedToolOf(snapshot);
  if (recorded === undefined) refuse(`the session recorded no input schema for tool ${call.name}`);

  // Against the recorded JSON Schema: what the model was offered, readable without the host's code.
  const [plan] = planToolCalls([{ id: call.callId, name: call.name, argumentsText: JSON.stringify(args) }], new ToolRegistry([recorded as NonNullable<typeof recorded>]));
  if (plan === undefined || plan.status !== "planned") {
    const issues = (plan?.issues ?? []).map((issue) => (issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`)).join("; ");
    refuse(`they do not match the input schema of ${call.name}${issues === "" ? "" : ` (${issues})`}`);
  }

  const gated = owner.tool ?? recorded;
  if (owner.tool === undefined && (snapshot?.flags.command === true || snapshot?.flags.paths === true)) {
    refuse(
      `the gate judges ${call.name}'s ${snapshot.flags.command ? "shell text" : "path arguments"} with the host's code — answer it in the process that runs the session (session.approve, or turnlog approve on the log that process holds)`,
    );
  }
  // What the owner reads of its machine is recorded ahead of the approval, as for any gate decision.
  const observer = environmentObserver(owner.observeRealPath, owner.observeGitLinks);
  const environment = gateEnvironment({ state, ...observer.readers });
  const verdict = gateToolCall({ callId: call.callId, status: "planned", tool: call.name, input: args }, gated, policy as NonNullable<typeof policy>, environment);
  if (verdict.decision === "deny" || verdict.decision === "block") {
    refuse(`the gate would ${verdict.decision} the edited call (rule ${verdict.rule}); an edit never widens what the policy allows`);
  }
  const observed = observer.observed();
  return { arguments: args, fingerprint: callFingerprint(call.name, args), ...(observed !== undefined ? { observed } : {}) };
}

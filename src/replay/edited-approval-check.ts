import type { EventOf } from "../contracts/events.js";
import type { PolicySnapshot } from "../contracts/policy.js";
import { decideEdit } from "../core/approval-edit.js";
import type { SessionFold } from "../core/session-fold.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { gateNeedsHostCode } from "../tools/recorded-tool.js";
import type { ToolsAtPosition } from "./tools-in-force.js";

/** What replay finds of an approval with edited arguments: as logged, refused now (with why), or not judgeable without the host's code. */
export type EditedApprovalCheck = { kind: "as-logged" } | { kind: "differs"; path: string; expected: unknown; actual: unknown } | { kind: "host-code" };

/**
 * Judges a logged approval with edited arguments (docs/policy.md#edit-on-approval) again, on the
 * session as folded right before it: the same check the answer made — the recorded schema, the gate
 * on the edited call under the recorded (or what-if) policy and environment, never the machine — and
 * the fingerprint it binds. An answer is an input, but whether the edit was one the policy let
 * through is a decision replay can recompute, so a log that carries an edit the gate denies or
 * blocks is a divergence. A tool whose gate reads its shell text or path arguments through the
 * host's code, replayed from its recorded definition, cannot be judged (`host-code`).
 */
export function checkEditedApproval(
  event: EventOf<"turn.approval.granted">,
  fold: SessionFold,
  tools: ToolsAtPosition,
  options: { policy?: (recorded: PolicySnapshot) => PolicySnapshot; decisionsVersion?: number } = {},
): EditedApprovalCheck {
  const edited = event.data.arguments;
  const state = fold.state;
  const call = state.calls.get(event.data.callId);
  if (edited === undefined || call === undefined || state.policy === null) return { kind: "as-logged" };
  const tool = tools.registry.get(call.name);
  if (gateNeedsHostCode(tool)) return { kind: "host-code" };
  const judged = {
    ...state,
    policy: options.policy?.(state.policy) ?? state.policy,
    decisionsVersion: options.decisionsVersion ?? state.decisionsVersion,
  };
  try {
    const edit = decideEdit(call, edited, judged, tool !== undefined ? { tool } : {});
    const fingerprint = edit?.fingerprint ?? call.decision?.fingerprint;
    if (fingerprint !== event.data.fingerprint) return { kind: "differs", path: "data.fingerprint", expected: event.data.fingerprint, actual: fingerprint };
    return { kind: "as-logged" };
  } catch (error) {
    if (!SessionStateError.isInstance(error)) throw error;
    return { kind: "differs", path: "data.arguments", expected: edited, actual: `refused: ${error.message}` };
  }
}

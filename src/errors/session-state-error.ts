import { hasCode, TurnlogError } from "./turnlog-error.js";

/** An operation that the session's current state does not allow (e.g. approving a call that is not held). */
export class SessionStateError extends TurnlogError {
  readonly code = "TURNLOG_SESSION_STATE";

  static isInstance(value: unknown): value is SessionStateError {
    return hasCode(value, "TURNLOG_SESSION_STATE");
  }
}

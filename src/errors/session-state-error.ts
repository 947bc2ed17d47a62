import { hasCode, TurnlogError } from "./turnlog-error.js";

/** An operation that the session's current state does not allow (e.g. approving a call that is not held). */
export class SessionStateError extends TurnlogError {
  readonly code = "TURNLOG_SESSION_STATE";

  static isInstance(value: unknown): value is SessionStateError {
    return hasCode(value, "TURNLOG_SESSION_STATE");
  }
}

/** No session with that ID exists in the log. */
export class UnknownSessionError extends TurnlogError {
  readonly code = "TURNLOG_UNKNOWN_SESSION";

  constructor(readonly sessionId: string) {
    super(`no session "${sessionId}" in this log`);
  }

  static isInstance(value: unknown): value is UnknownSessionError {
    return hasCode(value, "TURNLOG_UNKNOWN_SESSION");
  }
}

import { hasCode, TurnlogError } from "./turnlog-error.js";

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

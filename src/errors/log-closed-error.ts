import { hasCode, TurnlogError } from "./turnlog-error.js";

/** An operation on a log that has been closed. */
export class LogClosedError extends TurnlogError {
  readonly code = "TURNLOG_LOG_CLOSED";

  constructor() {
    super("the event log is closed");
  }

  static isInstance(value: unknown): value is LogClosedError {
    return hasCode(value, "TURNLOG_LOG_CLOSED");
  }
}

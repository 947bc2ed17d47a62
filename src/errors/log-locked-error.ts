import { hasCode, TurnlogError } from "./turnlog-error.js";

/** A LevelDB log directory is already open in another process (or another handle in this one). */
export class LogLockedError extends TurnlogError {
  readonly code = "TURNLOG_LOG_LOCKED";

  constructor(
    readonly directory: string,
    options?: { cause?: unknown },
  ) {
    super(`log is locked by another process: ${directory}`, options);
  }

  static isInstance(value: unknown): value is LogLockedError {
    return hasCode(value, "TURNLOG_LOG_LOCKED");
  }
}

import { hasCode, TurnlogError } from "./turnlog-error.js";

/** A log directory holds no log: a reader never creates one (`openLog` without `create: true`). */
export class LogNotFoundError extends TurnlogError {
  readonly code = "TURNLOG_LOG_NOT_FOUND";

  constructor(readonly directory: string) {
    super(`no log at ${directory}`);
  }

  static isInstance(value: unknown): value is LogNotFoundError {
    return hasCode(value, "TURNLOG_LOG_NOT_FOUND");
  }
}
